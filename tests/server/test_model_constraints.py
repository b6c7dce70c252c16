"""Named constraints hold in the database itself, and the named queries select what they say."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from server.accounts.models import Membership
from server.devices.models import Device, DeviceStatus, hardware_signature
from server.networks.models import NetworkModel
from server.profiling.models import JobResult, JobState, OperatorTiming, ProfilingJob

pytestmark = pytest.mark.django_db


def violates(constraint: str, make: Any) -> None:
    """``make()`` is refused by the database, which names ``constraint`` (SQLite names a unique
    constraint by its columns instead, so there the message must say UNIQUE)."""
    with pytest.raises(IntegrityError) as info, transaction.atomic():
        make()
    text = str(info.value)
    sqlite_unique = connection.vendor == "sqlite" and "UNIQUE constraint failed" in text
    assert constraint in text or sqlite_unique, text


def test_device_identity_is_unique(make_device: Any) -> None:
    device = make_device()
    violates("device_identity_unique", lambda: Device.objects.create(kind="cpu", identity=device.identity, name="x"))


def test_device_kind_and_status_are_checked(make_device: Any) -> None:
    violates("device_kind_valid", lambda: Device.objects.create(kind="tpu", identity="tpu:1", name="x"))
    device = make_device()
    violates("device_status_valid", lambda: Device.objects.filter(pk=device.pk).update(status="asleep"))


def test_same_bytes_once_per_team(member: Any, make_member: Any, make_network: Any) -> None:
    model = make_network(member.team)
    fields = {f.name: getattr(model, f.name) for f in NetworkModel._meta.fields if f.name not in ("id", "team")}
    violates("networkmodel_team_sha256_unique", lambda: NetworkModel.objects.create(team=member.team, **fields))
    other = make_member().team
    assert NetworkModel.objects.create(team=other, **fields).sha256 == model.sha256


def test_membership_is_unique_per_user_and_team(member: Any) -> None:
    violates("membership_user_team_unique", lambda: Membership.objects.create(user=member.user, team=member.team))


def test_job_progress_range_and_running_claim(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    violates("profilingjob_progress_range", lambda: ProfilingJob.objects.filter(pk=job.pk).update(progress=1.5))
    violates(
        "profilingjob_running_is_claimed", lambda: ProfilingJob.objects.filter(pk=job.pk).update(state=JobState.RUNNING)
    )
    violates(
        "profilingjob_finished_has_time",
        lambda: ProfilingJob.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED),
    )


def test_operator_statistics_mean_and_n_or_none(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    job.start("run-1")
    result = JobResult.objects.create(
        job=job,
        attempt=1,
        e2e_mean=1,
        e2e_median=1,
        e2e_p90=1,
        e2e_std=0,
        e2e_min=1,
        e2e_max=1,
        e2e_cv=0,
        e2e_n=1,
        noisy=False,
        load_ms=1,
        first_run_ms=1,
    )
    violates(
        "optiming_stats_mean_n_or_none",
        lambda: OperatorTiming.objects.create(result=result, index=0, name="a", op_type="relu", mean=1.0),
    )
    violates(
        "optiming_stats_mean_n_or_none",
        lambda: OperatorTiming.objects.create(result=result, index=0, name="a", op_type="relu", median=1.0, std=0.1),
    )
    # a phone's tool reports an operator's mean over n runs, no median or spread
    reported = OperatorTiming.objects.create(result=result, index=0, name="a", op_type="relu", mean=1.0, n=30)
    assert reported.median is None and reported.std is None
    fused = OperatorTiming.objects.create(result=result, index=0, name="a", op_type="relu", fused_into="conv")
    assert fused.n is None
    violates(
        "profiling_jobresult_job_id_key",
        lambda: JobResult.objects.create(
            job=job,
            attempt=1,
            e2e_mean=1,
            e2e_median=1,
            e2e_p90=1,
            e2e_std=0,
            e2e_min=1,
            e2e_max=1,
            e2e_cv=0,
            e2e_n=1,
            noisy=False,
            load_ms=1,
            first_run_ms=1,
        ),
    )


def test_online_stale_and_equivalent_queries(make_device: Any) -> None:
    now = timezone.now()
    a = make_device(identity="cpu:a")
    b = make_device(identity="cpu:b")
    other_cpu = make_device(identity="cpu:c", hardware={"cpu_model": "Other CPU", "arch": "x86_64"})
    unknown = make_device(identity="cpu:d", hardware={})
    Device.objects.filter(pk=b.pk).update(last_heartbeat=now - timedelta(seconds=60))
    Device.objects.filter(pk=other_cpu.pk).update(status=DeviceStatus.OFFLINE)
    assert set(Device.objects.online()) == {a, b, unknown}
    assert list(Device.objects.stale(now, 30)) == [b]
    assert list(Device.objects.equivalent_to(a)) == [b]
    assert list(Device.objects.equivalent_to(unknown)) == []
    assert a.equivalent_to(b) and not a.equivalent_to(other_cpu) and not unknown.equivalent_to(a)
    assert a.queue == f"device.{a.pk}"


def test_signature_per_kind() -> None:
    assert (
        hardware_signature("opencl", {"gpu_name": "Adreno 640", "driver": "512.415", "wave_size": 64})
        == "gpu_name=Adreno 640|driver=512.415"
    )
    assert hardware_signature("android", {"model": "Pixel 4", "soc": "sm8150"}) == "model=Pixel 4|soc=sm8150"
    assert hardware_signature("cpu", {"cores": 8}) == ""


def test_for_team_and_stuck(member: Any, make_member: Any, make_job: Any) -> None:
    mine = make_job(member.team)
    theirs = make_job(make_member().team)
    assert list(ProfilingJob.objects.for_team(member.team)) == [mine]
    assert mine.start("run-1") and theirs.start("run-2")
    old = timezone.now() - timedelta(minutes=10)
    ProfilingJob.objects.filter(pk=mine.pk).update(started_at=old, progress_at=old)
    stuck = ProfilingJob.objects.stuck(since=timezone.now() - timedelta(minutes=5))
    assert list(stuck) == [mine]


def test_measured_models_cannot_be_deleted_alone_but_teams_can(member: Any, make_job: Any) -> None:
    from django.db.models import RestrictedError

    job = make_job(member.team)
    with pytest.raises(RestrictedError):
        job.model.delete()
    member.team.delete()
    assert not ProfilingJob.objects.exists() and not NetworkModel.objects.exists()
