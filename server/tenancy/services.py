"""Sharing sweeps as jobs: submit one, store what the worker measured, read its rows.

A job's settings are ``spec`` (``SharingSpec.as_dict()``, checked and complete: the fields left
out take the core's defaults) and ``time_budget_s`` (at most the task's time limit less a margin
to store the rows; the worker stops the sweep there and stores the units it measured). Networks
are zoo names, built by the worker. Storing is idempotent and only lands for the run that holds
the job's claim, as for profiling results and fusion sweeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from devicelab.graph import zoo
from devicelab.spec import SpecError
from devicelab.tenancy.on_device import OPENCL
from devicelab.tenancy.online_on_device import OnlineRunRecord
from devicelab.tenancy.online_spec import OnlineSpec
from devicelab.tenancy.results import SharingRowRecord, SharingSweepRecord
from devicelab.tenancy.spec import SharingSpec
from server.accounts.models import Team
from server.devices.models import Device
from server.profiling.models import JobKind, ProfilingJob
from server.profiling.services import check_device_takes_jobs, claimed_for_ingest, finish_ingest, queue_job
from server.tenancy.models import OnlineRunResult, SharingMeasurement, SharingSweepResult

# The sweep stops this long before the task's time limit (at most half of it), to store its rows:
# the longest silent stretch of a unit (setting up R tenants) and the insert fit in it.
TIME_LIMIT_MARGIN_S = 300
SETTINGS_KEYS = ("spec", "time_budget_s")


def _fail(field: str, message: str) -> ValidationError:
    return ValidationError({field: message})


def check_sharing_spec(raw: Any) -> dict[str, Any]:
    """A sharing spec as given (``SharingSpec``'s fields; any left out take their defaults),
    checked by its declaration and complete; a ``ValidationError`` on ``spec`` naming the bad
    field otherwise. Through the API its networks are zoo names."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _fail("spec", f"spec must be a JSON object, got {type(raw).__name__}")
    try:
        spec = SharingSpec.from_dict(raw)
    except SpecError as exc:
        raise _fail("spec", f"spec.{exc}") from None
    except ValueError as exc:  # an unknown key, or nothing to measure
        raise _fail("spec", f"spec: {exc}") from None
    names = zoo.entries()
    unknown_networks = [n for n in spec.networks if n not in names]
    if unknown_networks:
        raise _fail(
            "spec",
            f"spec.networks: no zoo model named {unknown_networks}; GET /api/zoo/ or `latencylab zoo list` lists them",
        )
    return spec.as_dict()


def time_limit_budget() -> float:
    """The longest time budget a sweep may have: the task's limit less the margin to store it."""
    limit = float(django_settings.LATENCYLAB_TASK_TIME_LIMIT)
    return max(limit - TIME_LIMIT_MARGIN_S, limit / 2)


def _time_budget(raw: Any) -> float:
    limit = time_limit_budget()
    if raw is None:
        return limit
    if not isinstance(raw, int | float) or isinstance(raw, bool) or raw <= 0:
        raise _fail("time_budget_s", f"time_budget_s must be a positive number of seconds, got {raw!r}")
    if raw > limit:
        raise _fail(
            "time_budget_s",
            f"time_budget_s {raw} is over what a job may take ({limit:.0f} s: LATENCYLAB_TASK_TIME_LIMIT "
            f"less {TIME_LIMIT_MARGIN_S} s to store the rows)",
        )
    return float(raw)


def submit_sharing_sweep(team: Team, device: Device, raw: Mapping[str, Any], user: Any = None) -> ProfilingJob:
    """Queue a sharing sweep on an OpenCL device. ``raw``: ``spec`` (``SharingSpec``'s fields:
    shapes, networks, tenants, strategies, warmup, runs, seed, memory_cap_bytes, ceiling; default:
    the paper's three shapes, R from 1 to 120, every strategy but CLBlast's) and ``time_budget_s``
    (default and most: the task's time limit less a margin)."""
    check_device_takes_jobs(device)
    if device.kind != OPENCL:
        raise _fail(
            "device", f"sharing sweeps run on OpenCL devices; {device.name!r} (#{device.pk}) is a {device.kind} device"
        )
    unknown = sorted(set(raw) - set(SETTINGS_KEYS))
    if unknown:
        raise _fail("settings", f"unknown key(s) {unknown}; known: {sorted(SETTINGS_KEYS)}")
    settings = {"spec": check_sharing_spec(raw.get("spec")), "time_budget_s": _time_budget(raw.get("time_budget_s"))}
    return queue_job(team, device, kind=JobKind.SHARING_SWEEP, settings=settings, user=user)


def check_online_spec(raw: Any) -> dict[str, Any]:
    """An online-scheduling spec as given (``OnlineSpec``'s fields; any left out take their
    defaults), checked and complete; a ``ValidationError`` on ``spec`` naming the bad field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _fail("spec", f"spec must be a JSON object, got {type(raw).__name__}")
    try:
        spec = OnlineSpec.from_dict(raw)
    except SpecError as exc:
        raise _fail("spec", f"spec.{exc}") from None
    except ValueError as exc:
        raise _fail("spec", f"spec: {exc}") from None
    if not spec.is_sgemm and spec.workload not in zoo.entries():
        raise _fail(
            "spec",
            f"spec.workload: {spec.workload!r} is neither an SGEMM shape MxNxK nor a zoo model "
            "(GET /api/zoo/ or `latencylab zoo list` lists them)",
        )
    return spec.as_dict()


def submit_online_run(team: Team, device: Device, raw: Mapping[str, Any], user: Any = None) -> ProfilingJob:
    """Queue an online-scheduling run on an OpenCL device. ``raw``: ``spec`` (``OnlineSpec``'s
    fields: workload, tenants, load, duration_s, target_factor, window_factor, policies, seed)."""
    check_device_takes_jobs(device)
    if device.kind != OPENCL:
        raise _fail(
            "device",
            f"online scheduling runs on OpenCL devices; {device.name!r} (#{device.pk}) is a {device.kind} device",
        )
    unknown = sorted(set(raw) - {"spec"})
    if unknown:
        raise _fail("settings", f"unknown key(s) {unknown}; known: ['spec']")
    settings = {"spec": check_online_spec(raw.get("spec"))}
    return queue_job(team, device, kind=JobKind.ONLINE_SCHEDULE, settings=settings, user=user)


# -- the worker's side -------------------------------------------------------------------------


def _row(sweep: SharingSweepResult, row: SharingRowRecord) -> SharingMeasurement:
    throughput, latency, straggler = row.throughput, row.latency_ms, row.straggler
    return SharingMeasurement(
        sweep=sweep,
        workload=row.workload_name,
        workload_kind=row.workload_kind,
        tenants=row.tenants,
        strategy=row.strategy,
        status=row.status,
        throughput_gflops=None if throughput is None else throughput.gflops,
        throughput_per_s=None if throughput is None else throughput.per_s,
        latency_p50_ms=None if latency is None else latency.p50,
        latency_p99_ms=None if latency is None else latency.p99,
        straggler_gap_ms=None if straggler is None else straggler.gap_ms,
        straggler_gap_ratio=None if straggler is None else straggler.gap_ratio,
        memory_bytes=row.memory_bytes,
        correct=row.correct,
        error=row.error,
        data=row.as_dict(),
    )


def ingest_sharing(job_id: int, token: str, result: SharingSweepRecord) -> SharingSweepResult | None:
    """Store a sweep (``sharing_on_device``'s result) and its rows in one transaction; the job
    succeeds. The stored sweep when it was stored already; None when the job is not this run's."""
    with transaction.atomic():
        job = claimed_for_ingest(job_id, token, SharingSweepResult.objects.all())
        if job is None:
            return SharingSweepResult.objects.filter(job_id=job_id).first()
        sweep = SharingSweepResult.objects.create(
            job=job,
            attempt=job.attempts,
            device_name=result.device.get("name", ""),
            device=dict(result.device),
            spec=result.spec.as_dict(),
            workloads=result.workloads,
            ceiling=result.ceiling,
            table1=list(result.table1),
            largest_tenants=list(result.largest_tenants),
            notes=list(result.notes),
            complete=result.complete,
            not_measured=list(result.not_measured),
            time_budget_s=result.time_budget_s,
            elapsed_s=result.elapsed_s,
            environment=dict(result.device.get("runtime") or {}),
        )
        SharingMeasurement.objects.bulk_create((_row(sweep, r) for r in result.rows), batch_size=500)
        finish_ingest(job, token)
    return sweep


def ingest_online(job_id: int, token: str, result: OnlineRunRecord) -> OnlineRunResult | None:
    """Store an online-scheduling run; the job succeeds. The stored run when it was stored
    already; None when the job is not this run's."""
    with transaction.atomic():
        job = claimed_for_ingest(job_id, token, OnlineRunResult.objects.all())
        if job is None:
            return OnlineRunResult.objects.filter(job_id=job_id).first()
        run = OnlineRunResult.objects.create(
            job=job,
            attempt=job.attempts,
            device_name=str(result.device.get("name", "")),
            device=dict(result.device),
            spec=result.spec.as_dict(),
            t1_ms=result.t1_ms,
            target_ms=result.target_ms,
            window_ms=result.window_ms,
            offered_per_s=result.offered_per_s,
            comparison=list(result.comparison),
            policies=dict(result.policies),
            trace=dict(result.trace),
            notes=list(result.notes),
            elapsed_s=result.elapsed_s,
        )
        finish_ingest(job, token)
    return run


# -- reading -----------------------------------------------------------------------------------


def sharing_rows(
    sweep: SharingSweepResult,
    *,
    workload: str | None = None,
    strategy: str | None = None,
    tenants: int | None = None,
    status: str | None = None,
) -> QuerySet[SharingMeasurement]:
    """A sweep's rows in the order they were measured (workload, R, strategy), filtered by
    workload name, strategy, R and status."""
    rows = sweep.rows.all()
    if workload:
        rows = rows.filter(workload=workload)
    if strategy:
        rows = rows.filter(strategy=strategy)
    if tenants is not None:
        rows = rows.filter(tenants=tenants)
    if status:
        rows = rows.filter(status=status)
    return rows
