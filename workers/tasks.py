"""The profiling task: claim the job from the server, run it on the device, post the outcome.

Thin on purpose: the job row on the server is the truth. The task takes the device's locks, asks
the server for the job (the server's conditional claim: ``queued -> running`` once, and only for
a device of this machine), runs it by its kind (``workers.jobs``) and posts its result. It is
idempotent: a duplicate message (a redelivery after a lost worker, a re-enqueue of a re-queued
job) finds the job taken and does nothing.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from typing import Any

from celery import Task
from celery.exceptions import TimeLimitExceeded

from devicelab.backends.base import DeviceInfo
from devicelab.lab_protocol import PROFILING_TASK, Claim, ClaimAnswer, DevicesGone, Ending
from workers.celery_app import app
from workers.context import WorkerContext
from workers.device_lock import device_lock, host_lock
from workers.failures import TRANSIENT_ERRORS, DeviceOffline
from workers.jobs import run_claimed_job
from workers.lab_settings import LabSettings
from workers.model_cache import ModelCache
from workers.outbox import Outbox
from workers.server_api import LabServer, Refused, ServerUnreachable, TokenRevoked

log = logging.getLogger("latencylab.workers")

# Transient errors are retried with exponential backoff (2, 4, 8 ... capped, with jitter) this
# many times; after that the job fails saying why.
MAX_TRANSIENT_RETRIES = 8
RETRY_BACKOFF_MAX_SECONDS = 60


@functools.cache
def lab() -> tuple[LabSettings, LabServer, ModelCache, Outbox]:
    """This process's settings, its session with the server, its model cache and its outbox."""
    settings = LabSettings.from_env()
    return (
        settings,
        LabServer(settings.server_url, settings.token),
        ModelCache(settings.cache_dir, settings.model_cache_bytes),
        Outbox(settings.outbox_dir),
    )


# A pool process is forked from the consumer: it must open its own session with the server, not
# use the consumer's connection (the consumer's hooks call lab() too).
os.register_at_fork(after_in_child=lab.cache_clear)


class ProfilingTask(Task):  # type: ignore[misc]
    """Fails the job with a reason when the task itself cannot: a hard time limit (handled by
    the worker's main process after it killed the pool process) or exhausted retries. Its
    messages are looked at in the consumer first (``workers.stale_messages``): one whose job is
    not this device's to run any more is dropped there, without a pool process."""

    Request = "workers.stale_messages:PeekingRequest"

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        """Turn a task-level failure into a failed job."""
        job_id = int(args[0]) if args else int(kwargs["job_id"])
        ctx = WorkerContext.from_env()
        _, server, _, _ = lab()
        try:
            if isinstance(exc, TimeLimitExceeded):
                limit = self.time_limit or app.conf.task_time_limit
                reason = f"the job ran past the hard time limit of {limit} s and was killed"
                server.fail(job_id, Ending(ctx.token, reason))
            elif isinstance(exc, ServerUnreachable):
                # The job is still queued on the server, which sends its message again once this
                # machine heart-beats its idle device.
                log.warning(
                    "job %s: the server did not answer its claim after %d tries (%s)", job_id, self.request.retries, exc
                )
            elif isinstance(exc, TRANSIENT_ERRORS):
                # Never claimed: claim it (if it is still this device's) to record why it could not run.
                (device_pk,) = ctx.devices
                if server.claim(job_id, Claim(ctx.token, device_pk)).outcome == "claimed":
                    server.fail(job_id, Ending(ctx.token, f"gave up after {self.request.retries} retries: {exc}"))
        except (ServerUnreachable, TokenRevoked, Refused) as told:
            log.error("job %s ended (%s) but the server could not be told: %s", job_id, exc, told)


# A claim whose answer did not come (the server restarting, a dropped connection) is made again
# this many times in all, the same call with the same key, before the task is retried (by then in
# another process, which the server would take for one whose attempt died had the claim committed).
CLAIM_TRIES = 3


def claim(server: LabServer, job_id: int, call: Claim, pause_s: float = 1.0) -> ClaimAnswer:
    """``server.claim``, made again with the same key while no answer comes."""
    for tries_left in range(CLAIM_TRIES - 1, -1, -1):
        try:
            return server.claim(job_id, call)
        except ServerUnreachable as exc:
            if not tries_left:
                raise
            log.warning("job %s: the claim got no answer (%s); asking again", job_id, exc)
            time.sleep(pause_s)
            pause_s *= 2
    raise AssertionError("unreachable")


def device_absent(info: DeviceInfo) -> str | None:
    """Why the device is not there now (its backend's ``absent``), or None."""
    from devicelab.backends.registry import backend_for

    try:
        backend = backend_for(info.kind)
    except (ImportError, TypeError, ValueError):
        return None  # the claim and the run say what is wrong with the backend
    return backend.absent(info)


@app.task(  # type: ignore[untyped-decorator]  # Celery ships no types
    bind=True,
    base=ProfilingTask,
    name=PROFILING_TASK,
    # Acknowledged only after it ran, and given back if the worker dies: the claim makes the
    # second delivery harmless, and a lost message is never the reason a job stays queued.
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    autoretry_for=TRANSIENT_ERRORS,
    max_retries=MAX_TRANSIENT_RETRIES,
    retry_backoff=2,
    retry_backoff_max=RETRY_BACKOFF_MAX_SECONDS,
    retry_jitter=True,
)
def run_profiling_job(self: Task, job_id: int) -> str:
    """Run job ``job_id`` (of any kind) on this process's device; returns what happened, in a word."""
    ctx = WorkerContext.from_env()
    settings, server, files, outbox = lab()
    # A device process serves its one device: a message for a job since moved elsewhere is
    # answered "elsewhere" by the server.
    ((device_pk, info),) = ctx.devices.items()
    soft_limit = self.soft_time_limit or app.conf.task_soft_time_limit
    if outbox.holds(job_id):
        # This machine measured the job and its result waits on the disk for the server: the
        # message is a copy (a resend, a re-queue's). Claimed, it would look like an attempt
        # whose process died (the job is running under this run's token) and fail the job.
        log.info("job %s: its result waits in the outbox; message dropped", job_id)
        return "pending"
    # The job is still queued while it waits for the host's processors, but the wait runs on the
    # task's time limit: at most half of it, so the measurement keeps the other half (a longer
    # wait is DeviceBusy, retried with backoff under a fresh limit).
    with device_lock(info.identity), host_lock(info, settings.host_lock, wait_s=soft_limit / 2) as lock:
        if lock is not None and lock["waited_s"] >= 1.0:
            log.info(
                "job %s waited %.1f s for the host's processors (another device's measurement)",
                job_id,
                lock["waited_s"],
            )
        gone = device_absent(info)
        if gone is not None:
            # Claimed, the attempt would fail at once and count against the job; the device is
            # said gone instead, so that the server moves its jobs to an equivalent device (or
            # they wait) and sends them again when it comes back.
            log.warning("job %s: not claimed, its device is not there: %s", job_id, gone)
            try:
                server.devices_gone(DevicesGone(ctx.name, ctx.token, {str(device_pk): gone}))
            except (ServerUnreachable, TokenRevoked, Refused) as exc:
                # the agent's next look at the device list tells the server instead
                log.warning("job %s: could not tell the server that its device is gone: %s", job_id, exc)
            return "absent"
        try:
            answer = claim(server, job_id, Claim(ctx.token, device_pk, key=uuid.uuid4().hex))
        except Refused as exc:
            if exc.status != 403:
                raise
            # The job moved to a device of another lab machine after its message was sent (this
            # device went offline): it is that machine's now, and the message is dropped.
            log.info("job %s: not this machine's (%s)", job_id, exc)
            return "refused"
        if answer.outcome == "offline":
            raise DeviceOffline(answer.message)
        if answer.outcome != "claimed" or answer.job is None:
            log.info("job %s: %s (%s)", job_id, answer.outcome, answer.message)
            return answer.outcome
        return run_claimed_job(answer.job, info, server, ctx.token, files, outbox, soft_limit, lock, worker=ctx.name)
