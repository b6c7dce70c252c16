"""Devices that stop heart-beating go offline; their jobs are re-queued, moved to an equivalent
device, or wait for it (failing with a reason past their team's limit); a restarted worker gets
its orphaned jobs back."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from devicelab.backends.base import DeviceInfo
from server.devices.models import Device, DeviceStatus
from server.devices.services import heartbeat, register_devices
from server.profiling.models import MAX_ATTEMPTS, JobState, ProfilingJob
from server.profiling.services import (
    claim_job,
    mark_stale_devices_offline,
    report_progress,
    requeue_orphaned_jobs,
    sweep_lab,
    take_devices_offline,
)

pytestmark = pytest.mark.django_db


def silence(device: Any, seconds: int | None = None) -> None:
    """Pretend the device's last heartbeat was long ago."""
    seconds = seconds or settings.LATENCYLAB_OFFLINE_AFTER_SECONDS + 5
    Device.objects.filter(pk=device.pk).update(last_heartbeat=timezone.now() - timedelta(seconds=seconds))


def test_register_is_an_upsert_by_identity(make_device: Any) -> None:
    device = make_device(identity="android:serial-1", kind="android")
    Device.objects.filter(pk=device.pk).update(status=DeviceStatus.OFFLINE)
    again = register_devices(
        "worker-b", [DeviceInfo("android", "android:serial-1", "Pixel 4", {"model": "Pixel 4", "soc": "sm8150"})]
    )[0]
    assert again.pk == device.pk
    assert (again.worker, again.status, again.name) == ("worker-b", DeviceStatus.ONLINE, "Pixel 4")
    assert again.signature == "model=Pixel 4|soc=sm8150"
    with pytest.raises(ValueError, match="unknown kind 'tpu'"):
        register_devices("worker-b", [DeviceInfo("tpu", "tpu:0", "tpu", {})])


def test_heartbeat_keeps_devices_online(make_device: Any) -> None:
    device = make_device(worker="worker-a")
    silence(device)
    assert heartbeat("worker-a", [device.identity]) == (1, [])
    assert mark_stale_devices_offline() == []
    device.refresh_from_db()
    assert device.status == DeviceStatus.ONLINE


def test_offline_device_comes_back_with_a_heartbeat(make_device: Any) -> None:
    device = make_device(worker="worker-a")
    silence(device)
    assert [d.pk for d in mark_stale_devices_offline()] == [device.pk]
    heartbeat("worker-a", [device.identity])
    device.refresh_from_db()
    assert device.status == DeviceStatus.ONLINE and device.offline_since is None


def test_a_device_its_machine_said_gone_comes_back_by_registration_not_by_heartbeat(make_device: Any) -> None:
    # A run found its phone unplugged; the agent's heartbeat still names it (its adb list predates
    # the unplug): the phone stays offline and the heartbeat says so, and the job is not sent back
    # to it to burn an attempt. The phone registered again (plugged back in) is online.
    device = make_device(worker="worker-a")
    assert take_devices_offline({device.pk: "phone absent on the adb server"}) == [device.pk]
    assert heartbeat("worker-a", [device.identity]) == (0, [device.identity])
    device.refresh_from_db()
    assert device.status == DeviceStatus.OFFLINE and "absent" in device.offline_reason
    # said gone after going stale: the same
    other = make_device(identity="cpu:other-box", worker="worker-a")
    silence(other)
    mark_stale_devices_offline()
    assert take_devices_offline({other.pk: "unplugged"}) == []
    assert heartbeat("worker-a", [other.identity])[1] == [other.identity]
    (again,) = register_devices("worker-a", [DeviceInfo(device.kind, device.identity, device.name, device.hardware)])
    assert again.status == DeviceStatus.ONLINE
    assert heartbeat("worker-a", [device.identity]) == (1, [])


def test_queued_job_moves_to_an_equivalent_device(member: Any, make_job: Any, make_device: Any) -> None:
    gone = make_device(identity="cpu:gone", name="box-1")
    twin = make_device(identity="cpu:twin", name="box-2", worker="worker-b")
    make_device(identity="cpu:other", hardware={"cpu_model": "Other", "arch": "x86_64"}, worker="worker-c")
    job = make_job(member.team, device=gone)
    silence(gone)
    assert [d.pk for d in mark_stale_devices_offline()] == [gone.pk]
    job.refresh_from_db()
    assert (job.state, job.device_id) == (JobState.QUEUED, twin.pk)
    assert "moved from device 'box-1'" in job.moved_from and "went offline at" in job.moved_from
    gone.refresh_from_db()
    assert gone.status == DeviceStatus.OFFLINE and gone.offline_since is not None


def test_queued_job_waits_when_no_equivalent_is_online_then_fails_past_the_team_limit(
    member: Any, make_job: Any, make_device: Any
) -> None:
    gone = make_device(identity="cpu:gone", name="box-1")
    twin = make_device(identity="cpu:twin", worker="worker-b")
    Device.objects.filter(pk=twin.pk).update(status=DeviceStatus.OFFLINE)
    job = make_job(member.team, device=gone)
    silence(gone)
    now = timezone.now()
    sweep_lab(now)
    job.refresh_from_db()
    assert job.state == JobState.QUEUED and job.device_id == gone.pk  # it waits for its device

    limit = member.team.offline_wait_seconds
    assert limit == 3600  # the default: an hour
    sweep_lab(now + timedelta(seconds=limit - 1))
    job.refresh_from_db()
    assert job.state == JobState.QUEUED
    sweep_lab(now + timedelta(seconds=limit + 1))
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert "device 'box-1'" in job.failure_reason and "has been offline since" in job.failure_reason
    assert "(no heartbeat from worker" in job.failure_reason
    assert f"longer than the {limit} s team {member.team.name!r} lets a job wait" in job.failure_reason


def test_a_waiting_job_moves_to_an_equivalent_that_comes_online(member: Any, make_job: Any, make_device: Any) -> None:
    gone = make_device(identity="cpu:gone", name="box-1")
    job = make_job(member.team, device=gone)
    silence(gone)
    sweep_lab()
    assert ProfilingJob.objects.get(pk=job.pk).device_id == gone.pk
    twin = make_device(identity="cpu:twin", worker="worker-b")
    sweep_lab()
    job.refresh_from_db()
    assert (job.state, job.device_id) == (JobState.QUEUED, twin.pk)
    assert "moved from device 'box-1'" in job.moved_from


def test_a_waiting_job_runs_when_its_device_comes_back(member: Any, make_job: Any, make_device: Any) -> None:
    device = make_device(worker="worker-a")
    job = make_job(member.team, device=device)
    silence(device)
    sweep_lab()
    heartbeat("worker-a", [device.identity])
    device.refresh_from_db()
    assert device.status == DeviceStatus.ONLINE
    assert claim_job(job.pk, "run-1", device_id=device.pk) is not None


def test_running_job_of_a_dead_worker_is_requeued_then_moved(member: Any, make_job: Any, make_device: Any) -> None:
    gone = make_device(identity="cpu:gone")
    twin = make_device(identity="cpu:twin", worker="worker-b")
    job = make_job(member.team, device=gone)
    claim_job(job.pk, "run-1")
    silence(gone)
    mark_stale_devices_offline()
    job.refresh_from_db()
    assert (job.state, job.device_id, job.claimed_by, job.attempts) == (JobState.QUEUED, twin.pk, "", 1)
    assert not report_progress(job.pk, "run-1", 0.5, "the presumed-dead run")
    assert claim_job(job.pk, "run-9", device_id=twin.pk) is not None


def test_a_job_that_keeps_losing_its_worker_fails(member: Any, make_job: Any, make_device: Any) -> None:
    device = make_device(worker="worker-a")
    job = make_job(member.team, device=device)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        assert claim_job(job.pk, f"run-{attempt}") is not None
        requeue_orphaned_jobs("worker-a", f"run-{attempt + 1}")
    job.refresh_from_db()
    assert job.state == JobState.FAILED and f"attempted {MAX_ATTEMPTS} times" in job.failure_reason


def test_restarted_worker_gets_only_its_old_runs_back(member: Any, make_job: Any, make_device: Any) -> None:
    mine = make_device(worker="worker-a")
    theirs = make_device(worker="worker-b")
    old = make_job(member.team, device=mine)
    current = make_job(member.team, device=mine)
    other = make_job(member.team, device=theirs)
    claim_job(old.pk, "run-old")
    claim_job(current.pk, "run-new")
    claim_job(other.pk, "run-b")
    assert [j.pk for j in requeue_orphaned_jobs("worker-a", "run-new")] == [old.pk]
    states = dict(ProfilingJob.objects.values_list("pk", "state"))
    assert states == {old.pk: JobState.QUEUED, current.pk: JobState.RUNNING, other.pk: JobState.RUNNING}


def test_two_sweeps_handle_a_device_once(member: Any, make_job: Any, make_device: Any) -> None:
    gone = make_device()
    make_job(member.team, device=gone)
    silence(gone)
    now = timezone.now()
    assert len(mark_stale_devices_offline(now=now)) == 1
    assert mark_stale_devices_offline(now=now) == []
