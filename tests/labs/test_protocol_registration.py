"""``POST /api/lab/devices``: a lab machine registers the devices it found under its own name (or
``NAME#instance``) only, never takes over another active machine's device, learns the timings it
must keep, and at a run's start gets back what its earlier run left running."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings

from server.devices.models import Device
from server.profiling.models import JobState
from server.profiling.services import claim_job
from tests.labs.protocol_calls import cpu_info, lab_client, post, queue_prefix, register

pytestmark = pytest.mark.django_db

__all__ = ["queue_prefix"]  # the fixture, used by name


@pytest.mark.parametrize("worker", ["rack", "rack#gpu-2"])
def test_a_machine_registers_devices_under_its_name_and_its_instances(
    worker: str, add_lab: Callable[..., Any], queue_prefix: str
) -> None:
    _, token = add_lab("rack")
    answer = register(lab_client(token), worker, "run-1", [cpu_info("cpu:rack-1"), cpu_info("cpu:rack-2")])

    assert answer.status_code == 200, answer.content
    body = answer.json()
    rows = {d.identity: d for d in Device.objects.filter(worker=worker)}
    assert set(rows) == {"cpu:rack-1", "cpu:rack-2"}
    assert body["worker"] == worker
    assert body["devices"] == [
        {"pk": rows[i].pk, "identity": i, "queue": f"{queue_prefix}device.{rows[i].pk}"}
        for i in ("cpu:rack-1", "cpu:rack-2")
    ]
    assert body["requeued"] == []
    assert (body["heartbeat_seconds"], body["offline_after_seconds"], body["task_time_limit"]) == (
        settings.LATENCYLAB_HEARTBEAT_SECONDS,
        settings.LATENCYLAB_OFFLINE_AFTER_SECONDS,
        settings.LATENCYLAB_TASK_TIME_LIMIT,
    )


@pytest.mark.parametrize("worker", ["other", "rack2", "other#rack", "rac"])
def test_another_machines_worker_name_is_refused(worker: str, add_lab: Callable[..., Any]) -> None:
    _, token = add_lab("rack")
    answer = register(lab_client(token), worker, "run-1", [cpu_info("cpu:x")])

    assert answer.status_code == 403
    assert f"cannot act as worker {worker!r}" in answer.json()["detail"]
    assert not Device.objects.filter(identity="cpu:x").exists()


def test_a_device_held_by_another_active_machine_is_not_taken_over(
    add_lab: Callable[..., Any], queue_prefix: str
) -> None:
    _, theirs = add_lab("other")
    _, mine = add_lab("rack")
    assert register(lab_client(theirs), "other#1", "run-o", [cpu_info("cpu:shared")]).status_code == 200

    answer = register(lab_client(mine), "rack", "run-r", [cpu_info("cpu:shared"), cpu_info("cpu:mine")])

    assert answer.status_code == 403
    assert "device 'cpu:shared' is held by lab machine 'other'" in answer.json()["detail"]
    assert Device.objects.get(identity="cpu:shared").worker == "other#1"
    assert not Device.objects.filter(identity="cpu:mine").exists()  # nothing of the refused call is kept


def test_a_device_of_a_revoked_machine_may_be_taken(add_lab: Callable[..., Any], queue_prefix: str) -> None:
    from server.labs.services import revoke_lab_machine

    old, theirs = add_lab("old-rack")
    _, mine = add_lab("rack")
    assert register(lab_client(theirs), "old-rack", "run-o", [cpu_info("cpu:moved")]).status_code == 200
    revoke_lab_machine(old, reason="moved to rack")

    answer = register(lab_client(mine), "rack", "run-r", [cpu_info("cpu:moved")])

    assert answer.status_code == 200, answer.content
    assert Device.objects.get(identity="cpu:moved").worker == "rack"


def test_a_runs_start_requeues_what_an_older_run_left_running(
    add_lab: Callable[..., Any], member: Any, make_job: Callable[..., Any], queue_prefix: str
) -> None:
    _, token = add_lab("rack")
    client = lab_client(token)
    first = register(client, "rack", "run-old", [cpu_info("cpu:rack")], start=True).json()
    device = Device.objects.get(pk=first["devices"][0]["pk"])
    orphan = make_job(member.team, device=device)
    assert claim_job(orphan.pk, "run-old", device_id=device.pk) is not None
    waiting = make_job(member.team, device=device)

    answer = register(client, "rack", "run-new", [cpu_info("cpu:rack")], start=True)

    assert answer.status_code == 200, answer.content
    assert answer.json()["requeued"] == [orphan.pk]
    orphan.refresh_from_db()
    assert (orphan.state, orphan.claimed_by) == (JobState.QUEUED, "")
    waiting.refresh_from_db()
    assert waiting.state == JobState.QUEUED


def test_a_registration_that_is_not_a_run_start_requeues_nothing(
    add_lab: Callable[..., Any], member: Any, make_job: Callable[..., Any], queue_prefix: str
) -> None:
    _, token = add_lab("rack")
    client = lab_client(token)
    first = register(client, "rack", "run-old", [cpu_info("cpu:rack")], start=True).json()
    device = Device.objects.get(pk=first["devices"][0]["pk"])
    job = make_job(member.team, device=device)
    assert claim_job(job.pk, "run-old", device_id=device.pk) is not None

    answer = register(client, "rack", "run-new", [cpu_info("cpu:rack")])

    assert answer.json()["requeued"] == []
    job.refresh_from_db()
    assert (job.state, job.claimed_by) == (JobState.RUNNING, "run-old")


@pytest.mark.parametrize(
    ("device", "message"),
    [
        (
            {"kind": "toaster"},
            "registration.devices[1].kind must be one of ['cpu', 'opencl', 'android'], got 'toaster'",
        ),
        (
            {"kind": "imported"},
            "registration.devices[1].kind must be one of ['cpu', 'opencl', 'android'], got 'imported'",
        ),
        ({"identity": 5}, "registration.devices[1].identity must be a text of 1 to 255 characters, got 5"),
        ({"identity": ""}, "registration.devices[1].identity must be a text of 1 to 255 characters, got ''"),
        ({"identity": "x" * 256}, "registration.devices[1].identity must be a text of 1 to 255 characters"),
        ({"name": "y" * 201}, "registration.devices[1].name must be a text of 1 to 200 characters"),
        ({"kind": None}, "registration.devices[1].kind must be one of ['cpu', 'opencl', 'android'], got None"),
        ({"hardware": "x"}, "registration.devices[1] is not a device: "),
    ],
)
def test_a_device_the_server_cannot_hold_is_refused_naming_the_key(
    device: dict[str, Any], message: str, add_lab: Callable[..., Any]
) -> None:
    _, token = add_lab("rack")
    good = cpu_info("cpu:good").as_dict()
    body = {"worker": "rack", "run": "run-1", "devices": [good, {**good, "identity": "cpu:bad", **device}]}

    answer = post(lab_client(token), "/api/lab/devices", body)

    assert answer.status_code == 400
    assert answer.json()["detail"].startswith(message)
    assert not Device.objects.exists()  # the good device of the refused call is not kept either


def test_a_worker_name_too_long_for_a_row_is_refused(add_lab: Callable[..., Any]) -> None:
    _, token = add_lab("rack")
    answer = register(lab_client(token), "rack#" + "i" * 200, "run-1", [cpu_info("cpu:x")])
    assert answer.status_code == 400
    assert answer.json()["detail"] == "registration.worker is longer than 200 characters"
