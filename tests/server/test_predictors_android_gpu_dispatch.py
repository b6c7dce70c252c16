"""Issue 34 item 1 end to end: GPU jobs that LiteRT 2.x measured on a phone train a GPU predictor.

The phone is the adb double with a ``benchmark_model`` that times the GPU delegate per OpenCL
dispatch and prints no ``TfLiteGpuDelegateV2`` row (the layout that once gave "'conv2d' in 1
network" and a refused training). Each job goes through the services (submit, claim, ingest)
with the result the Android backend measured on that phone; the ordinary request / train path
then makes a ready predictor whose kernels were measured, and it answers."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.android import backend
from devicelab.backends.base import DeviceInfo, ProfileSettings
from devicelab.graph import Graph, graph_to_json, nas, zoo
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import Phone
from tests.adb_double.server import discovered_phone

pytestmark = pytest.mark.django_db

QUICK = {"delegate": "gpu", "runs": 5, "warmup_runs": 1, "cooldown_c": 90.0}


@pytest.fixture
def litert2_phone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[DeviceInfo]:
    """A phone on the adb double whose tool prints GPU dispatch rows; its DeviceInfo."""
    phone = Phone("PIXEL7-1")
    phone.time_scale = 0.001
    phone.cooling_time_scale = 50.0
    with discovered_phone(phone, benchmark_model_binary(gpu_rows="kernels"), tmp_path) as info:
        yield info


def _measure(team: Any, device: Any, info: DeviceInfo, graphs: list[Graph]) -> None:
    """Each graph as a GPU job, measured by the Android backend on the phone, through the services."""
    from server.networks.services import upload_model
    from server.profiling.services import claim_job, ingest_result, submit_profiling_job

    for g in graphs:
        model, _ = upload_model(team, None, graph_to_json(g).encode(), f"{g.name}.json", name=g.name)
        job = submit_profiling_job(team, model, device, dict(QUICK))
        token = f"phone-run-{job.pk}"
        assert claim_job(job.pk, token) is not None
        result = backend.profile(info, g, ProfileSettings.from_dict(job.settings), lambda f, m: None, None)
        assert not any(t.kernel == "TfLiteGpuDelegateV2" for t in result.ops)
        assert ingest_result(job.pk, token, result) is not None


def test_litert2_gpu_jobs_train_a_kernel_level_gpu_predictor_that_answers(
    member: Any, make_device: Any, litert2_phone: DeviceInfo
) -> None:
    from server.predictors.artifacts import load_row
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training

    info = litert2_phone
    assert info.capabilities is not None
    device = make_device("android", hardware=info.hardware, identity=info.identity, capabilities=info.capabilities)
    _measure(member.team, device, info, [*nas.sample("synthetic", 9, 5), zoo.build("mobilenet_v1_0.25")])

    row = request_predictor(member.team, device, method="lasso", search="fast", delegate="gpu")
    assert row.scenario["backend"] == "tflite_gpu"
    row = run_training(row.pk)
    assert row is not None and row.state == PredictorState.READY, row.failure_reason
    assert "kernel_latencies" not in row.meta  # measured kernels, not shares of a partition
    assert row.evaluation["kernel_mape"], row.evaluation  # so the kernel error is reported
    assert row.artifact["deducer"]["kind"] == "tflite_gpu"
    assert row.e2e_mape is not None and math.isfinite(row.e2e_mape)

    graphs = [zoo.build(n) for n in ("mobilenet_v1_0.5", "mobilenet_v1")]
    predicted = [p.latency_ms for p in load_row(row).predict(graphs)]
    assert all(math.isfinite(v) and v > 0 for v in predicted) and predicted[0] < predicted[1] / 2, predicted
