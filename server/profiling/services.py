"""Profiling actions: submit, claim, report, ingest, fail, cancel, and re-route on device loss.

The API views, the CLI and the worker tasks all call these; none of them writes a job's state
by itself. Worker-side calls carry the worker's run token, and each of their writes only lands
while the job is still claimed by that token, so a worker that was presumed dead and comes back
cannot overwrite what its successor did.
"""

from __future__ import annotations

import functools
import io
import json
import logging
import math
import weakref
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import orjson
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.db.models import Count, Exists, Field, JSONField, Model, OuterRef, Q, QuerySet
from django.utils import timezone

from devicelab.backends.base import OpTiming, ProfileResult, UnsupportedSetting
from devicelab.backends.profile_record import ProfileRecord
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.spec import SpecError
from server.accounts.models import Team
from server.devices.models import Device, DeviceKind, DeviceStatus
from server.networks.models import NetworkModel
from server.networks.services import check_model_runs_on, model_not_ready_message
from server.profiling.models import (
    MAX_ATTEMPTS,
    TRANSITIONS,
    JobKind,
    JobResult,
    JobState,
    OperatorTiming,
    ProfilingJob,
)
from server.taskqueue import app, device_queue, send_after_commit, send_profiling_job, try_send

log = logging.getLogger(__name__)

# -- submission --------------------------------------------------------------------------------


def validate_settings(device: Device, raw: Any) -> dict[str, Any]:
    """Check job settings against ``ProfileSettings``' declaration and what the device declared it
    can run; return them complete, or raise a ``ValidationError`` on ``settings`` that names the
    bad key and value (and, for a setting the device cannot honour, what it offers).

    Types and bounds are the dataclass's own check; here is only what needs the device: the
    backend its kind, a core cluster's name its core ids, and its ``Capabilities``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValidationError({"settings": f"settings must be a JSON object, got {type(raw).__name__}"})
    raw = dict(raw)
    raw.setdefault("backend", device.kind)
    raw.setdefault("breakdown", django_settings.LATENCYLAB_TIME_BREAKDOWN)
    capabilities = device.declared_capabilities()

    def refused(exc: UnsupportedSetting) -> ValidationError:
        return ValidationError({"settings": f"device {device.name!r} (#{device.pk}) cannot run this job: {exc}"})

    if isinstance(raw.get("cores"), str):
        # a named cluster ("big", "little") of a phone: its core ids
        if capabilities is None or not capabilities.core_clusters:
            raise ValidationError(
                {
                    "settings": f"settings.cores {raw['cores']!r} names a core cluster; this device has none: give core ids"
                }
            )
        try:
            raw["cores"] = list(capabilities.cluster_cores(raw["cores"]))
        except UnsupportedSetting as exc:
            raise refused(exc) from None
    try:
        parsed = ProfileSettings.from_dict(raw)
    except SpecError as exc:
        raise ValidationError({"settings": f"settings.{exc}"}) from None
    except ValueError as exc:  # an unknown key
        raise ValidationError({"settings": str(exc)}) from None
    if parsed.backend != device.kind:
        raise ValidationError(
            {
                "settings": f"settings.backend {parsed.backend!r} does not match device "
                f"{device.name!r} (#{device.pk}), which is a {device.kind} device"
            }
        )
    if capabilities is not None:
        try:
            capabilities.check(parsed)
        except UnsupportedSetting as exc:
            raise refused(exc) from None
    return parsed.as_dict()  # a cluster name is now its core ids; the worker records the name


def dispatch_job(job_id: int, device_id: int) -> bool:
    """Send the message that wakes the device's worker for a queued job, and note when.

    False, with a warning in the log, when the broker cannot take it (down, restarting): the job
    stays queued in the database, the truth, and the device's agent sends it again later
    (``resend_lost_jobs``).
    """
    if not try_send(
        send_profiling_job,
        job_id,
        device_id,
        what=f"job {job_id} stays queued",
        then=f"the agent of device #{device_id} will send it again",
    ):
        return False
    ProfilingJob.objects.filter(pk=job_id).update(sent_at=timezone.now())
    return True


def _send_if_queued(job_id: int) -> None:
    """Send a job's message, and note when, if it is still queued (cancelled or failed before the
    commit: nothing to run)."""
    job = ProfilingJob.objects.filter(pk=job_id, state=JobState.QUEUED).only("pk", "device_id").first()
    if job is not None:
        send_profiling_job(job.pk, job.device_id)
        ProfilingJob.objects.filter(pk=job.pk).update(sent_at=timezone.now())


def _enqueue_on_commit(job_id: int) -> None:
    """Hand the job to the broker once the transaction that made it queued has committed."""
    send_after_commit(
        _send_if_queued, job_id, what=f"job {job_id} stays queued", then="its device's agent will send it again"
    )


def check_device_takes_jobs(device: Device) -> None:
    """Raise a ``ValidationError`` on ``device`` when no job can be queued on it: a device known
    only from imported measurements, or one that is offline (or whose heartbeat is stale)."""
    if device.kind == DeviceKind.IMPORTED:
        source = (device.hardware or {}).get("source", "another lab")
        raise ValidationError(
            {
                "device": f"device {device.name!r} (#{device.pk}) is known only from measurements imported from "
                f"{source}: no worker holds it, so it cannot run profiling jobs; ask its predictors instead "
                "(POST /api/predict/)"
            }
        )
    # A device whose worker stopped heart-beating may not be swept offline yet (the agents'
    # loop owns the sweep): a stale heartbeat counts as offline here, without sweeping.
    device.refresh_from_db()
    stale = Device.objects.stale(timezone.now(), django_settings.LATENCYLAB_OFFLINE_AFTER_SECONDS)
    if device.status == DeviceStatus.OFFLINE or stale.filter(pk=device.pk).exists():
        since = f" since {device.offline_since.isoformat(timespec='seconds')}" if device.offline_since else ""
        raise ValidationError(
            {
                "device": f"device {device.name!r} (#{device.pk}) is offline{since}; "
                "choose an online device (GET /api/devices/)"
            }
        )


def queue_job(
    team: Team,
    device: Device,
    *,
    kind: str,
    settings: dict[str, Any],
    user: Any = None,
    model: NetworkModel | None = None,
    warnings: list[str] | None = None,
) -> ProfilingJob:
    """Create a queued job of any kind with checked settings; it is enqueued when the
    transaction commits."""
    with transaction.atomic():
        job = ProfilingJob.objects.create(
            team=team,
            model=model,
            kind=kind,
            device=device,
            settings=settings,
            warnings=list(warnings or ()),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        _enqueue_on_commit(job.pk)
    return job


def submit_profiling_job(
    team: Team, model: NetworkModel, device: Device, settings: Any, user: Any = None
) -> ProfilingJob:
    """Queue a job that profiles ``model`` on ``device``; it is enqueued when the transaction commits."""
    if model.team_id != team.pk:
        raise ValidationError({"model": f"there is no model #{model.pk} in team {team.name!r}"})
    if not model.is_ready:
        raise ValidationError({"model": model_not_ready_message(model)})
    check_device_takes_jobs(device)
    check_model_runs_on(model, device)
    clean = validate_settings(device, settings)
    return queue_job(
        team,
        device,
        kind=JobKind.PROFILE,
        settings=clean,
        user=user,
        model=model,
        warnings=settings_cautions(device, clean),
    )


def settings_cautions(device: Device, clean: dict[str, Any]) -> list[str]:
    """What checked settings measure other than one may think on ``device`` (``Capabilities.cautions``)."""
    capabilities = device.declared_capabilities()
    return capabilities.cautions(ProfileSettings.from_dict(clean)) if capabilities is not None else []


def cancel_job(job: ProfilingJob, user: Any = None) -> bool:
    """Cancel a queued or running job, recording ``user`` as who cancelled it; False when it had
    already finished."""
    if not job.cancel(by=user):
        job.refresh_from_db()
        return False
    release_device(job.device_id)
    return True


def rerun_job(job: ProfilingJob, user: Any = None) -> ProfilingJob:
    """Queue a new job profiling the same model on the same device with the same settings as the
    finished profiling job ``job`` (through ``submit_profiling_job``, which checks them again)."""
    if job.kind != JobKind.PROFILE or job.model is None:
        raise ValidationError(
            {"job": f"job #{job.pk} is a {job.get_kind_display().lower()}, not a profile to run again"}
        )
    if not job.is_finished:
        raise ValidationError({"job": f"job #{job.pk} is still {job.state}; run it again once it has finished"})
    return submit_profiling_job(job.team, job.model, job.device, dict(job.settings), user=user)


# -- the worker's side -------------------------------------------------------------------------


def claim_job(job_id: int, worker_token: str, device_id: int | None = None, key: str = "") -> ProfilingJob | None:
    """Take a queued job for the worker run ``worker_token``; None when another run took it
    first or it is no longer queued. With ``device_id``, only while the job is still routed to
    that device: a message left in an offline device's queue must not run a job moved elsewhere.
    ``key``: the claiming call's (``ProfilingJob.claim_key``)."""
    job = ProfilingJob.objects.filter(pk=job_id).first()
    if job is None or not job.start(worker_token, device_id=device_id, key=key):
        return None
    Device.objects.filter(pk=job.device_id, status=DeviceStatus.ONLINE).update(status=DeviceStatus.BUSY)
    return job


def report_progress(job_id: int, worker_token: str, fraction: float, message: str = "") -> bool:
    """Record progress; False means the job was cancelled or is no longer this run's: stop."""
    fraction = min(max(float(fraction), 0.0), 1.0)
    return (
        ProfilingJob.objects.filter(pk=job_id, state=JobState.RUNNING, claimed_by=worker_token).update(
            progress=fraction, progress_message=message[:200], progress_at=timezone.now()
        )
        == 1
    )


def fail_job(job_id: int, worker_token: str, reason: str) -> bool:
    """Mark this run's job failed with a reason a person can act on; False if it was not this run's."""
    job = ProfilingJob.objects.filter(pk=job_id).first()
    if job is None or not job.fail(reason, token=worker_token):
        return False
    release_device(job.device_id)
    return True


def retry_job(job_id: int, worker_token: str, reason: str) -> str:
    """An infrastructure failure during this run's attempt (a phone unplugged mid-run, an adb
    transport error, a timeout): the job goes back to the queue for another attempt on its
    device, or on an equivalent one if the device goes offline meanwhile; after
    ``MAX_ATTEMPTS`` attempts it fails saying why. Returns ``"retried"``, ``"failed"`` or
    ``"not-mine"`` (cancelled, or taken over)."""
    with transaction.atomic():
        job = _attempt_of(job_id, worker_token)
        if job is None:
            return "not-mine"
        outcome = _retry_or_fail(job, worker_token, reason)
    release_device(job.device_id)
    return outcome


# The deaths of the measuring process that fail a job: one may be the machine's (an out-of-memory
# kill of a neighbour's making, an operator's kill -9); the same job killing it again is the model's.
PROCESS_DEATHS_TO_FAIL = 2


def process_died(job_id: int, worker_token: str, reason: str) -> str:
    """The process measuring this run's attempt died (killed, out of memory, a runtime crash).
    A first death is retried as the machine's failure (``retry_job``); a second death of the same
    job fails it as the model's, saying so. Returns ``"retried"``, ``"failed"`` or
    ``"not-mine"``."""
    with transaction.atomic():
        job = _attempt_of(job_id, worker_token)
        if job is None:
            return "not-mine"
        deaths = job.process_deaths + 1
        ProfilingJob.objects.filter(pk=job_id).update(process_deaths=deaths)
        if deaths >= PROCESS_DEATHS_TO_FAIL:
            job.fail(
                f"{reason}; the process measuring this job died in {deaths} of its attempts, so the model is "
                "taken to crash the runtime (one death is retried as the machine's failure)",
                token=worker_token,
            )
            outcome = "failed"
        else:
            outcome = _retry_or_fail(job, worker_token, f"{reason} (retried: one death may be the machine's)")
    release_device(job.device_id)
    return outcome


def _attempt_of(job_id: int, worker_token: str) -> ProfilingJob | None:
    """The job, locked, while it runs under ``worker_token``; None otherwise."""
    job = ProfilingJob.objects.select_for_update().filter(pk=job_id).first()
    if job is None or job.state != JobState.RUNNING or job.claimed_by != worker_token:
        return None
    return job


def _retry_or_fail(job: ProfilingJob, worker_token: str, reason: str) -> str:
    """Inside the transaction that locked the running ``job``: back to the queue with a note
    (``"retried"``), or failed past ``MAX_ATTEMPTS`` (``"failed"``)."""
    note = f"attempt {job.attempts} lost: {reason}"
    if job.attempts >= MAX_ATTEMPTS:
        job.fail(
            f"{reason}; the job was attempted {job.attempts} times (limit {MAX_ATTEMPTS}), so it is not retried",
            token=worker_token,
        )
        return "failed"
    job.requeue(worker_token)
    ProfilingJob.objects.filter(pk=job.pk).update(moved_from=f"{job.moved_from}; {note}" if job.moved_from else note)
    _enqueue_on_commit(job.pk)
    return "retried"


# COPY's text format: backslash, tab, newline and carriage return are escaped; NULL is \N.
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_COPY_NULL = "\\N"
# One encoder for every row: json.dumps with options builds a new encoder on each call.
_to_json = json.JSONEncoder(separators=(",", ":")).encode


def _copy_line(row: tuple[Any, ...]) -> str:
    """One timing row (``TIMING_COLUMNS`` order) as a line of COPY text."""
    rid, index, name, op_type, kernel, ins, outs, attrs, mean, median, p90, std, n, fused = row
    e = _COPY_ESCAPES
    return (
        "\t".join(
            (
                str(rid),
                _COPY_NULL if index is None else str(index),
                name.translate(e),
                op_type.translate(e),
                kernel.translate(e),
                _to_json(ins).translate(e),
                _to_json(outs).translate(e),
                _to_json(attrs).translate(e),
                _COPY_NULL if mean is None else repr(float(mean)),
                _COPY_NULL if median is None else repr(float(median)),
                _COPY_NULL if p90 is None else repr(float(p90)),
                _COPY_NULL if std is None else repr(float(std)),
                _COPY_NULL if n is None else str(n),
                fused.translate(e),
            )
        )
        + "\n"
    )


TIMING_COLUMNS = (
    "result_id",
    "index",
    "name",
    "op_type",
    "kernel",
    "input_shapes",
    "output_shapes",
    "attrs",
    "mean",
    "median",
    "p90",
    "std",
    "n",
    "fused_into",
)


def _reported(value: float | None) -> float | None:
    """A statistic as stored: NaN (the runtime did not report it) becomes null."""
    return None if value is None or math.isnan(value) else value


def timing_rows(result_id: int, ops: Iterable[OpTiming]) -> Iterator[tuple[Any, ...]]:
    """One tuple per operator timing, in ``TIMING_COLUMNS`` order."""
    for op in ops:
        s = op.stats
        yield (
            result_id,
            op.index,
            op.name,
            op.type,
            op.kernel or "",
            [list(x) for x in op.input_shapes],
            [list(x) for x in op.output_shapes],
            dict(op.attrs),
            None if s is None else s.mean,
            None if s is None else _reported(s.median),
            None if s is None else _reported(s.p90),
            None if s is None else _reported(s.std),
            None if s is None else s.n,
            op.fused_into or "",
        )


def timing_copy_sql() -> str:
    """The COPY statement that reads timing rows in text format from STDIN."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in TIMING_COLUMNS)
    return f"COPY {quote(OperatorTiming._meta.db_table)} ({columns}) FROM STDIN"


def timing_copy_text(rows: Iterable[tuple[Any, ...]]) -> tuple[str, int]:
    """Timing rows as COPY text, with their count."""
    lines = [_copy_line(row) for row in rows]
    return "".join(lines), len(lines)


def _copy_in(sql: str, text: str) -> None:
    """Run ``COPY ... FROM STDIN`` with ``text`` as its data, in the current transaction."""
    with connection.cursor() as cursor:
        raw = cursor.cursor
        if hasattr(raw, "copy_expert"):  # psycopg2
            raw.copy_expert(sql, io.StringIO(text))
        else:  # psycopg 3
            with raw.copy(sql) as copy:
                copy.write(text)


def copy_timing_rows(rows: Iterable[tuple[Any, ...]]) -> int:
    """Insert timing rows with PostgreSQL COPY (inside the current transaction); returns the count."""
    text, count = timing_copy_text(rows)
    if count:
        _copy_in(timing_copy_sql(), text)
    return count


def bulk_create_timing_rows(rows: Iterable[tuple[Any, ...]], batch_size: int = 5000) -> int:
    """Insert timing rows with the ORM's multi-row INSERT; returns the count."""
    objs = [OperatorTiming(**dict(zip(TIMING_COLUMNS, row, strict=True))) for row in rows]
    OperatorTiming.objects.bulk_create(objs, batch_size=batch_size)
    return len(objs)


# The fast form of a result's timings for COPY: CSV with a tab delimiter and a quote character
# (\x01) that JSON never holds raw (control characters are escaped in it) and operator names do
# not, so no field is quoted or escaped, backslashes included (CSV gives them no meaning), and a
# row is one f-string. An empty unquoted field is NULL, except in the text columns
# (FORCE_NOT_NULL), where it is "" (no kernel, not fused). A text field holding a tab, a newline,
# a carriage return or \x01 shows in the text's counts, and then the rows are built field by field
# in the text format instead (``timing_copy_text``, every field escaped).
_CSV_QUOTE = "\x01"
_CSV_FIELDS = len(TIMING_COLUMNS)
_NO_STATS = "\t" * 4  # mean, median, p90, std and n: a fused operator has none


@functools.cache
def timing_csv_sql() -> str:
    """The (PostgreSQL) COPY statement that reads ``timing_csv_text``."""
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in TIMING_COLUMNS)
    text_columns = ", ".join(quote(c) for c in ("name", "op_type", "kernel", "fused_into"))
    return (
        f"COPY {quote(OperatorTiming._meta.db_table)} ({columns}) FROM STDIN "
        f"WITH (FORMAT csv, DELIMITER E'\\t', QUOTE E'\\x01', FORCE_NOT_NULL ({text_columns}))"
    )


def _stat_text(value: float | None) -> str:
    """A reported statistic as CSV: empty (null) when absent or NaN."""
    return "" if value is None or value != value else repr(float(value))


def timing_csv_text(result_id: int, ops: Iterable[OpTiming]) -> tuple[str, int] | None:
    """A result's timings as ``timing_csv_sql`` reads them, with their count; None when a text field
    holds a character the form cannot carry unquoted, or a shape or attribute holds what orjson
    does not write (keys that are not strings, numpy numbers): then ``timing_copy_text`` does."""
    rid = str(result_id)
    dumps = orjson.dumps
    lines = []
    try:
        for op in ops:
            s = op.stats
            if s is None:
                stats = _NO_STATS
            else:
                mean = "" if s.mean is None else repr(float(s.mean))
                n = "" if s.n is None else s.n
                stats = f"{mean}\t{_stat_text(s.median)}\t{_stat_text(s.p90)}\t{_stat_text(s.std)}\t{n}"
            index = "" if op.index is None else op.index
            # one f-string a row, orjson inline: a function call per field cost 0.05 ms a result
            lines.append(
                f"{rid}\t{index}\t{op.name}\t{op.type}\t{op.kernel or ''}\t{dumps(op.input_shapes).decode()}\t"
                f"{dumps(op.output_shapes).decode()}\t{dumps(op.attrs).decode()}\t{stats}\t{op.fused_into or ''}\n"
            )
    except TypeError:  # orjson.JSONEncodeError
        return None
    text = "".join(lines)
    count = len(lines)
    # Only a text field can add a tab or a newline (JSON escapes them): the counts say whether one did.
    if text.count("\t") != (_CSV_FIELDS - 1) * count or text.count("\n") != count or "\r" in text or _CSV_QUOTE in text:
        return None
    return text, count


def insert_timings(results: Iterable[tuple[int, Iterable[OpTiming]]]) -> int:
    """Insert the operator timings of results (``(result id, timings)``), all in one COPY on
    PostgreSQL (the ORM's bulk INSERT elsewhere), in the current transaction; returns the count."""
    results = list(results)
    if connection.vendor != "postgresql":
        return bulk_create_timing_rows(row for rid, ops in results for row in timing_rows(rid, ops))
    texts = []
    count = 0
    for rid, ops in results:
        csv = timing_csv_text(rid, ops)
        if csv is None:  # a name with a tab, JSON orjson does not write: this batch in the text format
            return copy_timing_rows(row for rid, ops in results for row in timing_rows(rid, ops))
        texts.append(csv[0])
        count += csv[1]
    if count:
        _copy_in(timing_csv_sql(), "".join(texts))
    return count


def _result_row(job: ProfilingJob, record: ProfileRecord) -> JobResult:
    """The (unsaved) result row of a job's record."""
    e2e = record.e2e
    return JobResult(
        job=job,
        attempt=job.attempts,
        e2e_mean=e2e.mean,
        e2e_median=_reported(e2e.median),
        e2e_p90=_reported(e2e.p90),
        e2e_std=_reported(e2e.std),
        e2e_min=_reported(e2e.min),
        e2e_max=_reported(e2e.max),
        e2e_cv=_reported(e2e.cv),
        e2e_n=e2e.n,
        noisy=e2e.noisy,
        flags=list(record.flags),
        samples_ms=[float(x) for x in record.samples_ms],
        load_ms=record.load_ms,
        first_run_ms=record.first_run_ms,
        peak_memory_mb=record.peak_memory_mb,
        environment=dict(record.environment),
        settings=record.settings.as_dict(),
        device_info=record.device.as_dict(),
        cold_starts=record.cold_starts,
        time_breakdown=record.time_breakdown,
    )


def _column(model: type[Model], name: str) -> str:
    """The quoted column of a model's field."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field)
    return connection.ops.quote_name(field.column)


# The lock of a posted result and the store of one result run once per result with only their
# values changing: each database session plans them once (PREPARE) instead of once a result
# (0.2-0.3 ms of a 4-5 ms ingest, issue 33). A prepared statement lives as long as its session
# (a rollback keeps it; a new connection prepares again): a pooler that hands one session to
# several clients in turn (PgBouncer in transaction mode) would lose them.
_prepared: weakref.WeakKeyDictionary[Any, set[str]] = weakref.WeakKeyDictionary()


def _execute_prepared(cursor: Any, name: str, sql: str, params: Sequence[Any]) -> None:
    """Run ``sql`` (``%s`` placeholders) with ``params`` as the session's prepared statement
    ``name``, preparing it on the session's first use (psycopg2; other drivers execute it)."""
    raw = cursor.cursor
    if not hasattr(raw, "copy_expert"):  # psycopg 3: not measured, executed as it is
        cursor.execute(sql, params)
        return
    names = _prepared.setdefault(raw.connection, set())
    if name not in names:
        parts = sql.split("%s")
        numbered = "".join(f"{part}${i}" for i, part in enumerate(parts[:-1], start=1)) + parts[-1]
        cursor.execute(f"PREPARE {name} AS {numbered}")
        names.add(name)
    cursor.execute(f"EXECUTE {name}({', '.join(['%s'] * len(params))})", params)


_RESULT_FIELDS = [f for f in JobResult._meta.concrete_fields if not f.primary_key]  # _store_sql's VALUES order


@functools.lru_cache(maxsize=64)  # built once per batch size: building it took 40 us of a 4 ms ingest
def _store_sql(count: int) -> str:
    """One PostgreSQL statement that inserts ``count`` result rows and, in the same round trip,
    moves their jobs (by id, each with its run token) RUNNING -> SUCCEEDED for their run and
    frees their busy devices that have no other running job; it answers each result's job id
    and id, and how many jobs moved. Its parts read one snapshot, from before the moves, so the
    device's check leaves the jobs moving out by id."""
    job, device, result = ProfilingJob._meta, Device._meta, JobResult._meta
    q = connection.ops.quote_name
    columns = ", ".join(q(f.column) for f in _RESULT_FIELDS)
    marks = "(" + ", ".join(["%s"] * len(_RESULT_FIELDS)) + ")"

    def jc(name: str) -> str:
        return _column(ProfilingJob, name)

    def dc(name: str) -> str:
        return _column(Device, name)

    if count == 1:  # plain values: planned once when prepared (an array's size changes the plan)
        in_ids, token, not_in = "= %s", "%s", "<> %s"
    else:  # each job's own run token found by the job's place among the ids
        in_ids, not_in = "= ANY(%s::bigint[])", "<> ALL(%s::bigint[])"
        token = f"(%s::text[])[array_position(%s::bigint[], j.{jc('id')})]"
    return (
        f"WITH stored AS (INSERT INTO {q(result.db_table)} ({columns}) VALUES {', '.join([marks] * count)} "
        f"RETURNING {_column(JobResult, 'job')} AS job_id, {_column(JobResult, 'id')} AS id), "
        f"done AS (UPDATE {q(job.db_table)} AS j SET {jc('state')} = %s, "
        f"{jc('progress')} = 1.0, {jc('progress_message')} = 'done', {jc('finished_at')} = %s "
        f"WHERE j.{jc('id')} {in_ids} AND j.{jc('state')} = %s AND j.{jc('claimed_by')} = {token} "
        f"RETURNING j.{jc('id')}), "
        f"freed AS (UPDATE {q(device.db_table)} AS d SET {dc('status')} = %s "
        f"WHERE d.{dc('id')} {in_ids} AND d.{dc('status')} = %s "
        f"AND NOT EXISTS (SELECT 1 FROM {q(job.db_table)} AS o WHERE o.{jc('device')} = d.{dc('id')} "
        f"AND o.{jc('state')} = %s AND o.{jc('id')} {not_in})) "
        "SELECT job_id, id, (SELECT count(*) FROM done) FROM stored"
    )


assert JobState.SUCCEEDED in TRANSITIONS[JobState.RUNNING]  # the move _store_sql makes


def _result_value(field: Field[Any, Any], value: Any) -> Any:
    """A result row's value as the INSERT sends it: JSON as text, dumped by orjson (a NaN, which
    PostgreSQL's JSON cannot hold, becomes null, as in the statistics' columns), what orjson
    cannot dump and every other field's value prepared by its field, as the ORM prepares it.
    The ORM's JSON adapter took a tenth of a millisecond a result more."""
    if isinstance(field, JSONField):
        try:
            return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
        except TypeError:
            pass
    return field.get_db_prep_save(value, connection)


def _store_rows(rows: list[JobResult], checked: list[tuple[ProfilingJob, str, ProfileRecord]], now: datetime) -> int:
    """Insert result rows (stored at ``now``), their jobs' success and their devices' release, in
    one statement (``_store_sql``); the rows get their ids. Answers how many jobs moved."""
    for row in rows:
        row.created_at = now
    values = [_result_value(f, getattr(row, f.attname)) for row in rows for f in _RESULT_FIELDS]
    if len(checked) == 1:
        ((job, token, _),) = checked
        values += [JobState.SUCCEEDED, now, job.pk, JobState.RUNNING, token]
        values += [DeviceStatus.ONLINE, job.device_id, DeviceStatus.BUSY, JobState.RUNNING, job.pk]
    else:
        ids = [job.pk for job, _, _ in checked]
        values += [JobState.SUCCEEDED, now, ids, JobState.RUNNING, [token for _, token, _ in checked], ids]
        values += [
            DeviceStatus.ONLINE,
            [job.device_id for job, _, _ in checked],
            DeviceStatus.BUSY,
            JobState.RUNNING,
            ids,
        ]
    with connection.cursor() as cursor:
        if len(checked) == 1:
            _execute_prepared(cursor, "latencylab_store_result", _store_sql(1), values)
        else:
            cursor.execute(_store_sql(len(rows)), values)
        answered = cursor.fetchall()
    pks = {job_id: pk for job_id, pk, _ in answered}
    for row in rows:
        row.pk = pks[row.job_id]
        row._state.adding, row._state.db = False, connection.alias
    return int(answered[0][2])


def _succeed_jobs(checked: list[tuple[ProfilingJob, str, ProfileRecord]], now: datetime) -> int:
    """Each job succeeds (RUNNING -> SUCCEEDED for its run) and its device is free again, one
    query a job (the store's statement does this on PostgreSQL); answers how many moved."""
    moved = sum(
        ProfilingJob.objects.transition(
            job.pk,
            JobState.SUCCEEDED,
            from_states=[JobState.RUNNING],
            token=token,
            progress=1.0,
            progress_message="done",
            finished_at=now,
        )
        for job, token, _ in checked
    )
    release_devices({job.device_id for job, _, _ in checked})
    return moved


def store_results(checked: list[tuple[ProfilingJob, str, ProfileRecord]]) -> list[JobResult]:
    """Store results whose jobs the caller locked and checked (each running under its run token,
    with no result yet), in the caller's transaction: their result rows, each job's success and
    its device free again in one statement, then all their operator timings in one COPY.

    The work of ``ingest_result`` once its job is checked, for one result or several posted
    together (``server.labs.protocol.store_results``)."""
    if not checked:
        return []
    now = timezone.now()
    rows = [_result_row(job, record) for job, _, record in checked]
    if connection.vendor == "postgresql":
        moved = _store_rows(rows, checked, now)  # one round trip: the result rows, the jobs, the devices
    else:
        rows = JobResult.objects.bulk_create(rows)
        moved = _succeed_jobs(checked, now)
    if moved != len(checked):  # cannot happen under the row locks; keep the invariant loud
        raise RuntimeError(f"{len(checked) - moved} job(s) changed state while their results were being stored")
    insert_timings((row.pk, record.timings()) for row, (_, _, record) in zip(rows, checked, strict=True))
    for job, _, _ in checked:  # the instances brought up to date without reading their rows back
        job.state, job.progress, job.progress_message, job.finished_at = JobState.SUCCEEDED, 1.0, "done", now
    return rows


def ingest_result(
    job_id: int, worker_token: str, result: ProfileRecord | ProfileResult, locked: ProfilingJob | None = None
) -> JobResult | None:
    """Store a run's result and all its operator timings in one transaction; the job succeeds.

    Idempotent: a job has at most one result, and only the run that holds the claim writes it.
    A second call for the same job returns the stored result and writes nothing; a call from a
    run that no longer holds the job (cancelled, or re-queued after its worker was presumed
    dead) returns None. ``result``: as a lab machine posts it, or a backend's own. ``locked``:
    the job's row, already locked by the caller's transaction (``lock_job``).
    """
    record = result if isinstance(result, ProfileRecord) else ProfileRecord.of(result)
    # Inside the caller's transaction when it locked the job: no savepoint of its own (two round
    # trips per result), an error rolls the caller's transaction back whole.
    with transaction.atomic(savepoint=locked is None):
        # The row lock makes two concurrent ingests of one job take turns (SQLite: the
        # IMMEDIATE transaction does the same for the whole database).
        job = locked if locked is not None else ProfilingJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            return None
        # A running job has no result yet (a result is stored with the job's success, in one
        # transaction): only a job in another state can have one to hand back.
        if job.state != JobState.RUNNING:
            existing = JobResult.objects.filter(job_id=job_id).first()
            if existing is not None:
                return existing
        if job.state != JobState.RUNNING or job.claimed_by != worker_token:
            return None
        (stored,) = store_results([(job, worker_token, record)])
    return stored


def lock_job(job_id: int, *related: str, fields: Iterable[str] = ()) -> ProfilingJob | None:
    """The job's row, locked until the current transaction ends (with ``related`` rows read, not
    locked; only ``fields`` loaded when given); None when there is no such job."""
    rows = ProfilingJob.objects.select_for_update(of=("self",)).select_related(*related).filter(pk=job_id)
    if fields:
        rows = rows.only(*fields)
    return rows.order_by().first()


_FOR_RESULT = {"id", "kind", "state", "claimed_by", "attempts", "device_id"}  # what lock_job_for_result loads


@functools.cache
def _lock_for_result_sql() -> tuple[str, list[str]]:
    """``lock_job_for_result``'s (PostgreSQL) query and the job's fields it reads, in the model's
    order (as ``from_db`` takes them)."""
    q = connection.ops.quote_name
    job, device = ProfilingJob._meta, Device._meta
    loaded = [f for f in job.concrete_fields if f.attname in _FOR_RESULT]
    columns = ", ".join(f"j.{q(f.column)}" for f in loaded)
    sql = (
        f"SELECT {columns}, d.{_column(Device, 'worker')} FROM {q(job.db_table)} AS j "
        f"JOIN {q(device.db_table)} AS d ON d.{_column(Device, 'id')} = j.{_column(ProfilingJob, 'device')} "
        f"WHERE j.{_column(ProfilingJob, 'id')} = %s FOR UPDATE OF j"
    )
    return sql, [f.attname for f in loaded]


def lock_job_for_result(job_id: int) -> ProfilingJob | None:
    """The job's row, locked until the current transaction ends, holding what a posted result's
    checks and its store read: kind, state, claim, attempts, device, and the device's holder
    (``job.device.worker``); None when there is no such job.

    On PostgreSQL one plain query: building it through the ORM (``lock_job``) took longer than
    running it, a millisecond of each result's ingest."""
    if connection.vendor != "postgresql":
        return lock_job(job_id, "device", fields=(*_FOR_RESULT, "device__worker"))
    sql, fields = _lock_for_result_sql()
    with connection.cursor() as cursor:
        _execute_prepared(cursor, "latencylab_lock_for_result", sql, [job_id])
        row = cursor.fetchone()
    if row is None:
        return None
    locked = ProfilingJob.from_db(connection.alias, fields, list(row[: len(fields)]))
    locked.device = Device.from_db(connection.alias, ["id", "worker"], [row[fields.index("device_id")], row[-1]])
    return locked


def claimed_for_ingest(job_id: int, token: str, existing: QuerySet[Any]) -> ProfilingJob | None:
    """The job, locked, when it is running under ``token`` and ``existing`` (the result rows of
    its kind) holds none for it yet; None otherwise. Call it inside ``transaction.atomic()``: the
    row lock makes two concurrent ingests of one job take turns."""
    job = ProfilingJob.objects.select_for_update().filter(pk=job_id).first()
    if job is None or existing.filter(job_id=job_id).exists():
        return None
    if job.state != JobState.RUNNING or job.claimed_by != token:
        return None
    return job


def finish_ingest(job: ProfilingJob, token: str) -> None:
    """The job whose result was just stored succeeds, and its device is free again."""
    if not job.succeed(token):  # cannot happen under the row lock; keep the invariant loud
        raise RuntimeError(f"job {job.pk} changed state while its result was being stored")
    release_device(job.device_id)


def release_device(device_id: int) -> None:
    """A busy device with no running job left is idle again."""
    release_devices([device_id])


def release_devices(device_ids: Iterable[int]) -> None:
    """The busy devices among these with no running job left are idle again (one UPDATE)."""
    running = ProfilingJob.objects.filter(device=OuterRef("pk"), state=JobState.RUNNING)
    Device.objects.filter(pk__in=list(device_ids), status=DeviceStatus.BUSY).filter(~Exists(running)).update(
        status=DeviceStatus.ONLINE
    )


# -- lost workers and devices ------------------------------------------------------------------


def _requeue_or_fail(job: ProfilingJob, why: str) -> bool:
    """Put a running job whose worker was lost back in the queue, or fail it after MAX_ATTEMPTS.

    True when the job is queued again.
    """
    if job.attempts >= MAX_ATTEMPTS:
        job.fail(f"{why}; the job was attempted {job.attempts} times (limit {MAX_ATTEMPTS}), so it is not retried")
        return False
    if not job.requeue(job.claimed_by or None):
        return False
    note = f"attempt {job.attempts} lost: {why}"
    ProfilingJob.objects.filter(pk=job.pk).update(moved_from=f"{job.moved_from}; {note}" if job.moved_from else note)
    return True


def requeue_silent_jobs(now: datetime | None = None) -> list[int]:
    """Running jobs whose run reported nothing for ``LATENCYLAB_JOB_LEASE_SECONDS`` (a run reports
    at least every quarter of it) are lost, whatever their worker's heartbeat says (a process
    hung, a task that ended without a word): back to the queue with an attempt counted, or failed
    after ``MAX_ATTEMPTS``. Returns their ids."""
    now = now or timezone.now()
    lease = django_settings.LATENCYLAB_JOB_LEASE_SECONDS
    silent_since = now - timedelta(seconds=lease)
    silent = ProfilingJob.objects.running().filter(
        Q(progress_at__lt=silent_since) | Q(progress_at__isnull=True, started_at__lt=silent_since)
    )
    requeued = []
    for job in silent:
        with transaction.atomic():
            locked = _attempt_of(job.pk, job.claimed_by)
            if locked is None or (locked.progress_at or locked.started_at or now) >= silent_since:
                continue  # it ended, or reported, meanwhile
            _retry_or_fail(locked, job.claimed_by, f"its run reported nothing for {lease} s (a hung process)")
        release_device(job.device_id)
        requeued.append(job.pk)
    if requeued:
        log.warning("job(s) %s: their run went silent; queued again or failed", requeued)
    return requeued


def requeue_orphaned_jobs(worker_name: str, current_token: str) -> list[ProfilingJob]:
    """For a worker that (re)started: its devices' jobs still RUNNING under an older run token
    go back to the queue and are enqueued again. Returns the re-queued jobs."""
    orphans = ProfilingJob.objects.running().filter(device__worker=worker_name).exclude(claimed_by=current_token)
    requeued = []
    for job in orphans.select_related("device"):
        with transaction.atomic():
            if _requeue_or_fail(job, f"worker {worker_name!r} restarted while running the job"):
                _enqueue_on_commit(job.pk)
                requeued.append(job)
        release_device(job.device_id)
    return requeued


def _least_loaded_equivalent(device: Device) -> Device | None:
    """The online device equivalent to ``device`` with the fewest active jobs (idle ones first)."""
    return (
        Device.objects.equivalent_to(device)
        .online()
        .annotate(load=Count("profiling_jobs", filter=Q(profiling_jobs__state__in=[JobState.QUEUED, JobState.RUNNING])))
        .order_by("load", "status", "pk")
        .first()
    )


def _reroute_jobs(device: Device, at: datetime) -> None:
    """Running jobs of an offline device go back to the queue; then every queued job moves to an
    equivalent online device, or waits for the device to come back (``fail_jobs_waiting_too_long``
    bounds the wait)."""
    when = at.isoformat(timespec="seconds")
    for job in ProfilingJob.objects.running().on_device(device):
        _requeue_or_fail(job, f"device {device.name!r} (#{device.pk}) went offline at {when} during the job")
    _move_queued_jobs(device, when)


def _move_queued_jobs(device: Device, when: str) -> None:
    """Queued jobs of an offline device move to its least loaded equivalent online device, if any."""
    for job in ProfilingJob.objects.queued().on_device(device):
        target = _least_loaded_equivalent(device)
        if target is None:
            return  # they wait for the device to come back
        note = f"moved from device {device.name!r} (#{device.pk}), which went offline at {when}"
        if job.moved_from:
            note = f"{job.moved_from}; {note}"
        with transaction.atomic():
            moved = (
                ProfilingJob.objects.filter(pk=job.pk, state=JobState.QUEUED, device=device).update(
                    device=target, moved_from=note
                )
                == 1
            )
            if moved:
                _enqueue_on_commit(job.pk)
                log.info("job %s moved from device %s to %s", job.pk, device.pk, target.pk)


def fail_jobs_waiting_too_long(now: datetime | None = None) -> list[int]:
    """Queued jobs whose device has been offline longer than their team lets a job wait fail,
    saying since when and which limit; returns their ids."""
    now = now or timezone.now()
    failed = []
    for job in ProfilingJob.objects.waiting_on_offline_device().select_related("device", "team"):
        device, limit = job.device, job.team.offline_wait_seconds
        since = device.offline_since or now
        if now - since < timedelta(seconds=limit):
            continue
        why = f" ({device.offline_reason})" if device.offline_reason else ""
        reason = (
            f"device {device.name!r} (#{device.pk}) has been offline since {since.isoformat(timespec='seconds')}{why}, "
            f"longer than the {limit} s team {job.team.name!r} lets a job wait for it, "
            "and no equivalent device came online"
        )
        if job.fail(reason):
            failed.append(job.pk)
    return failed


def sweep_lab(now: datetime | None = None) -> list[Device]:
    """The lab-wide sweep, run by the trainer every heartbeat interval (``server.trainer``; the
    owner when no lab machine is alive) and on every lab machine's heartbeat; its writes are
    conditional, so two sweeps at once do the work once. Devices that stopped heart-beating go
    offline; jobs waiting on offline devices move to an equivalent that
    is online now, or fail once they waited longer than their team allows. Returns the devices
    marked offline in this sweep."""
    now = now or timezone.now()
    gone = mark_stale_devices_offline(now)
    requeue_silent_jobs(now)
    waiting_on = Device.objects.offline().filter(profiling_jobs__state=JobState.QUEUED).distinct()
    for device in waiting_on:
        since = device.offline_since.isoformat(timespec="seconds") if device.offline_since else "?"
        _move_queued_jobs(device, since)
    for pk in fail_jobs_waiting_too_long(now):
        log.warning("job %s failed: it waited too long for its offline device", pk)
    return gone


def _messages_waiting(queue: str) -> int | None:
    """How many messages wait in a queue, not yet taken by a consumer; None when the broker does
    not answer (the resend that follows finds out, and keeps the job queued)."""
    from kombu.exceptions import ChannelError

    try:
        with app.pool.acquire(block=True) as conn:
            conn.ensure_connection(max_retries=1)
            return int(conn.default_channel.queue_declare(queue=queue, passive=True).message_count)
    except ChannelError:
        return 0  # Redis drops an empty queue's list: no queue, no message
    except Exception:  # noqa: BLE001 - kombu, redis and socket errors alike
        return None


def resend_lost_jobs(
    device_ids: Iterable[int], now: datetime | None = None, force: bool = False, exclude: Iterable[int] = ()
) -> list[int]:
    """Queued jobs of these (online, idle) devices whose message seems lost are sent again;
    returns their ids.

    A device is idle when no job of it is running and none started or finished within
    ``LATENCYLAB_RESEND_AFTER_SECONDS``: its worker has had time to take every message in its
    queue, so a job still queued whose message went out before that has lost it (a broker
    restarted without persistence, a device process killed after it took the message, a broker
    that was down at submission), unless its queue still holds messages: a consumer still
    starting looks idle too, but then what it has not taken waits there. ``force`` re-sends every
    queued job of the devices at once (a worker that just started: whatever an earlier run held
    is gone). A duplicate message is harmless: the task claims its job with a conditional update.
    ``exclude``: jobs just sent.
    """
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=django_settings.LATENCYLAB_RESEND_AFTER_SECONDS)
    sent = []
    for device in Device.objects.filter(pk__in=list(device_ids)).online():
        jobs = ProfilingJob.objects.on_device(device)
        if not force and (jobs.running().exists() or jobs.active_since(cutoff).exists()):
            continue
        lost = (jobs.queued() if force else jobs.unsent_since(cutoff)).exclude(pk__in=list(exclude))
        if not force and lost.exists() and _messages_waiting(device_queue(device.pk)):
            # Its consumer has not taken every message yet (its process is still starting, or
            # forking the pool process of the next job): nothing of it is lost, and a copy sent
            # now would run after the original as a duplicate.
            continue
        for job in lost.order_by("created_at", "pk"):
            if not dispatch_job(job.pk, device.pk):
                break  # the broker is down: the next beat tries again
            sent.append(job.pk)
    if sent:
        log.warning("sent again the message(s) of queued job(s) %s, whose message(s) seemed lost", sent)
    return sent


def take_devices_offline(reasons: dict[int, str], now: datetime | None = None) -> list[int]:
    """A worker saw devices go (phones unplugged, ``offline`` or ``unauthorized`` on adb, a dead
    hub): they go offline now, each with its reason, without waiting for their heartbeats to go
    stale. All are marked first and only then are their jobs re-routed, so that a job never moves
    to a phone that left in the same moment: running jobs go back to the queue, queued jobs move
    to an equivalent online device or wait. Returns the ids of the devices marked offline now
    (the others were offline already; their reason is updated)."""
    now = now or timezone.now()
    gone = []
    for device_id, reason in reasons.items():
        # No last heartbeat: the machine said it left (``said_gone``), and a heartbeat whose
        # list predates that does not bring it back.
        marked = (
            Device.objects.online()
            .filter(pk=device_id)
            .update(status=DeviceStatus.OFFLINE, offline_since=now, offline_reason=reason[:300], last_heartbeat=None)
        )
        if marked:
            gone.append(device_id)
        else:
            Device.objects.filter(pk=device_id).update(offline_reason=reason[:300], last_heartbeat=None)
    for device in Device.objects.filter(pk__in=gone):
        log.warning(
            "device %s (#%s) of worker %r went offline: %s", device.name, device.pk, device.worker, reasons[device.pk]
        )
        _reroute_jobs(device, now)
    return gone


def mark_stale_devices_offline(now: datetime | None = None) -> list[Device]:
    """Devices that stopped heart-beating go offline; their running jobs are re-queued, and their
    queued jobs move to an equivalent online device or wait. Returns the devices marked offline."""
    now = now or timezone.now()
    after = django_settings.LATENCYLAB_OFFLINE_AFTER_SECONDS
    gone = []
    for device in Device.objects.stale(now, after):
        # Conditional, so that of two processes sweeping at once only one handles a device.
        if (
            not Device.objects.stale(now, after)
            .filter(pk=device.pk)
            .update(
                status=DeviceStatus.OFFLINE,
                offline_since=now,
                offline_reason=f"no heartbeat from worker {device.worker!r} for {after} s",
            )
        ):
            continue
        device.refresh_from_db()
        log.warning(
            "device %s (#%s) of worker %r went offline: last heartbeat %s",
            device.name,
            device.pk,
            device.worker,
            device.last_heartbeat,
        )
        _reroute_jobs(device, now)
        gone.append(device)
    return gone
