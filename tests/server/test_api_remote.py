"""Remote runs through the API, without a worker: submit (202, with the profiles frozen in the
settings; or a 400 naming the field), scope to the team, list and filter, read a finished run's
profiles in order with every request, cancel through the jobs endpoint, find runs in the jobs list.

Results are stored as a worker stores them (claim, then ``ingest_remote``) from a run built with
devicelab's own dataclasses (tests/server/remote_factories.py)."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.graph import GraphBuilder
from devicelab.selection.network_profiles import PRESETS
from server.devices.models import Device, DeviceStatus
from server.profiling.models import JobKind, ProfilingJob
from server.remote.models import RemoteScenarioResult
from tests.server.remote_factories import REQUESTS, finish_remote

pytestmark = pytest.mark.django_db

RUN = {"profiles": ["unshaped", "lte"], "requests": REQUESTS, "warmup": 1}
PROFILE_FIELDS = {
    "profile",
    "requests",
    "upload_median_ms",
    "upload_p90_ms",
    "server_median_ms",
    "server_p90_ms",
    "compute_median_ms",
    "compute_p90_ms",
    "download_median_ms",
    "download_p90_ms",
    "remainder_median_ms",
    "remainder_p90_ms",
    "e2e_median_ms",
    "e2e_p90_ms",
    "e2e_mean_ms",
    "e2e_std_ms",
    "network_share",
    "stages_ms",
}


@pytest.fixture
def cpu(make_device: Any) -> Any:
    """An online CPU device: the lab machine that serves the model."""
    return make_device("cpu")


@pytest.fixture
def model(member: Any, make_network: Any) -> Any:
    """One of the team's image models (1 x 3 x 16 x 16)."""
    return make_network(member.team)


def _post(api: Any, **body: Any) -> Any:
    return api.post("/api/remote/runs/", body, format="json")


def _queued(api: Any, model: Any, cpu: Any, **body: Any) -> ProfilingJob:
    response = _post(api, model=model.pk, device=cpu.pk, **{**RUN, **body})
    assert response.status_code == 202, response.content
    return ProfilingJob.objects.get(pk=response.json()["id"])


def test_a_run_is_queued_with_its_profiles_frozen_and_its_links(
    api: Any, model: Any, cpu: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _post(api, model=model.pk, device=cpu.pk, profiles=["lte", "unshaped"], threads=1, cores=[])
    assert response.status_code == 202, response.content
    body = response.json()
    assert (body["kind"], body["state"], body["progress"], body["result"]) == ("remote_scenario", "queued", 0.0, None)
    assert (body["model"], body["model_name"], body["device"]) == (model.pk, model.name, cpu.pk)
    assert body["title"] == f"remote run of {model.name}"
    settings = body["settings"]
    assert settings["profiles"] == ["lte", "unshaped"]  # the order the job named them
    assert settings["network_profiles"] == {"lte": PRESETS["lte"].as_dict(), "unshaped": None}
    assert (settings["requests"], settings["warmup"], settings["payload"], settings["seed"]) == (20, 3, "jpeg", 0)
    assert (settings["threads"], settings["cores"]) == (1, [])
    links = body["links"]
    assert links["self"].endswith(f"/api/remote/runs/{body['id']}/")
    assert links["cancel"].endswith(f"/api/jobs/{body['id']}/cancel/") and links["job"].endswith(
        f"/api/jobs/{body['id']}/"
    )
    assert links["model"].endswith(f"/api/models/{model.pk}/")
    assert len(callbacks) == 1  # handed to the broker once the row is committed
    job = ProfilingJob.objects.get(pk=body["id"])
    assert job.kind == JobKind.REMOTE_SCENARIO and job.model_id == model.pk


def test_a_teams_stored_profile_is_frozen_and_another_teams_is_unknown(
    api: Any, member: Any, model: Any, cpu: Any, make_member: Any
) -> None:
    from server.selection.services import store_network_profile

    store_network_profile(member.team, {"name": "dsl", "latency_ms": 15, "throughput_mbps": 16, "cv": 0.1})
    store_network_profile(make_member().team, {"name": "theirs", "latency_ms": 5, "throughput_mbps": 100})
    job = _queued(api, model, cpu, profiles=["dsl"], payload="png", seed=7, requests=3)
    frozen = job.settings["network_profiles"]["dsl"]
    assert (frozen["latency_ms"], frozen["ms_per_byte"], frozen["cv"]) == (15.0, 0.0005, 0.1)
    assert (job.settings["payload"], job.settings["seed"]) == ("png", 7)
    refused = _post(api, model=model.pk, device=cpu.pk, profiles=["theirs"])
    assert refused.status_code == 400 and "profiles[0]: no network profile 'theirs'" in refused.json()["profiles"][0]
    assert "dsl" in refused.json()["profiles"][0] and "or unshaped" in refused.json()["profiles"][0]


@pytest.mark.parametrize(
    "body,key,message",
    [
        ({"profiles": []}, "profiles", "must have at least 1 item(s)"),
        ({"profiles": ["lte", "lte"]}, "profiles", "profiles lists 'lte' twice"),
        ({"profiles": "lte"}, "profiles", "profiles must be a list, got str"),
        ({"profiles": None}, "profiles", "profiles must be a list, got None"),
        ({"profiles": [f"p{i}" for i in range(9)]}, "profiles", "must have at most 8 items"),
        ({"profiles": [3]}, "profiles", "profiles[0] must be a string, got 3"),
        ({"profiles": ["mars"]}, "profiles", "profiles[0]: no network profile 'mars'; known: campus_wifi"),
        ({"requests": 0}, "requests", "requests must be between 1 and 500, got 0"),
        ({"requests": 501}, "requests", "requests must be between 1 and 500, got 501"),
        ({"requests": "5"}, "requests", "requests must be an integer, got '5'"),
        ({"warmup": -1}, "warmup", "warmup must be between 0 and 100, got -1"),
        ({"payload": "gif"}, "payload", "payload 'gif' is not one of jpeg, png, tensor"),
        ({"seed": -1}, "seed", "seed must be between 0 and"),
        ({"threads": 0}, "threads", "threads must be between 1 and"),
        ({"cores": [-1]}, "cores", "cores[0] must be between 0 and"),
        ({"cores": "big"}, "cores", "cores must be a list, got 'big'"),
        ({"speed": "max"}, "non_field_errors", "unknown key(s) ['speed']"),
        ({"model": 999999}, "model", "there is no model #999999 in your team"),
        ({"device": 999999}, "device", "there is no device #999999"),
        # every request of 8 profiles at a hotspot's 400 ms: over half the task's hour
        ({"profiles": ["cellular_hotspot"], "requests": 500, "warmup": 100}, "requests", "of network time"),
    ],
)
def test_a_bad_run_request_is_a_400_naming_the_field(
    api: Any, model: Any, cpu: Any, settings: Any, body: dict[str, Any], key: str, message: str
) -> None:
    settings.LATENCYLAB_TASK_TIME_LIMIT = 300
    response = _post(api, **{"model": model.pk, "device": cpu.pk, "profiles": ["unshaped"], **body})
    assert response.status_code == 400, response.content
    errors = response.json()
    assert list(errors) == [key], errors
    assert any(message in m for m in errors[key]), errors
    assert not ProfilingJob.objects.exists()


def test_the_model_must_be_an_image_model_of_the_team_and_the_device_an_online_cpu(
    api: Any, member: Any, model: Any, cpu: Any, make_device: Any, make_network: Any, make_member: Any
) -> None:
    b = GraphBuilder("mlp", (1, 64))
    mlp = make_network(member.team, b.build(b.fc(b.input, 10)))
    not_an_image = _post(api, model=mlp.pk, device=cpu.pk, profiles=["unshaped"])
    assert not_an_image.status_code == 400
    (message,) = not_an_image.json()["model"]
    assert "model 'mlp'" in message and "is not an image model" in message and "N x 3 x H x W" in message

    theirs = make_network(make_member().team)
    assert "there is no model" in _post(api, model=theirs.pk, device=cpu.pk, profiles=["unshaped"]).json()["model"][0]

    gpu = make_device("opencl")
    refused = _post(api, model=model.pk, device=gpu.pk, profiles=["unshaped"])
    assert refused.status_code == 400 and "remote runs are served by a CPU device" in refused.json()["device"][0]
    Device.objects.filter(pk=cpu.pk).update(status=DeviceStatus.OFFLINE)
    offline = _post(api, model=model.pk, device=cpu.pk, profiles=["unshaped"])
    assert offline.status_code == 400 and "is offline" in offline.json()["device"][0]
    form = api.post("/api/remote/runs/", {"model": model.pk, "device": cpu.pk}, format="multipart")
    assert form.status_code == 415
    assert not ProfilingJob.objects.exists()


def test_runs_are_the_teams_own_and_listed_newest_first(
    api: Any, member: Any, model: Any, cpu: Any, make_member: Any, client_for: Any, make_job: Any, make_network: Any
) -> None:
    first, second = _queued(api, model, cpu), _queued(api, model, cpu)
    other = make_network(member.team)
    third = _queued(api, other, cpu)
    make_job(member.team, model=model, device=cpu)  # a profiling job of the same model
    page = api.get("/api/remote/runs/").json()
    assert [r["id"] for r in page["results"]] == [third.pk, second.pk, first.pk]
    assert {r["kind"] for r in page["results"]} == {"remote_scenario"} and "result" not in page["results"][0]
    assert api.get("/api/remote/runs/", {"model": model.pk}).json()["count"] == 2
    assert api.get("/api/remote/runs/", {"device": cpu.pk, "state": "queued"}).json()["count"] == 3
    assert api.get("/api/remote/runs/", {"state": "succeeded"}).json()["count"] == 0
    bad = api.get("/api/remote/runs/", {"state": "done"})
    assert bad.status_code == 400 and "unknown state 'done'" in bad.json()["state"][0]
    stranger = client_for(make_member())
    assert stranger.get("/api/remote/runs/").json()["count"] == 0
    assert stranger.get(f"/api/remote/runs/{first.pk}/").status_code == 404
    assert stranger.post(f"/api/jobs/{first.pk}/cancel/").status_code == 404
    profile = ProfilingJob.objects.filter(kind="profile").get()
    assert api.get(f"/api/remote/runs/{profile.pk}/").status_code == 404  # a profiling job is not a run
    assert [j["id"] for j in api.get("/api/jobs/", {"kind": "remote_scenario"}).json()["results"]] == [
        third.pk,
        second.pk,
        first.pk,
    ]


def test_a_finished_run_shows_every_profile_in_order_and_every_request(api: Any, model: Any, cpu: Any) -> None:
    job = _queued(api, model, cpu)
    finish_remote(job)
    body = api.get(f"/api/remote/runs/{job.pk}/").json()
    assert body["state"] == "succeeded" and body["progress"] == 1.0
    result = body["result"]
    assert (result["model_name"], result["payload"], result["content_type"]) == (model.name, "jpeg", "image/jpeg")
    assert (result["payload_bytes"], result["load_ms"], result["requests"], result["warmup"]) == (162_893, 42.0, 5, 1)
    assert result["spec"] == job.settings and result["environment"]["runtime"].startswith("onnxruntime")
    unshaped, lte = result["profiles"]
    assert set(unshaped) == PROFILE_FIELDS and (unshaped["profile"], lte["profile"]) == ("unshaped", "lte")
    # made-up timings (remote_factories): LTE's upload 160..200 ms, its median 180; the server 20..24
    assert lte["upload_median_ms"] == pytest.approx(180.0) and lte["upload_p90_ms"] == pytest.approx(196.0)
    assert lte["server_median_ms"] == unshaped["server_median_ms"] == pytest.approx(22.0)
    # each part timed on its own; what none holds (0.7 ms a request) is the remainder, not download
    assert lte["download_median_ms"] == pytest.approx(110.0) and lte["remainder_median_ms"] == pytest.approx(0.7)
    assert unshaped["remainder_median_ms"] == pytest.approx(0.5)
    assert lte["e2e_median_ms"] == pytest.approx(180.0 + 22.0 + 110.0 + 0.7)
    assert lte["network_share"] == pytest.approx((180.0 + 110.0) / (180.0 + 22.0 + 110.0 + 0.7))
    assert lte["stages_ms"]["compute"] == 11.0 and lte["stages_ms"]["other"] == pytest.approx(2.8)
    requests = result["data"]["results"]["lte"]["requests"]
    assert len(requests) == REQUESTS and requests[0]["shape"]["one_way_delay_ms"] == pytest.approx(100.0)
    assert result["data"]["results"]["unshaped"]["requests"][0]["shape"] is None


def test_a_queued_run_cancels_through_the_jobs_endpoint(api: Any, model: Any, cpu: Any) -> None:
    job = _queued(api, model, cpu)
    cancelled = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["kind"] == "remote_scenario"
    detail = api.get(f"/api/remote/runs/{job.pk}/").json()
    assert detail["state"] == "cancelled" and detail["result"] is None
    assert not RemoteScenarioResult.objects.filter(job=job).exists()
    assert Device.objects.get(pk=cpu.pk).status == DeviceStatus.ONLINE
