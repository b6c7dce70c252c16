"""A profile job's page draws where one inference's time goes (a stacked bar per image format, a
table of the stages) and its cold starts beside its hot starts; it says why when a model has no
breakdown, and that a phone's client stages ran on the host."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import DeviceInfo
from devicelab.graph import GraphBuilder
from server.networks.services import model_graph
from server.profiling.services import claim_job, ingest_result
from tests.server.breakdown_factories import FRESH, result_with_breakdown, small_photos

pytestmark = pytest.mark.django_db


def _figure(html: str, element_id: str) -> dict[str, Any]:
    m = re.search(rf'id="{element_id}" data-figure><script type="application/json">(.*?)</script>', html, re.S)
    assert m, f"no figure {element_id}"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return small_photos(tmp_path_factory.mktemp("photos"))


def finished(job: Any, result: Any) -> Any:
    assert claim_job(job.pk, "run-1") is not None
    assert ingest_result(job.pk, "run-1", result) is not None
    return job


def test_the_breakdown_is_a_stacked_bar_per_image_format(
    make_member: Callable, web_client: Callable, make_job: Callable, photos: Any
) -> None:
    me = make_member()
    job = make_job(me.team)
    result = result_with_breakdown(model_graph(job.model), photos, cold_starts=FRESH)
    finished(job, result)
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()

    fig = _figure(html, "chart-breakdown")
    assert fig["layout"]["barmode"] == "stack"
    assert [t["name"] for t in fig["data"]] == [
        "image decode (host)",
        "resize + center crop (host)",
        "normalize (host)",
        "model load (device)",
        "inference (device)",
        "post-processing (host)",
    ]
    labels = fig["data"][0]["y"]
    assert labels[0].startswith("JPEG 320x240, ") and labels[1].startswith("PNG 320x240, ")
    assert all(t["orientation"] == "h" and t["y"] == labels for t in fig["data"])
    stored = result.breakdown.as_dict()
    for trace, stage in zip(fig["data"], stored["pipelines"][0]["stages"]):
        assert trace["x"][0] == pytest.approx(stage["central_ms"])
    assert fig["data"][3]["x"] == [22.0, 22.0]  # the median of the three fresh loads, in both pipelines

    table = re.search(r'<table class="table dense" id="breakdown-stages">(.*?)</table>', html, re.S)
    assert table and table.group(1).count("<tr>") == 1 + 6 + 1  # head, six stages, total
    assert 'id="breakdown-host-side"' not in html  # the CPU ran the client's stages itself


def test_cold_starts_are_drawn_beside_hot_starts(
    make_member: Callable, web_client: Callable, make_job: Callable, photos: Any
) -> None:
    me = make_member()
    job = make_job(me.team)
    finished(job, result_with_breakdown(model_graph(job.model), photos, cold_starts=FRESH))
    resp = web_client(me).get(f"/jobs/{job.pk}/")
    html = resp.content.decode()
    fig = _figure(html, "chart-cold-starts")
    boxes = {t["name"]: t["x"] for t in fig["data"]}
    assert boxes["cold start (load + first run)"] == [25.0, 30.0, 26.0]
    assert boxes["model load"] == [20.0, 24.0, 22.0] and boxes["first run"] == [5.0, 6.0, 4.0]
    assert boxes["hot start (warm run)"] == pytest.approx(job.result.samples_ms)
    assert fig["layout"]["xaxis"]["type"] == "log"
    cold_row = re.search(r"<td>Cold start \(load \+ first run\)</td>(.*?)</tr>", html, re.S)
    assert cold_row and "27.00" in cold_row.group(1) and ">3<" in cold_row.group(1)
    assert "3 cold starts, each in a fresh process" in html


def test_one_in_process_cold_start_asks_for_more(
    make_member: Callable, web_client: Callable, make_job: Callable, photos: Any
) -> None:
    me = make_member()
    job = make_job(me.team)
    finished(job, result_with_breakdown(model_graph(job.model), photos))
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert "One cold start, in the profiling process: ask for more with settings.cold_runs." in html
    assert [t["x"] for t in _figure(html, "chart-cold-starts")["data"]][0] == [15.75]


def test_a_model_without_an_image_says_why_and_draws_no_bar(
    make_member: Callable, web_client: Callable, make_network: Callable, make_job: Callable
) -> None:
    me = make_member()
    b = GraphBuilder("mlp", (1, 64))
    graph = b.build(b.fc(b.relu(b.fc(b.input, 32)), 10))
    job = make_job(me.team, model=make_network(me.team, graph))
    finished(job, result_with_breakdown(graph, []))
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="chart-breakdown"' not in html
    assert (
        "Not applicable: the model&#x27;s input &#x27;input&#x27; is [1, 64], not an N x 3 x H x W image batch." in html
    )


def test_a_phone_jobs_client_stages_are_labelled_host_side(
    make_member: Callable, web_client: Callable, make_job: Callable, photos: Any
) -> None:
    me = make_member()
    job = make_job(me.team)
    phone = DeviceInfo("android", "android:TEST", "Pixel", {})
    finished(job, result_with_breakdown(model_graph(job.model), photos, device=phone))
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    note = re.search(r'<p class="small" id="breakdown-host-side">(.*?)</p>', html, re.S)
    assert note and "not on the phone" in note.group(1)


def test_a_result_stored_before_breakdowns_says_not_measured(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team)  # ingested without a breakdown, as older workers did
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="breakdown-not-measured"' in html and 'id="chart-breakdown"' not in html
    assert 'id="chart-cold-starts"' in html


def test_a_phones_own_preparation_of_its_jpeg_is_a_device_stage_beside_the_pngs_host_stages(
    make_member: Callable, web_client: Callable, make_job: Callable, photos: Any
) -> None:
    from dataclasses import replace

    from devicelab.backends.android.backend import PHONE_PREPARATION_NOTE
    from devicelab.measure.breakdown import StageTiming
    from devicelab.measure.stats import from_aggregate

    me = make_member()
    job = make_job(me.team)
    phone = DeviceInfo("android", "android:TEST", "Pixel", {})
    result = result_with_breakdown(model_graph(job.model), photos, device=phone)
    assert result.breakdown is not None
    on_phone = StageTiming("preprocess", "device", from_aggregate(3, 61.5, 2.0), [], "the phone's tool")
    result = replace(
        result, breakdown=result.breakdown.with_device_preparation("jpeg", on_phone, PHONE_PREPARATION_NOTE)
    )
    finished(job, result)
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    fig = _figure(html, "chart-breakdown")
    traces = {t["name"]: t["x"] for t in fig["data"]}
    assert list(traces)[:4] == [
        "image decode (host)",
        "resize + center crop (host)",
        "normalize (host)",
        "decode + resize + crop + normalize (device)",
    ]
    assert traces["decode + resize + crop + normalize (device)"] == [61.5, 0.0]  # the JPEG's, on the phone
    assert traces["image decode (host)"][0] == 0.0 and traces["image decode (host)"][1] > 0  # the PNG's, on the host
    note = re.search(r'<p class="small" id="breakdown-host-side">(.*?)</p>', html, re.S)
    assert note and "measured on the phone" in note.group(1)
