"""A revoked lab machine is refused on every lab call with the revocation's message (naming the
machine and when), and its devices are offline with the reason."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.lab_protocol import Claim, DevicesGone, Ending, Heartbeat, Progress, ResultPost, as_json
from server.devices.models import Device, DeviceStatus
from server.labs.services import revoke_lab_machine
from tests.labs.protocol_calls import claim, cpu_info, lab_client, queue_prefix, register

pytestmark = pytest.mark.django_db

__all__ = ["queue_prefix"]  # the fixture, used by name


def _calls(device: int, job: int, sha256: str) -> list[tuple[str, str, dict[str, Any] | None]]:
    """Every lab call, with a body that is its record."""
    ending = as_json(Ending("run-1", "x"))
    return [
        ("get", "/api/lab/hello", None),
        ("post", "/api/lab/devices", {"worker": "rack", "run": "run-1", "devices": [cpu_info("cpu:rack").as_dict()]}),
        ("post", "/api/lab/heartbeat", as_json(Heartbeat("rack", "run-1", ["cpu:rack"]))),
        ("post", "/api/lab/devices/gone", as_json(DevicesGone("rack", "run-1", {str(device): "stopping"}))),
        ("post", f"/api/lab/devices/{device}/fail-running", ending),
        ("post", f"/api/lab/jobs/{job}/claim", as_json(Claim("run-1", device))),
        ("post", f"/api/lab/jobs/{job}/progress", as_json(Progress("run-1", 0.5))),
        ("post", f"/api/lab/jobs/{job}/result", as_json(ResultPost("run-1", 1, "profile", {}))),
        ("post", f"/api/lab/jobs/{job}/fail", ending),
        ("post", f"/api/lab/jobs/{job}/retry", ending),
        ("get", f"/api/lab/files/{sha256}", None),
    ]


def test_every_lab_call_of_a_revoked_machine_is_refused_and_its_devices_are_offline(
    add_lab: Callable[..., Any], member: Any, make_job: Callable[..., Any], queue_prefix: str
) -> None:
    lab, token = add_lab("rack")
    client = lab_client(token)
    registered = register(client, "rack", "run-1", [cpu_info("cpu:rack")], start=True).json()
    device = Device.objects.get(pk=registered["devices"][0]["pk"])
    job = make_job(member.team, device=device)
    assert claim(client, job.pk, "run-1", device.pk).json()["outcome"] == "claimed"

    revoke_lab_machine(lab, reason="machine retired")

    lab.refresh_from_db()
    message = lab.revocation_message()
    assert "machine 'rack'" in message and lab.revoked_at.isoformat(timespec="seconds") in message
    assert "machine retired" in message
    for method, path, body in _calls(device.pk, job.pk, job.model.sha256):
        answer = getattr(client, method)(path, body, format="json") if body is not None else client.get(path)
        assert answer.status_code == 401, (path, answer.status_code)
        assert answer.json()["detail"] == message, path
        assert answer["WWW-Authenticate"] == "Lab"
    device.refresh_from_db()
    assert device.status == DeviceStatus.OFFLINE
    assert device.offline_reason == "the lab token of machine 'rack' was revoked"
