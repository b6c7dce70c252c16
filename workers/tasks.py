"""The profiling task: claim the job, measure the graph on the device, store the result.

Thin on purpose: the job row is the truth and the server's services change it. The task only
decides which service to call. It is idempotent: it runs a job only after claiming it with a
conditional update, so a duplicate message (a redelivery after a lost worker, a re-enqueue of a
re-queued job) finds the job taken and does nothing.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery import Task
from celery.exceptions import SoftTimeLimitExceeded, TimeLimitExceeded

from devicelab.backends.base import BackendError, DeviceInfo, DeviceLost, ModelFile, ProfileSettings
from devicelab.fusion.errors import FusionError
from devicelab.graph import GraphError, graph_from_dict
from server.taskqueue import PROFILING_TASK
from workers.celery_app import app
from workers.context import WorkerContext
from workers.device_lock import DeviceBusy, device_lock

log = logging.getLogger("latencylab.workers")

# A progress report is one UPDATE; this bounds their rate, and so how late a cancel is seen.
PROGRESS_INTERVAL_SECONDS = 0.5
# Transient errors are retried with exponential backoff (2, 4, 8 ... capped, with jitter) this
# many times; after that the job fails saying why.
MAX_TRANSIENT_RETRIES = 8
RETRY_BACKOFF_MAX_SECONDS = 60


class DeviceOffline(RuntimeError):
    """The job's device is marked offline although this worker holds it (transient: its next
    heartbeat brings it back)."""


class JobStopped(Exception):
    """The job was cancelled, or another run took it over: stop measuring."""


TRANSIENT_ERRORS = (DeviceBusy, DeviceOffline)
# Upload formats a device runs as uploaded (its own weights and quantization) when its runtime
# reads them (a phone a .tflite, the CPU's onnxruntime a .onnx); every other upload runs as its
# graph, and a graph JSON always does.
RUN_AS_UPLOADED = frozenset({"tflite", "onnx"})


class _ProgressReporter:
    """The backend's progress callback: reports to the job row and stops the run when told."""

    def __init__(self, job_id: int, token: str) -> None:
        self.job_id = job_id
        self.token = token
        self.last = 0.0
        self.stopped = False

    def __call__(self, fraction: float, message: str) -> None:
        from server.profiling.services import report_progress

        now = time.monotonic()
        if fraction < 1.0 and now - self.last < PROGRESS_INTERVAL_SECONDS:
            return
        self.last = now
        if not report_progress(self.job_id, self.token, fraction, message):
            self.stopped = True
            raise JobStopped(f"job {self.job_id} was cancelled or is no longer this run's")


def _readable(exc: BaseException) -> str:
    """An exception as one line a person can act on."""
    text = str(exc).strip() or type(exc).__name__
    return text if isinstance(exc, GraphError | BackendError) else f"{type(exc).__name__}: {text}"


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


@app.task(
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
    """Run profiling job ``job_id`` on this worker's device; returns what happened, in a word."""
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
        return _measure(claimed, info, ctx.token, self.soft_time_limit or app.conf.task_soft_time_limit)


def _uploaded_file(model: Any, info: DeviceInfo) -> ModelFile | None:
    """The uploaded file, for a device that runs uploads of its format as they are (a phone runs
    a ``.tflite``, the CPU an ``.onnx``, with its own weights and quantization); None otherwise."""
    caps = info.capabilities
    if model.format not in RUN_AS_UPLOADED or caps is None or model.format not in caps.formats or not model.file:
        return None
    try:
        with model.file.open("rb") as f:
            data = f.read()
    except OSError as exc:
        raise BackendError(
            f"the uploaded file of model {model.name!r} ({model.file.name}) cannot be read on this worker: {exc}; "
            "the worker needs the server's media storage (LATENCYLAB_VAR_DIR / MEDIA_ROOT)"
        ) from None
    return ModelFile(model.format, data, model.filename or model.name)


def _profile(job: Any, info: DeviceInfo, progress: _ProgressReporter) -> bool:
    """Profile the job's model; whether its result was stored for this run."""
    from devicelab.backends.registry import backend_for
    from server.networks.services import import_limits
    from server.profiling.services import ingest_result

    # within the server's import limits: a model stored before they existed cannot make the
    # device allocate what its shapes declare
    graph = graph_from_dict(job.model.graph, import_limits())
    settings = ProfileSettings.from_dict(job.settings)
    backend = backend_for(info.kind)
    # the backend's profile, then the time breakdown of one inference (an image model's)
    result = backend.profile_job(info, graph, settings, progress, _uploaded_file(job.model, info))
    return ingest_result(job.pk, progress.token, result) is not None


def _fusion_sweep(job: Any, info: DeviceInfo, progress: _ProgressReporter) -> bool:
    """Run a fusion sweep over the job's networks; whether its rows were stored for this run."""
    from devicelab.fusion.on_device import sweep_on_device
    from server.fusion.services import graphs_for_job, ingest_sweep

    s = job.settings
    result = sweep_on_device(info, graphs_for_job(job), s["spec"], s.get("precision", "fp32"), progress)
    return ingest_sweep(job.pk, progress.token, result) is not None


def _fusion_plan(job: Any, info: DeviceInfo, progress: _ProgressReporter) -> bool:
    """Plan and run fusion for the job's networks together; whether the comparison was stored."""
    from devicelab.fusion.on_device import plan_on_device
    from server.fusion.services import graphs_for_job, ingest_plan, sweep_rows_for_plan

    s = job.settings
    comparison = plan_on_device(
        info, graphs_for_job(job), s.get("options", {}), sweep_rows_for_plan(job), s.get("precision", "fp32"), progress
    )
    return ingest_plan(job.pk, progress.token, comparison) is not None


def _sharing_sweep(job: Any, info: DeviceInfo, progress: _ProgressReporter) -> bool:
    """Run a sharing sweep within the job's time budget; whether its rows were stored for this run."""
    from devicelab.tenancy.on_device import sharing_on_device
    from server.tenancy.services import ingest_sharing

    s = job.settings
    result = sharing_on_device(info, s["spec"], progress, time_budget_s=s.get("time_budget_s"))
    return ingest_sharing(job.pk, progress.token, result) is not None


def _remote_scenario(job: Any, info: DeviceInfo, progress: _ProgressReporter) -> bool:
    """Serve the job's model on this machine and measure it from a client under the job's network
    profiles; whether the run was stored for this run."""
    from devicelab.remote.on_device import remote_on_device
    from server.networks.services import import_limits
    from server.remote.services import ingest_remote

    graph = graph_from_dict(job.model.graph, import_limits())
    result = remote_on_device(info, graph, job.settings, progress)
    return ingest_remote(job.pk, progress.token, result) is not None


# What each kind of job runs (``ProfilingJob.kind``).
RUNS = {
    "profile": _profile,
    "fusion_sweep": _fusion_sweep,
    "fusion_plan": _fusion_plan,
    "sharing_sweep": _sharing_sweep,
    "remote_scenario": _remote_scenario,
}


def _measure(job: Any, info: DeviceInfo, token: str, soft_limit: int | None) -> str:
    """Run a claimed job by its kind and store the outcome through the services."""
    from devicelab.backends.registry import BackendUnavailable
    from server.profiling.services import fail_job, retry_job

    progress = _ProgressReporter(job.pk, token)
    try:
        run = RUNS.get(job.kind)
        if run is None:
            raise ValueError(f"this worker does not know jobs of kind {job.kind!r}; known: {sorted(RUNS)}")
        stored = run(job, info, progress)
    except SoftTimeLimitExceeded:
        fail_job(job.pk, token, f"the job ran past the time limit of {soft_limit} s")
        return "timeout"
    except Exception as exc:
        if progress.stopped or isinstance(exc, JobStopped):
            log.info("job %s stopped: cancelled or taken over", job.pk)
            return "stopped"
        if isinstance(exc, DeviceLost):
            # the device or the way to it failed, not the model: another attempt, here or on an
            # equivalent device (the agent takes a vanished phone offline and moves its jobs)
            outcome = retry_job(job.pk, token, str(exc))
            log.warning("job %s: %s; %s", job.pk, exc, outcome)
            return outcome
        if isinstance(exc, GraphError):
            reason = f"the model cannot be profiled: {exc}"
        elif isinstance(exc, BackendError | BackendUnavailable | FusionError):
            reason = str(exc)
        elif isinstance(exc, ValueError | LookupError):
            # The backend's own checks: settings it cannot honour, a device it no longer sees.
            reason = f"device {info.name!r} ({info.identity}) cannot run this job: {_readable(exc)}"
        else:
            log.exception("job %s failed with an unexpected error", job.pk)
            reason = f"internal error while running the job: {_readable(exc)}"
        fail_job(job.pk, token, reason)
        return "failed"
    if not stored:
        log.info("job %s finished but is no longer this run's (cancelled?): result dropped", job.pk)
        return "stopped"
    return "succeeded"
