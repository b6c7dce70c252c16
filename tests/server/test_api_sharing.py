"""Sharing sweeps through the API, without a worker: submit (and be refused, naming the field),
scope to the team, read a sweep's summary (table 1, the largest R, the ceiling, what the time
budget left out) and its rows (filtered, paginated), cancel through the jobs endpoint, and find
sweeps in the jobs list by kind.

Results are stored as a worker stores them (claim, then ``ingest_sharing``) from a sweep built
with devicelab's own dataclasses (tests/server/sharing_api_factories.py)."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.tenancy.spec import STRATEGIES, SharingSpec
from server.devices.models import Device, DeviceStatus
from server.profiling.models import JobKind, ProfilingJob
from server.tenancy.models import SharingSweepResult
from server.tenancy.services import time_limit_budget
from tests.server.sharing_api_factories import NETWORK, SHAPE_NAME, finish_sharing, sharing_result

pytestmark = pytest.mark.django_db

SMALL_SPEC = {"shapes": [[64, 8, 64]], "tenants": [1, 2], "strategies": ["space_only", "space_time"], "runs": 3}
ROW_FIELDS = {
    "id",
    "workload",
    "workload_kind",
    "tenants",
    "strategy",
    "status",
    "of_ceiling",
    "throughput_gflops",
    "throughput_per_s",
    "latency_p50_ms",
    "latency_p99_ms",
    "straggler_gap_ms",
    "straggler_gap_ratio",
    "memory_bytes",
    "correct",
    "error",
}


@pytest.fixture
def gpu(make_device: Any) -> Any:
    """An online OpenCL device."""
    return make_device("opencl")


def _sweep(api: Any, device: Any, **body: Any) -> Any:
    return api.post("/api/sharing/sweeps/", {"device": device.pk, **body}, format="json")


def _queued(api: Any, device: Any, **body: Any) -> ProfilingJob:
    response = _sweep(api, device, spec=SMALL_SPEC, **body)
    assert response.status_code == 201, response.content
    return ProfilingJob.objects.get(pk=response.json()["id"])


@pytest.fixture
def finished(api: Any, gpu: Any) -> ProfilingJob:
    """A succeeded sweep of the team: 28 rows (see the factories)."""
    job = _queued(api, gpu)
    finish_sharing(job)
    return job


def test_a_sweep_is_queued_with_its_complete_spec_and_links(
    api: Any, gpu: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _sweep(api, gpu, spec={**SMALL_SPEC, "networks": ["resnet18"]}, time_budget_s=120)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["kind"], body["state"], body["progress"], body["result"]) == ("sharing_sweep", "queued", 0.0, None)
    assert body["device"] == gpu.pk and body["device_name"] == gpu.name
    assert body["title"] == "sharing sweep of 1 shape, 1 network"
    spec = body["settings"]["spec"]
    assert spec["shapes"] == [[64, 8, 64]] and spec["networks"] == ["resnet18"] and spec["tenants"] == [1, 2]
    assert spec["strategies"] == ["space_only", "space_time"] and spec["runs"] == 3
    assert (spec["warmup"], spec["seed"], spec["memory_cap_bytes"], spec["ceiling"]) == (3, 0, None, True)  # defaults
    assert body["settings"]["time_budget_s"] == 120.0
    links = body["links"]
    assert links["self"].endswith(f"/api/sharing/sweeps/{body['id']}/")
    assert links["rows"].endswith(f"/api/sharing/sweeps/{body['id']}/rows/")
    assert links["cancel"].endswith(f"/api/jobs/{body['id']}/cancel/") and links["job"].endswith(
        f"/api/jobs/{body['id']}/"
    )
    assert len(callbacks) == 1  # handed to the broker once the row is committed
    job = ProfilingJob.objects.get(pk=body["id"])
    assert job.kind == JobKind.SHARING_SWEEP and job.model is None


def test_without_a_spec_a_sweep_is_the_papers(api: Any, gpu: Any) -> None:
    response = _sweep(api, gpu)
    assert response.status_code == 201, response.content
    settings = response.json()["settings"]
    assert settings == {"spec": SharingSpec().as_dict(), "time_budget_s": time_limit_budget()}
    assert settings["spec"]["shapes"] == [[512, 1, 512], [256, 128, 1152], [256, 256, 256]]
    assert "space_time_clblast" not in settings["spec"]["strategies"]
    nulls = _sweep(api, gpu, spec={"memory_cap_bytes": None, "shapes": [], "networks": ["mobilenet_v2"]})
    assert nulls.status_code == 201, nulls.content
    assert nulls.json()["title"] == "sharing sweep of 1 network"


@pytest.mark.parametrize(
    "body,key,message",
    [
        ({"spek": {}}, "non_field_errors", "unknown key(s) ['spek']"),
        ({"spec": []}, "spec", "spec: must be a JSON object, got list"),
        ({"spec": {"turbo": 1}}, "spec", "spec: unknown key(s) ['turbo']"),
        ({"spec": {"tenants": [0, 2]}}, "spec", "spec.tenants[0] must be between 1 and 4096, got 0"),
        ({"spec": {"tenants": [2, 4, 2]}}, "spec", "spec.tenants lists 2 twice"),
        ({"spec": {"tenants": ["4"]}}, "spec", "spec.tenants[0] must be an integer, got '4'"),
        ({"spec": {"tenants": []}}, "spec", "spec.tenants must have at least 1 item(s)"),
        ({"spec": {"tenants": None}}, "spec", "spec.tenants must be a list, got None"),
        ({"spec": {"shapes": [None]}}, "spec", "spec.shapes[0] must be a list, got None"),
        ({"spec": {"shapes": [[256, 128]]}}, "spec", "spec.shapes[0] must have 3 items, got 2"),
        ({"spec": {"shapes": [[1, 1, 1, 1]]}}, "spec", "spec.shapes[0] must have 3 items, got 4"),
        ({"spec": {"shapes": "256x128x1152"}}, "spec", "spec.shapes must be a list, got '256x128x1152'"),
        ({"spec": {"shapes": [[8, 8, 8], [8, 8, 8]]}}, "spec", "spec.shapes lists [8, 8, 8] twice"),
        ({"spec": {"shapes": [[8, 0, 8]]}}, "spec", "spec.shapes[0][1] must be between 1 and 8192, got 0"),
        ({"spec": {"shapes": [[8, 8, 9000]]}}, "spec", "spec.shapes[0][2] must be between 1 and 8192, got 9000"),
        ({"spec": {"networks": ["resnet9000"]}}, "spec", "spec.networks[0] is not a zoo model, got 'resnet9000'"),
        (
            {"spec": {"strategies": ["space_time", "telepathy"]}},
            "spec",
            "spec.strategies[1] 'telepathy' is not one of exclusive",
        ),
        ({"spec": {"runs": 0}}, "spec", "spec.runs must be between 1 and 10000, got 0"),
        ({"spec": {"warmup": -1}}, "spec", "spec.warmup must be between 0 and 1000, got -1"),
        ({"spec": {"seed": -1}}, "spec", "spec.seed must be between 0 and"),
        ({"spec": {"memory_cap_bytes": 0}}, "spec", "spec.memory_cap_bytes must be between 1 and"),
        ({"spec": {"ceiling": "yes"}}, "spec", "spec.ceiling must be true or false, got 'yes'"),
        ({"spec": {"shapes": [], "networks": []}}, "spec", "needs at least one SGEMM shape or network"),
        ({"time_budget_s": 10**9}, "time_budget_s", "time_budget_s must be <= "),
        ({"time_budget_s": True}, "time_budget_s", "time_budget_s must be a number, got True"),
        ({"time_budget_s": 0}, "time_budget_s", "time_budget_s must be >= 1.0, got 0"),
        ({"spec": {"runs": 0, "seed": -1}}, "spec", "spec.seed must be between 0 and"),  # every bad key named
    ],
)
def test_a_bad_sweep_request_is_a_400_naming_the_field(
    api: Any, gpu: Any, body: dict[str, Any], key: str, message: str
) -> None:
    response = _sweep(api, gpu, **body)
    assert response.status_code == 400, response.content
    errors = response.json()
    assert list(errors) == [key], errors
    assert any(message in m for m in errors[key]), errors
    assert not ProfilingJob.objects.exists()


def test_the_time_budgets_bound_is_the_services(api: Any, gpu: Any, settings: Any) -> None:
    settings.LATENCYLAB_TASK_TIME_LIMIT = 400  # less than twice the margin: half the limit
    assert time_limit_budget() == 200.0
    over = _sweep(api, gpu, time_budget_s=201)
    assert over.status_code == 400 and "time_budget_s must be <= 200.0, got 201" in over.json()["time_budget_s"][0]
    assert _sweep(api, gpu, spec=SMALL_SPEC, time_budget_s=200).status_code == 201


def test_a_sweep_needs_an_online_opencl_device(api: Any, gpu: Any, make_device: Any) -> None:
    cpu = make_device("cpu")
    refused = _sweep(api, cpu)
    assert refused.status_code == 400 and "sharing sweeps run on OpenCL devices" in refused.json()["device"][0]
    Device.objects.filter(pk=gpu.pk).update(status=DeviceStatus.OFFLINE)
    offline = _sweep(api, gpu)
    assert offline.status_code == 400 and list(offline.json()) == ["device"]
    missing = api.post("/api/sharing/sweeps/", {"device": 999999}, format="json")
    assert missing.status_code == 400 and "there is no device #999999" in missing.json()["device"][0]
    no_device = api.post("/api/sharing/sweeps/", {}, format="json")
    assert no_device.status_code == 400 and list(no_device.json()) == ["device"]
    form = api.post("/api/sharing/sweeps/", {"device": gpu.pk}, format="multipart")
    assert form.status_code == 415
    assert not ProfilingJob.objects.exists()


def test_sweeps_are_the_teams_own(api: Any, make_member: Any, client_for: Any, finished: ProfilingJob) -> None:
    stranger = client_for(make_member())
    assert stranger.get("/api/sharing/sweeps/").json()["count"] == 0
    assert stranger.get(f"/api/sharing/sweeps/{finished.pk}/").status_code == 404
    assert stranger.get(f"/api/sharing/sweeps/{finished.pk}/rows/").status_code == 404
    assert stranger.post(f"/api/jobs/{finished.pk}/cancel/").status_code == 404
    assert api.get(f"/api/sharing/sweeps/{finished.pk}/").status_code == 200


def test_the_list_is_newest_first_and_holds_sharing_sweeps_only(api: Any, gpu: Any, member: Any, make_job: Any) -> None:
    first, second = _queued(api, gpu), _queued(api, gpu)
    make_job(member.team)  # a profiling job of the team
    fusion = api.post("/api/fusion/sweeps/", {"device": gpu.pk, "zoo": ["mobilenet_v2_0.5"]}, format="json").json()
    page = api.get("/api/sharing/sweeps/").json()
    assert [s["id"] for s in page["results"]] == [second.pk, first.pk]
    assert {s["kind"] for s in page["results"]} == {"sharing_sweep"} and "result" not in page["results"][0]
    assert api.get(f"/api/sharing/sweeps/{fusion['id']}/").status_code == 404  # a fusion sweep is not one
    assert api.get("/api/sharing/sweeps/?state=succeeded").json()["count"] == 0
    assert api.get(f"/api/sharing/sweeps/?device={gpu.pk}&state=queued").json()["count"] == 2
    bad = api.get("/api/sharing/sweeps/", {"state": "done"})
    assert bad.status_code == 400 and "unknown state 'done'" in bad.json()["state"][0]


def test_a_finished_sweep_shows_its_summary_table_1_and_row_counts(api: Any, finished: ProfilingJob) -> None:
    body = api.get(f"/api/sharing/sweeps/{finished.pk}/").json()
    assert body["state"] == "succeeded" and body["progress"] == 1.0
    result = body["result"]
    expected = sharing_result()
    assert result["device_name"] == "Test GPU" and result["device"]["compute_units"] == 2
    assert result["workloads"] == [SHAPE_NAME, NETWORK] and result["spec"] == expected["spec"]
    assert result["ceiling"]["shapes"][SHAPE_NAME]["best_gflops"] == pytest.approx(180.0)
    assert result["table1"] == expected["table1"]
    (gemm, network) = result["table1"]
    assert gemm["workload"]["name"] == SHAPE_NAME and gemm["next_best"] == "space_only"
    assert gemm["speedup_geomean"] == pytest.approx(1.5) and [p["tenants"] for p in gemm["per_tenants"]] == [2, 4, 8]
    assert [p["tenants"] for p in network["per_tenants"]] == [2]  # R = 4 memory-bound, R = 8 not measured
    largest = {(e["workload"], e["strategy"]): e for e in result["largest_tenants"]}
    assert largest[(NETWORK, "space_time")]["smallest_memory_bound"] == 4
    assert largest[(NETWORK, "space_time")]["largest_that_fits"] == 3
    assert largest[(SHAPE_NAME, "space_time")]["largest_measured"] == 8
    assert result["complete"] is False and result["not_measured"] == [{"workload": NETWORK, "tenants": 8}]
    assert result["notes"] == expected["notes"] and result["time_budget_s"] == 60.0 and result["elapsed_s"] == 42.5
    assert result["environment"]["pyopencl"] == "2025.1"
    assert result["row_counts"] == {
        "total": 28,
        "ok": 26,
        "memory_bound": 1,
        "unsupported": 0,
        "error": 1,
        "correct": 25,
        "incorrect": 1,
        "unchecked": 0,
    }


def test_rows_are_paginated_without_their_data_unless_asked(api: Any, finished: ProfilingJob) -> None:
    url = f"/api/sharing/sweeps/{finished.pk}/rows/"
    page = api.get(url, {"page_size": 5}).json()
    assert page["count"] == 28 and len(page["results"]) == 5 and page["next"] and page["previous"] is None
    first = page["results"][0]
    assert set(first) == ROW_FIELDS
    assert (first["workload"], first["workload_kind"], first["tenants"], first["strategy"]) == (
        SHAPE_NAME,
        "sgemm",
        1,
        "exclusive",
    )
    assert first["status"] == "ok" and first["correct"] is True and first["error"] == ""
    # 2 * 256 * 128 * 1152 FLOPs in a median makespan of 0.408 ms
    assert first["throughput_gflops"] == pytest.approx(75_497_472 / 0.408e-3 / 1e9)
    assert first["throughput_per_s"] == pytest.approx(1 / 0.408e-3)
    assert first["latency_p50_ms"] == pytest.approx(0.408) and first["straggler_gap_ms"] == 0.0
    assert first["memory_bytes"] == 1_400_000
    # its GFLOP/s (189, 185, 181 by round) over numpy's ceiling (150, 180, 120) paired by round, without ?detail=true
    ceiling = first["of_ceiling"]
    assert (
        ceiling["rounds"] == 3
        and ceiling["verdict"] == "above"
        and ceiling["low"] <= ceiling["ratio"] <= ceiling["high"]
    )
    assert ceiling["ratio"] == pytest.approx(75_497_472 / 0.408e-3 / 1e9 / 150.0, rel=0.05)
    seen = [r["id"] for p in range(1, 7) for r in api.get(url, {"page_size": 5, "page": p}).json()["results"]]
    assert len(seen) == len(set(seen)) == 28
    assert api.get(url, {"page_size": 5, "page": 7}).status_code == 404

    everything = api.get(url, {"page_size": 500}).json()["results"]
    order = [(r["workload"], r["tenants"], r["strategy"]) for r in everything]
    assert order[:4] == [(SHAPE_NAME, 1, s) for s in ("exclusive", "time_only", "space_only", "space_time")]
    assert order[-1] == (NETWORK, 4, "space_time")  # in the order they were measured

    detailed = api.get(url, {"detail": "true", "page_size": 1, "page": 7}).json()["results"][0]
    data = detailed["data"]
    assert (detailed["tenants"], detailed["strategy"]) == (2, "space_only")
    assert len(data["makespan_ms"]["samples"]) == 3 and len(data["latency_ms"]["per_tenant"]) == 2
    assert data["straggler"]["gap_ms"] == pytest.approx(detailed["straggler_gap_ms"])
    assert data["checks"]["correct"] is True and data["memory"]["largest_tenants_that_fit"] == 17


def _cells(api: Any, job: ProfilingJob, **params: Any) -> list[tuple[str, int, str, str]]:
    response = api.get(f"/api/sharing/sweeps/{job.pk}/rows/", {"page_size": 500, **params})
    assert response.status_code == 200, response.content
    return [(r["workload"], r["tenants"], r["strategy"], r["status"]) for r in response.json()["results"]]


def test_rows_filter_by_workload_strategy_tenants_and_status(api: Any, finished: ProfilingJob) -> None:
    assert len(_cells(api, finished, workload=SHAPE_NAME)) == 16 and len(_cells(api, finished, workload=NETWORK)) == 12
    assert _cells(api, finished, workload="mobilenet_v2") == []
    assert [c[1] for c in _cells(api, finished, strategy="space_time")] == [1, 2, 4, 8, 1, 2, 4]
    assert _cells(api, finished, workload=NETWORK, tenants=4) == [
        (NETWORK, 4, "exclusive", "ok"),
        (NETWORK, 4, "time_only", "ok"),
        (NETWORK, 4, "space_only", "error"),
        (NETWORK, 4, "space_time", "memory_bound"),
    ]
    assert _cells(api, finished, status="memory_bound") == [(NETWORK, 4, "space_time", "memory_bound")]
    assert _cells(api, finished, status="unsupported") == []
    assert _cells(api, finished, workload=SHAPE_NAME, tenants=8, strategy="time_only") == [
        (SHAPE_NAME, 8, "time_only", "ok")
    ]
    wrong = api.get(f"/api/sharing/sweeps/{finished.pk}/rows/", {"tenants": 8, "strategy": "time_only"}).json()
    assert wrong["results"][0]["correct"] is False
    failed = api.get(f"/api/sharing/sweeps/{finished.pk}/rows/", {"status": "error"}).json()["results"][0]
    assert "OUT_OF_RESOURCES" in failed["error"] and failed["throughput_gflops"] is None and failed["correct"] is None
    assert len(_cells(api, finished, workload="", strategy="", tenants="", status="")) == 28  # empty: no filter


@pytest.mark.parametrize(
    "params,key,words",
    [
        ({"workload": "256 x 128"}, "workload", ["workload must be a shape MxNxK or a network's name"]),
        ({"workload": "a\x00b"}, "workload", ["workload must be a shape MxNxK"]),
        ({"strategy": "fastest"}, "strategy", ["unknown strategy 'fastest'", str(list(STRATEGIES))[1:20]]),
        ({"tenants": "0"}, "tenants", ["tenants must be an integer 1 .. 4096, got '0'"]),
        ({"tenants": "5000"}, "tenants", ["tenants must be an integer 1 .. 4096"]),
        ({"tenants": "two"}, "tenants", ["tenants must be an integer 1 .. 4096"]),
        ({"status": "done"}, "status", ["unknown status 'done'", "'memory_bound'"]),
    ],
)
def test_a_bad_row_filter_is_a_400_naming_it(
    api: Any, finished: ProfilingJob, params: dict[str, str], key: str, words: list[str]
) -> None:
    response = api.get(f"/api/sharing/sweeps/{finished.pk}/rows/", params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body) == [key]
    for word in words:
        assert word in body[key][0], body


def test_a_bad_detail_parameter_and_a_repeated_filter_are_400s(api: Any, finished: ProfilingJob) -> None:
    url = f"/api/sharing/sweeps/{finished.pk}/rows/"
    response = api.get(url, {"detail": "yes"})
    assert response.status_code == 400
    assert response.json() == {"detail": "detail must be true or false, got 'yes'"}
    twice = api.get(f"{url}?tenants=1&tenants=2")
    assert twice.status_code == 400 and twice.json() == {"tenants": ["tenants is given 2 times; give it once"]}


def test_a_queued_sweep_has_no_rows_yet_and_cancels_through_the_jobs_endpoint(api: Any, gpu: Any) -> None:
    job = _queued(api, gpu)
    rows = api.get(f"/api/sharing/sweeps/{job.pk}/rows/").json()
    assert rows["count"] == 0 and rows["results"] == []
    cancelled = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["state"] == "cancelled" and cancelled.json()["kind"] == "sharing_sweep"
    detail = api.get(f"/api/sharing/sweeps/{job.pk}/").json()
    assert detail["state"] == "cancelled" and detail["finished_at"] and detail["result"] is None
    again = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]
    assert not SharingSweepResult.objects.filter(job=job).exists()
    Device.objects.get(pk=gpu.pk)  # the device was released, not removed
    assert Device.objects.get(pk=gpu.pk).status == DeviceStatus.ONLINE


def test_the_jobs_list_finds_sharing_sweeps_by_kind(
    api: Any, member: Any, make_job: Any, finished: ProfilingJob
) -> None:
    profile = make_job(member.team)
    only = api.get("/api/jobs/", {"kind": "sharing_sweep"}).json()["results"]
    assert [j["id"] for j in only] == [finished.pk]
    assert only[0]["model"] is None and only[0]["model_name"] is None
    assert [j["id"] for j in api.get("/api/jobs/", {"kind": "profile"}).json()["results"]] == [profile.pk]
    detail = api.get(f"/api/jobs/{finished.pk}/").json()  # a job without a model or a profile result
    assert detail["kind"] == "sharing_sweep" and detail["model"] is None and detail["result"] is None
