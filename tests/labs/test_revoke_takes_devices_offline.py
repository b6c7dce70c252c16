"""Revoking a lab token takes the machine's devices offline at once, with the reason; their jobs
are retried or moved as for any lost device; the machine's next call is refused with a message
that says when and why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.devices.models import DeviceStatus
from server.labs.models import LabMachine
from server.labs.services import revoke_lab_machine
from server.profiling.models import JobState
from server.profiling.services import claim_job

pytestmark = pytest.mark.django_db


def test_revoking_takes_its_devices_offline_with_the_reason_and_moves_their_jobs(
    add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    lab, _ = add_lab("rack")
    cpu, phone = make_device(worker="rack"), make_device(kind="android", worker="rack#2")
    twin = make_device(worker="elsewhere")  # the same hardware as ``cpu``, on another machine
    running = make_job(member.team, device=cpu)
    assert claim_job(running.pk, "run-1") is not None
    queued = make_job(member.team, device=phone)

    gone = revoke_lab_machine(lab, reason="machine retired")

    assert sorted(gone) == sorted([cpu.pk, phone.pk])
    for device in (cpu, phone):
        device.refresh_from_db()
        assert device.status == DeviceStatus.OFFLINE
        assert device.offline_reason == "the lab token of machine 'rack' was revoked"
    twin.refresh_from_db()
    assert twin.status == DeviceStatus.ONLINE
    running.refresh_from_db()
    assert (running.state, running.device_id, running.claimed_by) == (JobState.QUEUED, twin.pk, "")
    queued.refresh_from_db()
    assert (queued.state, queued.device_id) == (JobState.QUEUED, phone.pk)  # no equivalent: it waits
    lab.refresh_from_db()
    assert lab.is_revoked and lab.revoked_reason == "machine retired"
    assert not LabMachine.objects.active().filter(pk=lab.pk).exists()


def test_the_next_call_is_refused_with_when_and_why(add_lab: Callable[..., Any], lab_view: Callable[..., Any]) -> None:
    lab, token = add_lab("rack")
    assert lab_view(f"Lab {token}").status_code == 200
    revoke_lab_machine(lab, reason="machine retired")
    lab.refresh_from_db()
    answer = lab_view(f"Lab {token}")
    assert answer.status_code == 401 and answer["WWW-Authenticate"] == "Lab"
    assert answer.data["detail"] == (
        f"the lab token of machine 'rack' was revoked on {lab.revoked_at.isoformat(timespec='seconds')}: "
        "machine retired; ask the server's admin for a new one (latencylab lab add rack)"
    )


def test_without_a_reason_the_message_has_none(add_lab: Callable[..., Any], lab_view: Callable[..., Any]) -> None:
    lab, token = add_lab("rack")
    revoke_lab_machine(lab)
    detail = str(lab_view(f"Lab {token}").data["detail"])
    assert "was revoked on " in detail and ": ;" not in detail and "; ask the server's admin" in detail


def test_revoking_again_keeps_the_first_date_and_reason(add_lab: Callable[..., Any]) -> None:
    lab, _ = add_lab("rack")
    revoke_lab_machine(lab, reason="first")
    first = lab.revoked_at
    revoke_lab_machine(LabMachine.objects.get(pk=lab.pk), reason="second")
    lab.refresh_from_db()
    assert (lab.revoked_at, lab.revoked_reason) == (first, "first")


def test_a_device_offline_for_another_reason_keeps_it(
    add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    from server.profiling.services import take_devices_offline

    lab, _ = add_lab("rack")
    unplugged = make_device(kind="android", worker="rack")
    take_devices_offline({unplugged.pk: "unplugged"})
    assert revoke_lab_machine(lab) == []
    unplugged.refresh_from_db()
    assert unplugged.offline_reason == "unplugged"
