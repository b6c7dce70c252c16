"""Fusion sweeps and plans through the API, without a worker: submit (and be refused, naming the
field), scope to the team, read a sweep's summary and its rows (filtered, paginated), a plan's
comparison, cancel through the jobs endpoint, and find them in the jobs list by kind.

Results are stored as a worker stores them (claim, then ``ingest_sweep`` / ``ingest_plan``) from
a sweep built with devicelab's own dataclasses (tests/server/fusion_api_factories.py)."""

from __future__ import annotations

import statistics
from typing import Any

import pytest

from devicelab.fusion.spec import KINDS, PlanOptions
from server.devices.models import Device, DeviceStatus
from server.fusion.models import FusionSweepResult
from server.profiling.models import JobKind, ProfilingJob
from tests.server.fusion_api_factories import finish_plan, finish_sweep, sweep_result

pytestmark = pytest.mark.django_db

SMALL_SPEC = {"sizes": [2], "kinds": ["C_1x1", "DWC_s1", "EW"], "runs": 3, "warmup": 1, "identical_counts": [1, 2]}


@pytest.fixture
def gpu(make_device: Any) -> Any:
    """An online OpenCL device."""
    return make_device("opencl")


def _sweep(api: Any, device: Any, **body: Any) -> Any:
    return api.post("/api/fusion/sweeps/", {"device": device.pk, **body}, format="json")


def _queued_sweep(api: Any, device: Any, **body: Any) -> ProfilingJob:
    response = _sweep(api, device, zoo=["mobilenet_v2_0.5"], spec=SMALL_SPEC, **body)
    assert response.status_code == 201, response.content
    return ProfilingJob.objects.get(pk=response.json()["id"])


@pytest.fixture
def finished(api: Any, gpu: Any) -> ProfilingJob:
    """A succeeded sweep of the team: 16 rows, 2 refused, 1 wrong (see the factories)."""
    job = _queued_sweep(api, gpu)
    finish_sweep(job)
    return job


def test_a_sweep_is_queued_with_its_complete_spec_and_links(
    api: Any, gpu: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _sweep(api, gpu, zoo=["mobilenet_v2_0.5"], models=[], spec=SMALL_SPEC)
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["kind"], body["state"], body["progress"], body["result"]) == ("fusion_sweep", "queued", 0.0, None)
    assert body["device"] == gpu.pk and body["device_name"] == gpu.name
    assert body["title"] == "fusion sweep of 1 network"
    settings = body["settings"]
    assert settings["zoo"] == ["mobilenet_v2_0.5"] and settings["models"] == [] and settings["precision"] == "fp32"
    spec = settings["spec"]
    assert spec["sizes"] == [2] and spec["kinds"] == ["C_1x1", "DWC_s1", "EW"] and spec["runs"] == 3
    assert spec["rounding"] == [True, False] and spec["representatives"] == 3  # defaults filled in
    assert spec["time_budget_s"] > 0  # capped below the task's time limit
    links = body["links"]
    assert links["self"].endswith(f"/api/fusion/sweeps/{body['id']}/")
    assert links["rows"].endswith(f"/api/fusion/sweeps/{body['id']}/rows/")
    assert links["cancel"].endswith(f"/api/jobs/{body['id']}/cancel/") and links["job"].endswith(
        f"/api/jobs/{body['id']}/"
    )
    assert len(callbacks) == 1  # handed to the broker once the row is committed
    job = ProfilingJob.objects.get(pk=body["id"])
    assert job.kind == JobKind.FUSION_SWEEP and job.model is None


def test_without_networks_a_sweep_takes_the_six_table_1_networks(api: Any, gpu: Any) -> None:
    response = _sweep(api, gpu)
    assert response.status_code == 201, response.content
    assert response.json()["settings"]["zoo"] == sorted(
        ["mobilenet_v1", "mobilenet_v2", "squeezenet_1_0", "inception_v3", "resnet_v2_50", "deeplab_v3_mnv2"]
    )


def test_a_sweep_takes_the_teams_models_by_id(api: Any, gpu: Any, member: Any, make_network: Any) -> None:
    model = make_network(member.team)
    response = _sweep(api, gpu, models=[model.pk], spec=SMALL_SPEC)
    assert response.status_code == 201, response.content
    settings = response.json()["settings"]
    assert settings["models"] == [model.pk] and settings["model_names"] == [model.name] and settings["zoo"] == []


@pytest.mark.parametrize(
    "body,key,message",
    [
        ({"spek": {}}, "non_field_errors", "unknown key(s) ['spek']"),
        ({"zoo": ["mobilenet_v2", "resnet9000"]}, "zoo", "zoo[1] is not a zoo model, got 'resnet9000'"),
        ({"zoo": "mobilenet_v2"}, "zoo", "zoo must be a list, got str"),
        ({"zoo": [], "models": []}, "zoo", "name at least one network"),
        ({"zoo": ["mobilenet_v2"] * 13}, "zoo", "zoo must have at most 12 items"),
        ({"models": [999999]}, "models", "there is no model [999999] in team"),
        ({"models": ["1"]}, "models", "models[0] must be an integer, got '1'"),
        ({"precision": "int8"}, "precision", "'int8' is not one of ['fp32', 'fp16']"),
        ({"spec": []}, "spec", "spec: must be a JSON object, got list"),
        ({"spec": {"turbo": 1}}, "spec", "spec: unknown key(s) ['turbo']"),
        ({"spec": {"runs": "30"}}, "spec", "spec.runs must be an integer, got '30'"),
        ({"spec": {"runs": 0}}, "spec", "spec.runs must be between 1 and"),
        ({"spec": {"sizes": [2, 9]}}, "spec", "spec.sizes[1] must be between 1 and 8, got 9"),
        ({"spec": {"sizes": [], "identical_counts": []}}, "spec", "spec: a sweep measures combinations (sizes) or"),
        ({"spec": {"kinds": []}}, "spec", "spec.kinds must have at least 1 item(s)"),
        ({"spec": {"kinds": ["C", "Q"]}}, "spec", "spec.kinds[1] 'Q' is not one of C, C_1x1, S, P, DWC"),
        ({"spec": {"rounding": [True, True]}}, "spec", "spec.rounding lists True twice"),
        ({"spec": {"identical_counts": [1, 1]}}, "spec", "spec.identical_counts lists 1 twice"),
        ({"spec": {"time_budget_s": True}}, "spec", "spec.time_budget_s must be a number, got True"),
        ({"spec": {"time_budget_s": 10**9}}, "spec", "spec.time_budget_s must be <= "),
        ({"spec": {"max_combinations": 0}}, "spec", "spec.max_combinations must be between 1 and"),
        ({"spec": {"layouts": ["diagonal"]}}, "spec", "spec.layouts[0] 'diagonal' is not one of auto, packed, paper"),
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


def test_a_sweep_needs_an_online_opencl_device(api: Any, gpu: Any, make_device: Any) -> None:
    cpu = make_device("cpu")
    refused = _sweep(api, cpu)
    assert refused.status_code == 400 and "fusion runs on OpenCL devices" in refused.json()["device"][0]
    Device.objects.filter(pk=gpu.pk).update(status=DeviceStatus.OFFLINE)
    offline = _sweep(api, gpu)
    assert offline.status_code == 400 and list(offline.json()) == ["device"]
    missing = api.post("/api/fusion/sweeps/", {"device": 999999}, format="json")
    assert missing.status_code == 400 and "there is no device #999999" in missing.json()["device"][0]
    form = api.post("/api/fusion/sweeps/", {"device": gpu.pk}, format="multipart")
    assert form.status_code == 415


def test_sweeps_are_the_teams_own(
    api: Any, gpu: Any, make_member: Any, client_for: Any, make_network: Any, finished: ProfilingJob
) -> None:
    stranger = client_for(make_member())
    assert stranger.get("/api/fusion/sweeps/").json()["count"] == 0
    assert stranger.get(f"/api/fusion/sweeps/{finished.pk}/").status_code == 404
    assert stranger.get(f"/api/fusion/sweeps/{finished.pk}/rows/").status_code == 404
    assert stranger.post(f"/api/jobs/{finished.pk}/cancel/").status_code == 404
    theirs = make_network(make_member().team)
    refused = _sweep(api, gpu, models=[theirs.pk])
    assert refused.status_code == 400 and f"there is no model [{theirs.pk}]" in refused.json()["models"][0]


def test_the_list_is_newest_first_and_holds_sweeps_only(api: Any, gpu: Any, member: Any, make_job: Any) -> None:
    first, second = _queued_sweep(api, gpu), _queued_sweep(api, gpu)
    make_job(member.team)  # a profiling job of the team
    plan = api.post("/api/fusion/plans/", {"device": gpu.pk, "sweep": False}, format="json").json()
    page = api.get("/api/fusion/sweeps/").json()
    assert [s["id"] for s in page["results"]] == [second.pk, first.pk]
    assert {s["kind"] for s in page["results"]} == {"fusion_sweep"}
    assert api.get(f"/api/fusion/sweeps/{plan['id']}/").status_code == 404  # a plan is not a sweep
    assert api.get("/api/fusion/sweeps/?state=succeeded").json()["count"] == 0
    assert api.get(f"/api/fusion/sweeps/?device={gpu.pk}&state=queued").json()["count"] == 2


def test_a_finished_sweep_shows_its_summary_and_row_counts(api: Any, finished: ProfilingJob) -> None:
    body = api.get(f"/api/fusion/sweeps/{finished.pk}/").json()
    assert body["state"] == "succeeded" and body["progress"] == 1.0
    result = body["result"]
    expected = sweep_result()
    assert result["networks"] == ["tiny"] and result["wave_size"] == 8 and result["precision"] == "fp32"
    assert result["spec"]["sizes"] == [2] and result["combinations"] == [{"size": 2, "total": 6, "planned": 6}]
    assert result["operators_per_kind"] == expected["operators_per_kind"] and result["sampled"] is False
    assert result["notes"] == ["1 set was refused by the fuser"] and result["elapsed_s"] == 12.5
    assert (result["planned_units"], result["measured_units"]) == (8, 8)
    assert result["row_counts"] == {"total": 16, "errors": 2, "correct": 13, "incorrect": 1, "unchecked": 0}
    rows = FusionSweepResult.objects.get(job=finished).rows.filter(experiment="combination", error="")
    (rounded, unrounded) = result["headlines"]
    assert (rounded["sets"], rounded["variant"], rounded["count"]) == ("pairs", "rounded", 5)
    rounded_rows = [r.throughput for r in rows if r.variant == "rounded" and r.throughput is not None]
    assert rounded["median"] == pytest.approx(statistics.median(rounded_rows))
    assert unrounded["variant"] == "unrounded" and unrounded["max"] >= unrounded["median"] >= unrounded["min"]


def test_rows_are_paginated_without_their_data_unless_asked(api: Any, finished: ProfilingJob) -> None:
    url = f"/api/fusion/sweeps/{finished.pk}/rows/"
    page = api.get(url, {"page_size": 5}).json()
    assert page["count"] == 16 and len(page["results"]) == 5 and page["next"] and page["previous"] is None
    row = page["results"][0]
    assert set(row) == {
        "id",
        "experiment",
        "kinds",
        "size",
        "instance",
        "variant",
        "layout",
        "total_mflops",
        "throughput",
        "verdict",
        "busy_ratio",
        "throughput_wall",
        "padding_fraction",
        "correct",
        "error",
    }
    assert row["kinds"] == ["C_1x1", "C_1x1"] and row["experiment"] == "combination" and row["size"] == 2
    assert row["total_mflops"] == pytest.approx(3.2) and row["throughput"] > 0
    seen = [r["id"] for p in (1, 2, 3, 4) for r in api.get(url, {"page_size": 5, "page": p}).json()["results"]]
    assert len(seen) == len(set(seen)) == 16
    assert api.get(url, {"page_size": 5, "page": 5}).status_code == 404

    detailed = api.get(url, {"detail": "true", "page_size": 1}).json()["results"][0]
    data = detailed["data"]
    assert data["kinds"] == ["C_1x1", "C_1x1"] and len(data["sequential"]["device_samples_ms"]) == 3
    assert data["check"]["correct"] is True and data["operators"][0]["model"] == "tiny"


def _kinds(api: Any, job: ProfilingJob, **params: Any) -> list[tuple[tuple[str, ...], str]]:
    response = api.get(f"/api/fusion/sweeps/{job.pk}/rows/", {"page_size": 500, **params})
    assert response.status_code == 200, response.content
    return sorted((tuple(r["kinds"]), r["variant"]) for r in response.json()["results"])


def test_rows_filter_by_kinds_in_any_order_and_by_contained_kinds(api: Any, finished: ProfilingJob) -> None:
    both = ["rounded", "unrounded"]
    assert _kinds(api, finished, kinds="EW,C_1x1") == [(("C_1x1", "EW"), v) for v in both]
    assert _kinds(api, finished, kinds="C_1x1,EW") == _kinds(api, finished, kinds="EW,C_1x1")
    assert _kinds(api, finished, kinds="C_1x1") == [(("C_1x1",), v) for v in both]  # figure 9's N = 1
    assert [k for k, _ in _kinds(api, finished, contains="EW")] == sorted(
        [("C_1x1", "EW")] * 2 + [("DWC_s1", "EW")] * 2 + [("EW", "EW")] * 2
    )
    assert [k for k, _ in _kinds(api, finished, contains="EW,DWC_s1")] == [("DWC_s1", "EW")] * 2
    assert _kinds(api, finished, contains="FC") == []


def test_rows_filter_by_experiment_size_variant_and_errors(api: Any, finished: ProfilingJob) -> None:
    identical = _kinds(api, finished, experiment="identical")
    assert sorted(k for k, _ in identical) == [("C_1x1",)] * 2 + [("C_1x1", "C_1x1")] * 2
    assert len(_kinds(api, finished, size=2)) == 14 and len(_kinds(api, finished, size=1)) == 2
    assert len(_kinds(api, finished, experiment="combination", size=2)) == 12
    assert {v for _, v in _kinds(api, finished, variant="unrounded")} == {"unrounded"}
    assert len(_kinds(api, finished, variant="unrounded")) == 8
    assert _kinds(api, finished, errors="true") == [(("DWC_s1", "EW"), v) for v in ("rounded", "unrounded")]
    assert len(_kinds(api, finished, errors="false")) == 14
    assert len(_kinds(api, finished, kinds="", contains="", errors="")) == 16  # empty filters filter nothing
    refused = api.get(f"/api/fusion/sweeps/{finished.pk}/rows/", {"errors": "true"}).json()["results"][0]
    assert refused["error"].startswith("FusionError") and refused["throughput"] is None and refused["correct"] is None


@pytest.mark.parametrize(
    "params,key,words",
    [
        ({"kinds": "C,XX"}, "kinds", ["kinds: unknown kind(s) ['XX']", str(list(KINDS))]),
        ({"contains": "dwc"}, "contains", ["contains: unknown kind(s) ['dwc']"]),
        ({"kinds": ",".join(["C"] * 9)}, "kinds", ["kinds: 9 kinds; at most 8"]),
        ({"errors": "maybe"}, "errors", ["errors must be true or false, got 'maybe'"]),
        ({"size": "0"}, "size", ["size must be an integer 1 .. 8, got '0'"]),
        ({"size": "two"}, "size", ["size must be an integer 1 .. 8"]),
        ({"variant": "round"}, "variant", ["unknown variant 'round'", "'rounded'", "'unrounded'"]),
        ({"experiment": "pairs"}, "experiment", ["unknown experiment 'pairs'"]),
    ],
)
def test_a_bad_row_filter_is_a_400_naming_it(
    api: Any, finished: ProfilingJob, params: dict[str, str], key: str, words: list[str]
) -> None:
    response = api.get(f"/api/fusion/sweeps/{finished.pk}/rows/", params)
    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body) == [key]
    for word in words:
        assert word in body[key][0], body


def test_a_bad_detail_parameter_is_the_answers_detail_string(api: Any, finished: ProfilingJob) -> None:
    response = api.get(f"/api/fusion/sweeps/{finished.pk}/rows/", {"detail": "yes"})
    assert response.status_code == 400
    assert response.json() == {"detail": "detail must be true or false, got 'yes'"}


def test_a_row_filter_given_twice_is_a_400(api: Any, finished: ProfilingJob) -> None:
    response = api.get(f"/api/fusion/sweeps/{finished.pk}/rows/?kinds=C&kinds=EW")
    assert response.status_code == 400 and response.json() == {"kinds": ["kinds is given 2 times; give it once"]}


def test_a_queued_sweep_has_no_rows_yet_and_cancels_through_the_jobs_endpoint(api: Any, gpu: Any) -> None:
    job = _queued_sweep(api, gpu)
    rows = api.get(f"/api/fusion/sweeps/{job.pk}/rows/").json()
    assert rows["count"] == 0 and rows["results"] == []
    cancelled = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert cancelled.status_code == 200, cancelled.content
    assert cancelled.json()["state"] == "cancelled" and cancelled.json()["kind"] == "fusion_sweep"
    detail = api.get(f"/api/fusion/sweeps/{job.pk}/").json()
    assert detail["state"] == "cancelled" and detail["finished_at"] and detail["result"] is None
    again = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert again.status_code == 409 and "already cancelled" in again.json()["detail"]
    assert not FusionSweepResult.objects.filter(job=job).exists()


def test_the_jobs_list_shows_kinds_and_filters_by_them(
    api: Any, gpu: Any, member: Any, make_job: Any, finished: ProfilingJob
) -> None:
    profile = make_job(member.team)
    listed = {j["id"]: j for j in api.get("/api/jobs/").json()["results"]}
    assert listed[finished.pk]["kind"] == "fusion_sweep"
    assert listed[finished.pk]["model"] is None and listed[finished.pk]["model_name"] is None
    assert listed[profile.pk]["kind"] == "profile" and listed[profile.pk]["model_name"] == profile.model.name
    only = api.get("/api/jobs/", {"kind": "fusion_sweep"}).json()["results"]
    assert [j["id"] for j in only] == [finished.pk]
    assert [j["id"] for j in api.get("/api/jobs/", {"kind": "profile"}).json()["results"]] == [profile.pk]
    bad = api.get("/api/jobs/", {"kind": "sweep"})
    assert bad.status_code == 400 and "unknown kind 'sweep'" in bad.json()["kind"][0]
    detail = api.get(f"/api/jobs/{finished.pk}/").json()  # a job without a model or a profile result
    assert detail["kind"] == "fusion_sweep" and detail["model"] is None and detail["result"] is None


def test_a_plan_is_queued_with_its_options_and_the_sweep_it_reads(api: Any, gpu: Any, finished: ProfilingJob) -> None:
    newest = api.post("/api/fusion/plans/", {"device": gpu.pk, "options": {"runs": 5}}, format="json")
    assert newest.status_code == 201, newest.content
    body = newest.json()
    assert body["kind"] == "fusion_plan" and body["state"] == "queued" and body["result"] is None
    settings = body["settings"]
    assert settings["zoo"] == ["mobilenet_v2", "mobilenet_v2"]  # figure 11 by default
    assert settings["options"] == {**PlanOptions().as_dict(), "runs": 5}  # complete, as it runs
    assert settings["sweep"] == finished.pk  # the newest sweep on the device
    assert body["links"]["sweep"].endswith(f"/api/fusion/sweeps/{finished.pk}/")
    none = api.post("/api/fusion/plans/", {"device": gpu.pk, "sweep": False}, format="json").json()
    assert none["settings"]["sweep"] is None and none["links"]["sweep"] is None
    named = api.post("/api/fusion/plans/", {"device": gpu.pk, "sweep": finished.pk}, format="json").json()
    assert named["settings"]["sweep"] == finished.pk
    assert [p["id"] for p in api.get("/api/fusion/plans/").json()["results"]] == [named["id"], none["id"], body["id"]]


@pytest.mark.parametrize(
    "body,key,message",
    [
        ({"options": {"max_group": 1}}, "options", "options.max_group must be between 2 and 8, got 1"),
        ({"options": {"round_to_wave": 1}}, "options", "options.round_to_wave must be true or false, got 1"),
        ({"options": {"speed": "max"}}, "options", "options: unknown key(s) ['speed']"),
        ({"sweep": True}, "sweep", "sweep must be a sweep's job id (a positive integer) or false, got True"),
        ({"sweep": 999999}, "sweep", "no succeeded fusion sweep #999999"),
    ],
)
def test_a_bad_plan_request_is_a_400_naming_the_field(
    api: Any, gpu: Any, body: dict[str, Any], key: str, message: str
) -> None:
    response = api.post("/api/fusion/plans/", {"device": gpu.pk, **body}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [key] and message in response.json()[key][0], response.json()


def test_a_plan_names_only_a_succeeded_sweep_of_the_team(api: Any, gpu: Any) -> None:
    queued = _queued_sweep(api, gpu)
    response = api.post("/api/fusion/plans/", {"device": gpu.pk, "sweep": queued.pk}, format="json")
    assert response.status_code == 400 and f"no succeeded fusion sweep #{queued.pk}" in response.json()["sweep"][0]


def test_a_finished_plan_shows_its_comparison(api: Any, gpu: Any) -> None:
    job_id = api.post("/api/fusion/plans/", {"device": gpu.pk, "sweep": False}, format="json").json()["id"]
    finish_plan(ProfilingJob.objects.get(pk=job_id))
    body = api.get(f"/api/fusion/plans/{job_id}/").json()
    assert body["state"] == "succeeded"
    result = body["result"]
    assert result["networks"] == ["mobilenet_v2", "mobilenet_v2"] and result["correct"] is True
    assert result["sequential_ms"] > result["plan_ms"] and result["fuse_all_ms"] > result["sequential_ms"]
    assert result["plan_ratio"] > 1 > result["fuse_all_ratio"]
    assert result["data"]["timing"]["plan"]["device_samples_ms"] and result["data"]["plans"]["plan"]
    assert api.get(f"/api/fusion/sweeps/{job_id}/").status_code == 404
