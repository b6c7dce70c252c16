"""Running a claimed job: one module per kind of job (``profile``, ``fusion``, ``sharing``,
``remote``), the table that picks one by ``ProfilingJob.kind``, and ``run_claimed_job``, which runs
it and stores the outcome through the server's services (``workers.failures`` decides what an
error means)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from devicelab.backends.base import DeviceInfo
from workers.failures import classify
from workers.jobs.fusion import run_fusion_plan_job, run_fusion_sweep_job
from workers.jobs.profile import run_profile_job
from workers.jobs.progress import ProgressReporter
from workers.jobs.remote import run_remote_job
from workers.jobs.sharing import run_sharing_job

log = logging.getLogger("latencylab.workers")

# Runs a claimed job on the device; whether its outcome was stored for this run.
JobRunner = Callable[[Any, DeviceInfo, ProgressReporter], bool]

# What each kind of job runs (``ProfilingJob.kind``).
RUNS: dict[str, JobRunner] = {
    "profile": run_profile_job,
    "fusion_sweep": run_fusion_sweep_job,
    "fusion_plan": run_fusion_plan_job,
    "sharing_sweep": run_sharing_job,
    "remote_scenario": run_remote_job,
}


def run_claimed_job(job: Any, info: DeviceInfo, token: str, soft_limit: int | None) -> str:
    """Run a claimed job by its kind and store the outcome through the services; returns what
    happened, in a word."""
    from server.profiling.services import fail_job, retry_job

    progress = ProgressReporter(job.pk, token)
    try:
        run = RUNS.get(job.kind)
        if run is None:
            raise ValueError(f"this worker does not know jobs of kind {job.kind!r}; known: {sorted(RUNS)}")
        stored = run(job, info, progress)
    except SoftTimeLimitExceeded:
        fail_job(job.pk, token, f"the job ran past the time limit of {soft_limit} s")
        return "timeout"
    except Exception as exc:
        failure = classify(exc, info, stopped=progress.stopped)
        if failure.action == "stop":
            log.info("job %s stopped: cancelled or taken over", job.pk)
            return "stopped"
        if failure.action == "retry":
            outcome = retry_job(job.pk, token, failure.reason)
            log.warning("job %s: %s; %s", job.pk, exc, outcome)
            return outcome
        if failure.unexpected:
            log.exception("job %s failed with an unexpected error", job.pk)
        fail_job(job.pk, token, failure.reason)
        return "failed"
    if not stored:
        log.info("job %s finished but is no longer this run's (cancelled?): result dropped", job.pk)
        return "stopped"
    return "succeeded"


__all__ = ["RUNS", "JobRunner", "run_claimed_job"]
