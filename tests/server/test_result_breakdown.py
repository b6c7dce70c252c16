"""A result's time breakdown and cold starts: stored by the ingest, shown by the job's API, and
settings.cold_runs checked at submission against what the device declared."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from devicelab.graph import GraphBuilder
from server.networks.services import model_graph
from server.profiling.models import JobResult
from server.profiling.services import claim_job, ingest_result
from tests.server.breakdown_factories import FRESH, result_with_breakdown, small_photos
from tests.server.factories import profile_result

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return small_photos(tmp_path_factory.mktemp("photos"))


def finished(job: Any, result: Any) -> JobResult:
    assert claim_job(job.pk, "run-1") is not None
    stored = ingest_result(job.pk, "run-1", result)
    assert stored is not None
    stored.refresh_from_db()
    return stored


def test_ingest_stores_the_breakdown_and_the_fresh_cold_starts(member: Any, make_job: Any, photos: Any) -> None:
    job = make_job(member.team)
    result = result_with_breakdown(model_graph(job.model), photos, cold_starts=FRESH)
    stored = finished(job, result)
    assert stored.time_breakdown == result.breakdown.as_dict()  # type: ignore[union-attr]
    assert stored.cold_starts["source"] == "fresh-process" and stored.cold_starts["n"] == 3
    assert stored.cold_starts["total_ms"]["mean"] == pytest.approx((25 + 30 + 26) / 3)
    assert (stored.load_ms, stored.first_run_ms) == (12.5, 3.25)  # the profile's own, in process, kept apart


def test_a_result_without_fresh_cold_starts_stores_its_own_as_one(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    stored = finished(job, profile_result(model_graph(job.model)))
    assert stored.cold_starts["source"] == "in-process" and stored.cold_starts["n"] == 1
    assert stored.cold_starts["total_ms"]["mean"] == 15.75 and stored.cold_starts["total_ms"]["std"] is None
    assert stored.time_breakdown == {}  # not measured


def test_the_job_api_shows_breakdown_and_cold_starts(api: Any, member: Any, make_job: Any, photos: Any) -> None:
    job = make_job(member.team)
    finished(job, result_with_breakdown(model_graph(job.model), photos, cold_starts=FRESH))
    body = api.get(f"/api/jobs/{job.pk}/").json()["result"]
    cold = body["cold_starts"]
    assert (cold["source"], cold["n"], len(cold["samples"])) == ("fresh-process", 3, 3)
    assert cold["samples"][0] == {"load_ms": 20.0, "first_run_ms": 5.0, "total_ms": 25.0, "import_ms": 250.0}
    assert cold["load_ms"]["mean"] == 22.0 and cold["total_ms"]["std"] > 0
    assert body["cold"] == {"load_ms": 12.5, "first_run_ms": 3.25}
    bd = body["time_breakdown"]
    assert bd["applicable"] and bd["input"]["shape"] == [1, 3, 16, 16] and bd["host_side"] is False
    jpeg = bd["pipelines"][0]
    assert jpeg["image"]["format"] == "jpeg" and jpeg["image"]["width"] == 320
    names = [s["name"] for s in jpeg["stages"]]
    assert names == ["decode", "resize_crop", "normalize", "model_load", "inference", "postprocess"]
    load = jpeg["stages"][3]
    assert load["samples_ms"] == [20.0, 24.0, 22.0] and load["where"] == "device"
    assert jpeg["total_ms"] == pytest.approx(sum(s["central_ms"] for s in jpeg["stages"]))


def test_an_older_result_shows_its_one_cold_start_and_no_breakdown(api: Any, member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    stored = finished(job, profile_result(model_graph(job.model)))
    JobResult.objects.filter(pk=stored.pk).update(cold_starts={}, time_breakdown={})  # as stored before them
    body = api.get(f"/api/jobs/{job.pk}/").json()["result"]
    assert body["time_breakdown"] is None
    assert body["cold_starts"]["source"] == "in-process"
    assert body["cold_starts"]["samples"] == [
        {"load_ms": 12.5, "first_run_ms": 3.25, "total_ms": 15.75, "import_ms": None}
    ]


def test_a_model_that_takes_no_image_shows_why(api: Any, member: Any, make_network: Any, make_job: Any) -> None:
    b = GraphBuilder("mlp", (1, 64))
    graph = b.build(b.fc(b.relu(b.fc(b.input, 32)), 10))
    job = make_job(member.team, model=make_network(member.team, graph))
    finished(job, result_with_breakdown(graph, []))
    bd = api.get(f"/api/jobs/{job.pk}/").json()["result"]["time_breakdown"]
    assert bd == {
        "applicable": False,
        "reason": "the model's input 'input' is [1, 64], not an N x 3 x H x W image batch",
    }


def test_cold_runs_is_checked_at_submission(api: Any, member: Any, make_network: Any, make_device: Any) -> None:
    model = make_network(member.team)
    can = make_device(capabilities=Capabilities(max_threads=2, max_cold_runs=50, formats=("onnx",)))
    cannot = make_device(capabilities=Capabilities(max_threads=2, formats=("onnx",)))

    def submit(device: Any, settings: dict[str, Any]) -> Any:
        return api.post("/api/jobs/", {"model": model.pk, "device": device.pk, "settings": settings}, format="json")

    ok = submit(can, {"cold_runs": 10})
    assert ok.status_code == 201, ok.json()
    assert ok.json()["settings"]["cold_runs"] == 10
    refused = submit(cannot, {"cold_runs": 2})
    assert refused.status_code == 400
    assert "settings.cold_runs: 2 is more than this device's 1" in str(refused.json())
    for bad, words in ((0, "between 1 and 50, got 0"), (51, "between 1 and 50, got 51"), ("3", "integer")):
        r = submit(can, {"cold_runs": bad})
        assert r.status_code == 400 and "settings.cold_runs" in str(r.json()) and words in str(r.json()), r.json()
