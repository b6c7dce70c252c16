"""List filters (server/api/filters.py): devices by kind and status, jobs and predictors by their
keys; a bad value is a 400 that names the parameter and what it accepts."""

from __future__ import annotations

from typing import Any

import pytest

from server.devices.models import Device, DeviceStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(make_device: Any) -> dict[str, Any]:
    """Devices of two kinds and three states: an idle CPU, a busy CPU, an offline OpenCL device."""
    idle, busy, gpu = make_device("cpu"), make_device("cpu"), make_device("opencl")
    Device.objects.filter(pk=busy.pk).update(status=DeviceStatus.BUSY)
    Device.objects.filter(pk=gpu.pk).update(status=DeviceStatus.OFFLINE)
    return {"idle": idle, "busy": busy, "gpu": gpu}


def _ids(api: Any, url: str, **params: Any) -> set[int]:
    response = api.get(url, params)
    assert response.status_code == 200, response.content
    return {row["id"] for row in response.json()["results"]}


def test_devices_by_kind(api: Any, lab: dict[str, Any]) -> None:
    assert _ids(api, "/api/devices/") == {d.pk for d in lab.values()}
    assert _ids(api, "/api/devices/", kind="cpu") == {lab["idle"].pk, lab["busy"].pk}
    assert _ids(api, "/api/devices/", kind="opencl") == {lab["gpu"].pk}
    assert _ids(api, "/api/devices/", kind="android") == set()


def test_devices_by_status_online_means_reachable(api: Any, lab: dict[str, Any]) -> None:
    assert _ids(api, "/api/devices/", status="online") == {lab["idle"].pk, lab["busy"].pk}
    assert _ids(api, "/api/devices/", status="busy") == {lab["busy"].pk}
    assert _ids(api, "/api/devices/", status="offline") == {lab["gpu"].pk}
    assert _ids(api, "/api/devices/", kind="opencl", status="online") == set()
    assert _ids(api, "/api/devices/", kind="cpu", status="busy") == {lab["busy"].pk}


@pytest.mark.parametrize(
    "params,key,words",
    [
        ({"kind": "gpu"}, "kind", ["unknown kind 'gpu'", "'cpu'", "'opencl'", "'android'"]),
        ({"status": "asleep"}, "status", ["unknown status 'asleep'", "'online'", "'busy'", "'offline'"]),
    ],
)
def test_a_bad_device_filter_names_the_parameter_and_the_choices(
    api: Any, lab: dict[str, Any], params: dict[str, str], key: str, words: list[str]
) -> None:
    response = api.get("/api/devices/", params)
    assert response.status_code == 400
    body = response.json()
    assert list(body) == [key]
    for word in words:
        assert word in body[key][0], body


def test_jobs_by_state_device_and_model(api: Any, member: Any, make_job: Any, make_device: Any) -> None:
    first, second = make_job(member.team), make_job(member.team)
    assert _ids(api, "/api/jobs/", device=first.device_id) == {first.pk}
    assert _ids(api, "/api/jobs/", model=second.model_id) == {second.pk}
    assert _ids(api, "/api/jobs/", state="queued", device=second.device_id) == {second.pk}
    assert _ids(api, "/api/jobs/", device=make_device().pk) == set()
    assert _ids(api, "/api/jobs/", device=999999) == set()  # an id nothing has: empty, not an error


@pytest.mark.parametrize("value", ["abc", "-1", "1.5", "²"])
def test_an_id_filter_refuses_what_is_not_an_id(api: Any, value: str) -> None:
    for url in ("/api/jobs/", "/api/predictors/"):
        response = api.get(url, {"device": value})
        assert response.status_code == 400, (url, response.content)
        assert response.json()["device"] == [f"device must be an id (a positive integer), got {value!r}"]
    response = api.get("/api/jobs/", {"model": value})
    assert response.json()["model"] == [f"model must be an id (a positive integer), got {value!r}"]


def test_bad_job_and_predictor_choices(api: Any) -> None:
    response = api.get("/api/jobs/", {"state": "done"})
    assert response.status_code == 400
    assert response.json()["state"][0].startswith("unknown state 'done'; expected one of ['queued', ")
    response = api.get("/api/predictors/", {"method": "svm"})
    assert response.status_code == 400
    assert response.json()["method"] == ["unknown method 'svm'; expected one of ['lasso', 'rf', 'gbdt', 'mlp']"]
    response = api.get("/api/predictors/", {"state": "stale"})
    assert response.status_code == 400 and "unknown state 'stale'" in response.json()["state"][0]


def test_an_empty_value_does_not_filter(api: Any, lab: dict[str, Any]) -> None:
    assert _ids(api, "/api/devices/", kind="", status="") == {d.pk for d in lab.values()}


def test_the_browsable_list_page_renders_its_filter_form(api: Any, lab: dict[str, Any]) -> None:
    page = api.get("/api/devices/?kind=cpu", HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    assert 'name="status"' in page.content.decode()
