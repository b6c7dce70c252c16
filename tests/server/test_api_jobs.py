"""Jobs through the API, without a worker: submit, watch, read the result, cancel."""

from __future__ import annotations

from typing import Any

import pytest

from server.devices.models import Device, DeviceStatus
from server.networks.services import model_graph
from server.profiling.models import ProfilingJob
from server.profiling.services import claim_job, ingest_result, report_progress
from tests.server.factories import profile_result

pytestmark = pytest.mark.django_db


@pytest.fixture
def model(member: Any, make_network: Any) -> Any:
    return make_network(member.team)


@pytest.fixture
def device(make_device: Any) -> Any:
    return make_device()


def submit(api: Any, model: Any, device: Any, job_settings: Any = None) -> Any:
    body = {"model": model.pk, "device": device.pk}
    if job_settings is not None:
        body["settings"] = job_settings
    return api.post("/api/jobs/", body, format="json")


def test_submit_queues_a_job_with_complete_settings(
    api: Any, model: Any, device: Any, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = submit(api, model, device, {"threads": 2, "runs": 10})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["state"], body["progress"], body["attempts"], body["result"]) == ("queued", 0.0, 0, None)
    assert body["settings"] == {
        "backend": "cpu",
        "threads": 2,
        "cores": [],
        "precision": "fp32",
        "warmup_runs": 5,
        "runs": 10,
        "delegate": "",
        "cooldown_c": None,
        "cooldown_max_s": None,
        "cold_runs": 1,
        "on_noise": "flag",
        "noise_reruns": 2,
        "breakdown": False,  # the server's default, LATENCYLAB_TIME_BREAKDOWN, is off in the tests
    }
    assert len(callbacks) == 1  # the job is handed to the broker once the row is committed


def test_detail_shows_progress_then_the_result(api: Any, model: Any, device: Any) -> None:
    job_id = submit(api, model, device).json()["id"]
    claim_job(job_id, "run-1")
    report_progress(job_id, "run-1", 0.4, "warm-up done")
    running = api.get(f"/api/jobs/{job_id}/").json()
    assert (running["state"], running["progress"], running["progress_message"], running["attempts"]) == (
        "running",
        0.4,
        "warm-up done",
        1,
    )
    graph = model_graph(model)
    ingest_result(job_id, "run-1", profile_result(graph))
    done = api.get(f"/api/jobs/{job_id}/").json()
    assert done["state"] == "succeeded"
    result = done["result"]
    assert result["attempt"] == 1 and result["cold"] == {"load_ms": 12.5, "first_run_ms": 3.25}
    assert result["e2e"]["n"] == 5 and set(result["e2e"]) >= {"mean", "median", "p90", "std", "cv", "noisy"}
    names = [op["name"] for op in result["operators"]]
    assert names == [op.name for op in graph.operators] + ["reorder_0"]
    assert result["operators"][2]["fused_into"] == graph.operators[0].name


def test_cancel_then_cancel_again(api: Any, model: Any, device: Any) -> None:
    job_id = submit(api, model, device).json()["id"]
    cancelled = api.post(f"/api/jobs/{job_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    again = api.post(f"/api/jobs/{job_id}/cancel/")
    assert again.status_code == 409
    assert "already cancelled" in again.json()["detail"]


def test_list_filters_by_state(api: Any, model: Any, device: Any) -> None:
    first = submit(api, model, device).json()["id"]
    submit(api, model, device)
    api.post(f"/api/jobs/{first}/cancel/")
    page = api.get("/api/jobs/?state=cancelled").json()
    assert [j["id"] for j in page["results"]] == [first]
    assert api.get("/api/jobs/").json()["count"] == 2
    bad = api.get("/api/jobs/?state=done")
    assert bad.status_code == 400 and "unknown state 'done'" in bad.json()["state"][0]


@pytest.mark.parametrize(
    "job_settings,field_words",
    [
        ({"threads": 2, "turbo": True}, ["unknown settings key(s) ['turbo']", "known keys"]),
        ({"threads": 0}, ["threads must be between 1 and"]),
        ({"threads": "four"}, ["settings.threads must be an integer, got 'four'"]),
        ({"precision": "fp64"}, ["settings.precision 'fp64' is not one of fp32, fp16, int8"]),
        ({"cores": [0, -1]}, ["settings.cores must be a list of non-negative integers"]),
        ({"backend": "opencl"}, ["settings.backend 'opencl' does not match device", "cpu device"]),
        ([1, 2], ["Expected a dictionary"]),
        # JSON values are taken as sent: DRF's own fields would read "4" as 4 and 1 as true.
        ({"threads": "4"}, ["settings.threads must be an integer, got '4'"]),
        ({"warmup_runs": True}, ["settings.warmup_runs must be an integer, got True"]),
        ({"runs": None}, ["settings.runs must be an integer, got None"]),
        ({"backend": 5}, ["settings.backend must be a string, got 5"]),
        ({"cores": "0,1"}, ["settings.cores must be a list of non-negative integers or a cluster name, got '0,1'"]),
    ],
)
def test_bad_settings_name_the_field(
    api: Any, model: Any, device: Any, job_settings: Any, field_words: list[str]
) -> None:
    response = submit(api, model, device, job_settings)
    assert response.status_code == 400, response.json()
    message = response.json()["settings"][0]
    for words in field_words:
        assert words in message, message
    assert not ProfilingJob.objects.exists()


def test_every_bad_setting_is_named_at_once(api: Any, model: Any, device: Any) -> None:
    from devicelab.backends.base import MAX_RUNS

    response = submit(api, model, device, {"threads": "2", "runs": 0})
    assert response.status_code == 400
    assert response.json() == {
        "settings": [
            "settings.threads must be an integer, got '2'",
            f"settings.runs must be between 1 and {MAX_RUNS}, got 0",
        ]
    }


def test_the_settings_declaration_has_the_keys_of_profile_settings() -> None:
    from devicelab.backends.base import ProfileSettings
    from server.profiling.api.serializers import JobSettingsSerializer

    assert set(JobSettingsSerializer().fields) == set(ProfileSettings.__dataclass_fields__)


def test_offline_device_is_refused(api: Any, model: Any, device: Any) -> None:
    Device.objects.filter(pk=device.pk).update(status=DeviceStatus.OFFLINE)
    response = submit(api, model, device)
    assert response.status_code == 400
    assert f"device '{device.name}' (#{device.pk}) is offline" in response.json()["device"][0]


def test_unknown_model_and_device(api: Any, model: Any, device: Any) -> None:
    response = api.post("/api/jobs/", {"model": 999999, "device": device.pk}, format="json")
    assert response.status_code == 400 and "no model #999999 in your team" in response.json()["model"][0]
    response = api.post("/api/jobs/", {"model": model.pk, "device": 999999}, format="json")
    assert response.status_code == 400 and "no device #999999" in response.json()["device"][0]
    response = api.post("/api/jobs/", {"device": device.pk}, format="json")
    assert response.status_code == 400 and "model" in response.json()


def test_bad_json_body(api: Any) -> None:
    response = api.generic("POST", "/api/jobs/", b'{"model": 1,', content_type="application/json")
    assert response.status_code == 400
    assert "JSON parse error" in response.json()["detail"]


def test_devices_are_listed_for_every_team(api: Any, device: Any) -> None:
    listed = api.get("/api/devices/").json()
    assert [d["id"] for d in listed["results"]] == [device.pk]
    detail = api.get(f"/api/devices/{device.pk}/").json()
    assert (detail["status"], detail["queue"], detail["hardware"]["arch"]) == (
        "online",
        f"device.{device.pk}",
        "x86_64",
    )
