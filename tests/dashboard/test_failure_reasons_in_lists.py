"""Failure reasons in the dashboard's lists show their cause: a reason is shown whole when it is
short, else its start and its end (where the cause is), wrapped, with the whole in a title."""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from typing import Any

import pytest

from dashboard.formatting import REASON_CHARS, reason
from server.predictors.models import PredictorState
from server.profiling.services import claim_job, fail_job
from tests.dashboard.predictor_factories import make_predictor

CAUSE = "onnxruntime: [ONNXRuntimeError] INVALID_GRAPH: node /backbone/stage3/Conv has 5 inputs, Conv takes 2 or 3"
LONG = (
    "job failed on device 'lab-cpu-7' (#7, cpu, Intel Xeon Gold 6230R) after loading the model file "
    "mobilenet_v2_quant.onnx (3.4 MiB) with settings threads=4, cores=0-3, precision=fp32, runs=30: " + CAUSE
)


def test_reason_keeps_a_short_reason_whole_and_a_long_ones_start_and_cause() -> None:
    assert reason("device offline") == "device offline"
    assert reason("  two\n lines ") == "two lines"
    assert reason(None) == ""
    short = reason(LONG)
    assert len(LONG) > REASON_CHARS and len(short) <= REASON_CHARS
    assert short.startswith("job failed on device 'lab-cpu-7'") and short.endswith(CAUSE) and " … " in short


def _reason_cell(page: str) -> tuple[str, str]:
    m = re.search(r'<div class="muted small reason" title="([^"]*)">(.*?)</div>', page, re.S)
    assert m, "no failure reason in the list"
    return html_lib.unescape(m.group(1)), html_lib.unescape(m.group(2))


@pytest.mark.django_db
def test_job_lists_show_the_cause_of_a_long_failure_reason(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = make_job(me.team)
    assert claim_job(job.pk, "run-1") is not None and fail_job(job.pk, "run-1", LONG)
    client = web_client(me)
    for url in ("/jobs/", "/", f"/devices/{job.device_id}/", f"/models/{job.model_id}/"):
        title, shown = _reason_cell(client.get(url).content.decode())
        assert title == LONG, url
        assert shown.endswith(CAUSE), (url, shown)


@pytest.mark.django_db
def test_a_short_failure_reason_is_listed_whole(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = make_job(me.team)
    text = "benchmark_model exited with status 134 after 12 s: Aborted (core dumped) in the GPU delegate"
    assert claim_job(job.pk, "run-1") is not None and fail_job(job.pk, "run-1", text)
    assert _reason_cell(web_client(me).get("/jobs/").content.decode()) == (text, text)


@pytest.mark.django_db
def test_the_predictors_list_shows_the_cause_of_a_failed_training(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    me = make_member()
    why = "training on " + ", ".join(f"net-{i}" for i in range(40)) + ": too few networks with a grouped_conv2d (1 < 5)"
    make_predictor(make_device(), me.team, "mlp", state=PredictorState.FAILED, failure_reason=why)
    title, shown = _reason_cell(web_client(me).get("/predictors/").content.decode())
    assert title == why and shown.endswith("too few networks with a grouped_conv2d (1 < 5)")
