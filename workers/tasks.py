"""The profiling task: claim the job, run it on the device, store the outcome.

Thin on purpose: the job row is the truth and the server's services change it. The task only
decides whether this worker may run the job and claims it; ``workers.jobs`` runs it by its kind
and ``workers.failures`` says what an error means. It is idempotent: it runs a job only after
claiming it with a conditional update, so a duplicate message (a redelivery after a lost worker,
a re-enqueue of a re-queued job) finds the job taken and does nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import Task
from celery.exceptions import TimeLimitExceeded

from server.taskqueue import PROFILING_TASK
from workers.celery_app import app
from workers.context import WorkerContext
from workers.device_lock import device_lock
from workers.failures import TRANSIENT_ERRORS, DeviceOffline
from workers.jobs import run_claimed_job

log = logging.getLogger("latencylab.workers")

# Transient errors are retried with exponential backoff (2, 4, 8 ... capped, with jitter) this
# many times; after that the job fails saying why.
MAX_TRANSIENT_RETRIES = 8
RETRY_BACKOFF_MAX_SECONDS = 60


class ProfilingTask(Task):  # type: ignore[misc]
    """Fails the job with a reason when the task itself cannot: a hard time limit (handled by
    the worker's main process after it killed the pool process) or exhausted retries."""

    def on_failure(self, exc: BaseException, task_id: str, args: Any, kwargs: Any, einfo: Any) -> None:
        """Turn a task-level failure into a failed job."""
        from server.profiling.services import claim_job, fail_job

        job_id = int(args[0]) if args else int(kwargs["job_id"])
        ctx = WorkerContext.from_env()
        if isinstance(exc, TimeLimitExceeded):
            limit = self.time_limit or app.conf.task_time_limit
            fail_job(job_id, ctx.token, f"the job ran past the hard time limit of {limit} s and was killed")
        elif isinstance(exc, TRANSIENT_ERRORS):
            # Never claimed: claim it (if it is still this worker's) to record why it could not run.
            from server.profiling.models import ProfilingJob

            job = ProfilingJob.objects.filter(pk=job_id).first()
            if job is not None and job.device_id in ctx.devices:
                if claim_job(job_id, ctx.token, device_id=job.device_id) is not None:
                    fail_job(job_id, ctx.token, f"gave up after {self.request.retries} retries: {exc}")


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
    """Run job ``job_id`` (of any kind) on this worker's device; returns what happened, in a word."""
    from server.devices.models import DeviceStatus
    from server.profiling.models import JobState, ProfilingJob
    from server.profiling.services import claim_job, fail_job

    ctx = WorkerContext.from_env()
    job = ProfilingJob.objects.select_related("device").filter(pk=job_id).first()
    if job is None:
        log.info("job %s no longer exists", job_id)
        return "missing"
    info = ctx.devices.get(job.device_id)
    if info is None:
        # The job moved to another device after this message was sent (its device went offline).
        log.info("job %s is now routed to device %s, which this worker does not hold", job_id, job.device_id)
        return "elsewhere"
    if job.state == JobState.RUNNING and job.claimed_by == ctx.token:
        # Only this process consumes the device's queue, one job at a time, so a job running
        # under this run's token that arrives again is an attempt whose pool process died
        # (the message came back through reject_on_worker_lost).
        fail_job(
            job_id,
            ctx.token,
            f"the worker process measuring the job died during attempt {job.attempts}; "
            "the device runtime may have crashed on this model",
        )
        return "lost"
    if job.state != JobState.QUEUED:
        return "not-queued"
    if job.device.status == DeviceStatus.OFFLINE:
        raise DeviceOffline(
            f"device {job.device.name!r} (#{job.device_id}) is marked offline; "
            f"waiting for worker {ctx.name!r} to heart-beat it back"
        )
    with device_lock(info.identity):
        claimed = claim_job(job_id, ctx.token, device_id=job.device_id)
        if claimed is None:
            return "taken"
        return run_claimed_job(claimed, info, ctx.token, self.soft_time_limit or app.conf.task_soft_time_limit)
