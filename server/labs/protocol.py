"""The server's side of the lab protocol (``devicelab.lab_protocol``): what a lab machine may do
with its token, each call a verb-named function over the profiling and device services.

A lab machine acts only on what is its own: device rows held by its name (``NAME`` or
``NAME#instance``), jobs routed to those devices, and the model files of jobs one of its runs
holds. Anything else is ``NotYours`` (answered 403), whatever the ids say.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction

from devicelab.backends.profile_record import ProfileRecord
from devicelab.backends.profile_settings import DEVICE_KINDS
from devicelab.fusion.results import FusionPlanRecord, FusionSweepRecord
from devicelab.graph import GraphError, graph_to_dict
from devicelab.lab_protocol import (
    BatchedAnswer,
    Claim,
    ClaimAnswer,
    ClaimedJob,
    DevicesGone,
    Ending,
    Heartbeat,
    HeartbeatAnswer,
    ModelRef,
    Outcome,
    Progress,
    Registered,
    RegisteredDevice,
    Registration,
    ResultAnswer,
    ResultBatch,
    ResultBatchAnswer,
    ResultPost,
)
from devicelab.remote.results import RemoteRunRecord
from devicelab.tenancy.online_on_device import OnlineRunRecord
from devicelab.tenancy.results import SharingSweepRecord
from devicelab.wire import PayloadError
from server.devices.models import Device, DeviceStatus
from server.devices.services import heartbeat, register_devices
from server.fusion.services import graphs_for_job, ingest_plan, ingest_sweep, sweep_rows_for_plan
from server.labs.models import LabMachine, machine_name_of_worker
from server.networks.models import NetworkModel
from server.networks.services import import_limits
from server.profiling.models import JobState, ProfilingJob
from server.profiling.services import (
    claim_job,
    fail_job,
    ingest_result,
    lock_job_for_result,
    process_died,
    report_progress,
    requeue_orphaned_jobs,
    resend_lost_jobs,
    retry_job,
    sweep_lab,
    take_devices_offline,
)
from server.profiling.services import store_results as store_profiles
from server.remote.services import ingest_remote
from server.taskqueue import device_queue
from server.tenancy.services import ingest_online, ingest_sharing

log = logging.getLogger("latencylab.labs")

# Formats a device may run as uploaded (a phone a .tflite, the CPU's onnxruntime an .onnx): a
# claimed job of such a model names its file, which the machine fetches if its device runs it.
RUN_AS_UPLOADED = frozenset({"tflite", "onnx"})


class NotYours(PermissionError):
    """The lab machine asked about a device, job or file that is not its own."""


# -- what is the machine's own ------------------------------------------------------------------


def _check_worker(lab: LabMachine, worker: str) -> None:
    if not lab.owns_worker(worker):
        raise NotYours(f"lab machine {lab.name!r} cannot act as worker {worker!r}: its workers are named {lab.name!r}")


def _own_device(lab: LabMachine, pk: int) -> Device:
    device = lab.devices().filter(pk=pk).first()
    if device is None:
        raise NotYours(f"device #{pk} is not held by lab machine {lab.name!r}")
    return device


def _own_job(lab: LabMachine, job_id: int) -> ProfilingJob | None:
    """The job, with its device and model (a claim's payload), when it is routed to one of the
    machine's devices; None when it does not exist."""
    job = ProfilingJob.objects.select_related("device", "model").filter(pk=job_id).first()
    if job is not None and not lab.owns_worker(job.device.worker):
        raise NotYours(f"job #{job_id} is not routed to a device of lab machine {lab.name!r}")
    return job


# -- devices --------------------------------------------------------------------------------------


def _check_rows(reg: Registration) -> None:
    """What a device row cannot hold is refused naming the key, before any row is written (a
    ``DeviceInfo`` reads its own JSON leniently; the database would answer a 500)."""
    limits = {key: Device._meta.get_field(key).max_length or 0 for key in ("worker", "identity", "name")}  # type: ignore[union-attr]
    if len(reg.worker) > limits["worker"]:
        raise PayloadError(f"registration.worker is longer than {limits['worker']} characters")
    for i, info in enumerate(reg.devices):
        where = f"registration.devices[{i}]"
        if info.kind not in DEVICE_KINDS:  # "imported" devices are held by no machine
            raise PayloadError(f"{where}.kind must be one of {list(DEVICE_KINDS)}, got {info.kind!r:.80}")
        for key in ("identity", "name"):
            value = getattr(info, key)
            if not isinstance(value, str) or not 0 < len(value) <= limits[key]:
                raise PayloadError(f"{where}.{key} must be a text of 1 to {limits[key]} characters, got {value!r:.80}")


def register_lab_devices(lab: LabMachine, reg: Registration) -> Registered:
    """Register (or refresh) the devices a machine found; at a run's start, re-queue what its
    earlier runs left running and wake every queued job of its devices."""
    _check_worker(lab, reg.worker)
    _check_rows(reg)
    identities = [info.identity for info in reg.devices]
    for row in Device.objects.filter(identity__in=identities).exclude(worker=""):
        holder = machine_name_of_worker(row.worker)
        if holder != lab.name and LabMachine.objects.active().filter(name=holder).exists():
            # A device of another machine's is not taken over by naming its identity: that
            # would hand this token the other lab's jobs and files.
            raise NotYours(
                f"device {row.identity!r} is held by lab machine {holder!r}; "
                "revoke that machine (latencylab lab revoke) before another one takes it"
            )
    rows = register_devices(reg.worker, reg.devices)
    requeued: list[int] = []
    if reg.start:
        requeued = [j.pk for j in requeue_orphaned_jobs(reg.worker, reg.run)]
        resend_lost_jobs([d.pk for d in rows], force=True, exclude=requeued)
    return Registered(
        worker=reg.worker,
        devices=[RegisteredDevice(d.pk, d.identity, device_queue(d.pk)) for d in rows],
        requeued=requeued,
        heartbeat_seconds=settings.LATENCYLAB_HEARTBEAT_SECONDS,
        offline_after_seconds=settings.LATENCYLAB_OFFLINE_AFTER_SECONDS,
        task_time_limit=settings.LATENCYLAB_TASK_TIME_LIMIT,
    )


def beat(lab: LabMachine, hb: Heartbeat) -> HeartbeatAnswer:
    """A heartbeat: the devices are alive; the lab is swept for devices whose machine went quiet,
    and the machine's idle devices (not those whose process is restarting) get the messages of
    queued jobs that went missing."""
    _check_worker(lab, hb.worker)
    n, gone = heartbeat(hb.worker, hb.identities)
    for device in sweep_lab():
        log.warning("device #%s %s of worker %r went offline (no heartbeat)", device.pk, device.name, device.worker)
    # A device whose process is restarting is not idle: its messages wait in its queue for it.
    consuming = (
        Device.objects.of_worker(hb.worker).filter(identity__in=hb.identities).exclude(identity__in=hb.restarting)
    )
    resend_lost_jobs(list(consuming.values_list("pk", flat=True)))
    return HeartbeatAnswer(devices=n, gone=gone)


def devices_gone(lab: LabMachine, gone: DevicesGone) -> Outcome:
    """Devices that left the machine (or all of them, the machine stopping) go offline now with
    their reasons: running jobs go back to the queue, queued ones move or wait."""
    _check_worker(lab, gone.worker)
    reasons: dict[int, str] = {}
    for key, reason in gone.reasons.items():
        try:
            pk = int(key)
        except ValueError:
            raise PayloadError(f"devices gone.reasons: {key!r} is not a device id") from None
        if _own_device(lab, pk).worker == gone.worker:
            # Only rows this worker still holds: a device another agent of the machine took
            # over since (the phone moved to its USB hub) stays online.
            reasons[pk] = reason
    return Outcome("offline", take_devices_offline(reasons))


# -- jobs -----------------------------------------------------------------------------------------


def claimed_job(job: ProfilingJob) -> ClaimedJob:
    """What a claimed job needs on the machine, by its kind."""
    graph: dict[str, Any] | None = None
    model: ModelRef | None = None
    graphs: list[dict[str, Any]] = []
    plan_rows: list[dict[str, Any]] | None = None
    if job.model is not None:
        graph = job.model.graph
        if job.model.format in RUN_AS_UPLOADED and job.model.file:
            model = ModelRef(job.model.sha256, job.model.file.size, job.model.format, job.model.filename)
    if job.kind in ("fusion_sweep", "fusion_plan"):
        graphs = [graph_to_dict(g) for g in graphs_for_job(job)]
    if job.kind == "fusion_plan":
        plan_rows = sweep_rows_for_plan(job)
    return ClaimedJob(
        id=job.pk,
        kind=job.kind,  # type: ignore[arg-type]  # JobKind's values, checked by the model's choices
        attempt=job.attempts,
        device=job.device_id,
        settings=dict(job.settings),
        graph=graph,
        model=model,
        graphs=graphs,
        plan_rows=plan_rows,
        import_limits=asdict(import_limits()),
        claim_seconds=settings.LATENCYLAB_TASK_TIME_LIMIT,
        lease_seconds=settings.LATENCYLAB_JOB_LEASE_SECONDS,
    )


def claim_for_lab(lab: LabMachine, job_id: int, claim: Claim) -> ClaimAnswer:
    """The conditional claim (``queued -> running`` once) of a job the device's queue delivered;
    with ``claim.peek``, only whether it would be claimed (``claimable``), changing nothing."""
    limit = ProfilingJob._meta.get_field("claimed_by").max_length or 0  # type: ignore[union-attr]
    if not 0 < len(claim.run) <= limit:  # a running job holds its run token: the row would refuse it
        raise PayloadError(f"claim.run must be a text of 1 to {limit} characters, got {claim.run!r:.80}")
    device = _own_device(lab, claim.device)
    job = _own_job(lab, job_id)
    if job is None:
        return ClaimAnswer("missing", f"job #{job_id} no longer exists")
    if job.device_id != device.pk:
        # moved to another device after its message was sent (this one went offline)
        return ClaimAnswer("elsewhere", f"job #{job_id} is now routed to device #{job.device_id}")
    if job.state == JobState.RUNNING and job.claimed_by == claim.run:
        if claim.key and claim.key == job.claim_key:
            # The same call again: its answer was lost on the way (a dropped connection, a proxy's
            # error after the claim committed). It is answered again.
            return _claimed_answer(job)
        if claim.peek:  # the claim itself counts the death
            return ClaimAnswer("claimable", f"job #{job_id}: an attempt of this run died; the claim counts it")
        # One process per device takes one message at a time: the same run's job arriving again
        # is an attempt whose pool process died (the message came back through
        # reject_on_worker_lost). Retried the first time, failed the second.
        attempt = job.attempts
        outcome = process_died(
            job_id,
            claim.run,
            f"the worker process measuring the job died during attempt {attempt} "
            "(the device runtime may have crashed on this model)",
        )
        return ClaimAnswer("lost", f"job #{job_id}: its attempt {attempt} died on this machine; {outcome}")
    if job.state != JobState.QUEUED:
        return ClaimAnswer("not-queued", f"job #{job_id} is {job.state}")
    if device.status == DeviceStatus.OFFLINE:
        return ClaimAnswer(
            "offline",
            f"device {device.name!r} (#{device.pk}) is marked offline; waiting for worker {device.worker!r} "
            "to heart-beat it back",
        )
    if claim.peek:
        return ClaimAnswer("claimable", f"job #{job_id} is queued on device #{device.pk}")
    limit = ProfilingJob._meta.get_field("claim_key").max_length or 0  # type: ignore[union-attr]
    if len(claim.key) > limit:
        raise PayloadError(f"claim.key must be at most {limit} characters, got {len(claim.key)}")
    with transaction.atomic():
        # One transaction: a claim that fails half-way (the database dropped) leaves the job
        # queued for the call made again, not running under a claim nobody was told of.
        claimed = claim_job(job_id, claim.run, device_id=device.pk, key=claim.key)
        if claimed is None:
            return ClaimAnswer("not-queued", f"job #{job_id} was taken by another run")
        return _claimed_answer(ProfilingJob.objects.select_related("device", "model").get(pk=claimed.pk))


def _claimed_answer(claimed: ProfilingJob) -> ClaimAnswer:
    """The answer to a claim that took ``claimed``: what the job needs on the machine."""
    job_id = claimed.pk
    try:
        payload = claimed_job(claimed)
    except (LookupError, GraphError) as exc:
        # What the job needs is gone or unreadable (a model deleted after it was queued): it
        # fails now, saying why, instead of staying claimed by a run that never got it.
        fail_job(job_id, claimed.claimed_by, f"the job cannot run: {exc}")
        return ClaimAnswer("not-queued", f"job #{job_id} failed at its claim: {exc}")
    return ClaimAnswer("claimed", job=payload)


# What the calls on a claimed job read of it: its state and claim, and its device's holder (not
# its settings, or its model's graph).
_CLAIM_FIELDS = ("id", "kind", "state", "claimed_by", "attempts", "device_id", "device__worker")


def _held_job(lab: LabMachine, job_id: int) -> ProfilingJob:
    job = ProfilingJob.objects.select_related("device").only(*_CLAIM_FIELDS).filter(pk=job_id).order_by().first()
    if job is None:
        raise NotYours(f"job #{job_id} does not exist")
    if not lab.owns_worker(job.device.worker):
        raise NotYours(f"job #{job_id} is not routed to a device of lab machine {lab.name!r}")
    return job


def progress_for_lab(lab: LabMachine, job_id: int, progress: Progress) -> bool:
    """Record a claimed job's progress; False: it was cancelled or is no longer this run's."""
    _held_job(lab, job_id)
    return report_progress(job_id, progress.run, progress.fraction, progress.message)


def fail_for_lab(lab: LabMachine, job_id: int, ending: Ending) -> Outcome:
    """A claimed job failed on the machine, saying why."""
    _held_job(lab, job_id)
    return Outcome("failed" if fail_job(job_id, ending.run, ending.reason) else "not-mine")


def retry_for_lab(lab: LabMachine, job_id: int, ending: Ending) -> Outcome:
    """The device or the way to it failed during the attempt: the job goes back to the queue."""
    _held_job(lab, job_id)
    return Outcome(retry_job(job_id, ending.run, ending.reason))


def fail_running_for_lab(lab: LabMachine, device_pk: int, ending: Ending) -> Outcome:
    """The machine's process of a device died: this run's running jobs on it end, saying why:
    retried after a first death of their measuring process, failed after a second
    (``process_died``). Answers ``ended`` with the jobs that were retried or failed."""
    _own_device(lab, device_pk)
    running = ProfilingJob.objects.running().on_device(device_pk).filter(claimed_by=ending.run)
    ended = [
        pk for pk in running.values_list("pk", flat=True) if process_died(pk, ending.run, ending.reason) != "not-mine"
    ]
    return Outcome("ended", ended)


# -- results ----------------------------------------------------------------------------------------

# Each kind's record (read from the post) and the service that stores it.
_INGEST: dict[str, tuple[Any, Callable[[int, str, Any], Any]]] = {
    "profile": (ProfileRecord, ingest_result),
    "fusion_sweep": (FusionSweepRecord, ingest_sweep),
    "fusion_plan": (FusionPlanRecord, ingest_plan),
    "sharing_sweep": (SharingSweepRecord, ingest_sharing),
    "online_schedule": (OnlineRunRecord, ingest_online),
    "remote_scenario": (RemoteRunRecord, ingest_remote),
}


def _checked_post(lab: LabMachine, job_id: int, post: ResultPost) -> tuple[ProfilingJob, Any] | ResultAnswer:
    """The job of a post, locked and checked, with the post's record read; or the answer when
    the post is not to be stored (``already-stored``, ``not-yours``). ``NotYours`` and
    ``PayloadError`` when it is refused. Call it inside ``transaction.atomic()``."""
    job = lock_job_for_result(job_id)
    if job is None:
        raise NotYours(f"job #{job_id} does not exist")
    if not lab.owns_worker(job.device.worker):
        raise NotYours(f"job #{job_id} is not routed to a device of lab machine {lab.name!r}")
    if post.kind != job.kind:
        raise PayloadError(f"result.kind: job #{job_id} is a {job.kind!r} job, not {post.kind!r}")
    if job.state == JobState.SUCCEEDED and job.claimed_by == post.run and job.attempts == post.attempt:
        return ResultAnswer("already-stored", f"job #{job_id}'s attempt {post.attempt} was stored before")
    if job.state != JobState.RUNNING or job.claimed_by != post.run or job.attempts != post.attempt:
        return ResultAnswer("not-yours", f"job #{job_id} is {job.state} and no longer this run's attempt")
    record_type, _ = _INGEST[post.kind]
    return job, record_type.from_dict(post.result)


def store_result(lab: LabMachine, job_id: int, post: ResultPost) -> ResultAnswer:
    """Store the result of a claimed attempt, once: a repeated post (its answer lost on the way)
    is ``already-stored``; a post for a job the run no longer holds is ``not-yours``.

    Checked and stored on one locked read of the job, which a profile's ingest uses as it is; two
    posts of one attempt at once take turns on the lock, and the second finds the job succeeded.
    """
    with transaction.atomic():
        checked = _checked_post(lab, job_id, post)
        if isinstance(checked, ResultAnswer):
            return checked
        job, record = checked
        stored = (
            ingest_result(job_id, post.run, record, locked=job)
            if post.kind == "profile"
            else _INGEST[post.kind][1](job_id, post.run, record)
        )
    # Under the lock, a job running under this attempt has no result yet: the ingest stores it.
    if stored is None:
        return ResultAnswer("not-yours", f"job #{job_id} is no longer this run's attempt")
    return ResultAnswer("stored")


def store_results(lab: LabMachine, batch: ResultBatch) -> ResultBatchAnswer:
    """Store several results at once, each answered as its own post would be (a refusal is
    ``refused``: one result refused does not refuse the others). The profiles among them are
    stored together, in one transaction: one INSERT of their result rows and one COPY of all
    their operator rows (``store_results`` of the profiling services); the other kinds each by
    their own ingest in that transaction.

    Should the grouped store fail in the database, each profile is stored again alone, and one
    that fails alone is ``unstored`` (its machine posts it again later)."""
    answers: list[BatchedAnswer | None] = [None] * len(batch.results)
    profiles: list[tuple[int, ProfilingJob, str, ProfileRecord]] = []  # (place in the batch, ...)
    seen: set[int] = set()
    with transaction.atomic():
        for at, item in enumerate(batch.results):
            if item.job in seen:
                answers[at] = BatchedAnswer(item.job, "refused", f"job #{item.job} is twice in the batch")
                continue
            seen.add(item.job)
            post = item.post()
            try:
                if post.kind == "profile":  # checked (reads and a row lock), stored with the others below
                    checked = _checked_post(lab, item.job, post)
                    if isinstance(checked, ResultAnswer):
                        answers[at] = BatchedAnswer(item.job, checked.outcome, checked.message)
                    else:
                        profiles.append((at, checked[0], post.run, checked[1]))
                    continue
                with transaction.atomic():  # a savepoint: another kind's ingest failing leaves the others
                    checked = _checked_post(lab, item.job, post)
                    if isinstance(checked, ResultAnswer):
                        answers[at] = BatchedAnswer(item.job, checked.outcome, checked.message)
                    elif _INGEST[post.kind][1](item.job, post.run, checked[1]) is None:
                        answers[at] = BatchedAnswer(item.job, "not-yours", "no longer this run's attempt")
                    else:
                        answers[at] = BatchedAnswer(item.job, "stored")
            except (NotYours, PayloadError) as exc:
                answers[at] = BatchedAnswer(item.job, "refused", str(exc))
            except DatabaseError as exc:
                if post.kind == "profile":  # outside a savepoint: the transaction is broken
                    raise
                log.exception("job %s: its batched result could not be stored", item.job)
                answers[at] = BatchedAnswer(item.job, "unstored", f"the server could not store it: {exc}")
        try:
            with transaction.atomic():
                store_profiles([(job, run, record) for _, job, run, record in profiles])
        except DatabaseError:
            log.exception("a batch of %d profiles could not be stored together; storing each alone", len(profiles))
            for at, job, run, record in profiles:
                try:
                    with transaction.atomic():
                        store_profiles([(job, run, record)])
                except DatabaseError as exc:
                    answers[at] = BatchedAnswer(job.pk, "unstored", f"the server could not store it: {exc}")
        for at, job, _, _ in profiles:
            answers[at] = answers[at] or BatchedAnswer(job.pk, "stored")
    return ResultBatchAnswer([answer for answer in answers if answer is not None])


# -- files ------------------------------------------------------------------------------------------


def model_for_lab(lab: LabMachine, sha256: str) -> NetworkModel:
    """The uploaded model with this hash, when a run of the machine holds a job that runs it."""
    running = ProfilingJob.objects.running().filter(lab.held_by("device__worker"), model__sha256=sha256)
    job = running.select_related("model").first()
    if job is None or job.model is None or not job.model.file:
        raise NotYours(f"no job running on lab machine {lab.name!r} runs a model with sha256 {sha256}")
    return job.model


__all__ = [
    "NotYours",
    "beat",
    "claim_for_lab",
    "claimed_job",
    "devices_gone",
    "fail_for_lab",
    "fail_running_for_lab",
    "model_for_lab",
    "progress_for_lab",
    "register_lab_devices",
    "retry_for_lab",
    "store_result",
    "store_results",
]
