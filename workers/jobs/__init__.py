"""Running a claimed job: one module per kind of job (``profile``, ``fusion``, ``sharing``,
``remote``), each returning the record the machine posts; the table that picks one by the job's
kind; and ``run_claimed_job``, which runs it and hands its outcome to the server
(``workers.failures`` decides what an error means).

A result the server cannot take now (down, restarting) waits on the machine's disk
(``workers.outbox``); the agent posts it when the server answers again.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded

from devicelab.backends.base import DeviceInfo, DeviceLost
from devicelab.lab_protocol import ClaimedJob, DevicesGone, Ending, Outcome, ResultPost
from devicelab.measure.environment import HostLockRecord
from workers.failures import classify
from workers.jobs.fusion import run_fusion_plan_job, run_fusion_sweep_job
from workers.jobs.profile import run_profile_job
from workers.jobs.progress import ProgressReporter
from workers.jobs.remote import run_remote_job
from workers.jobs.run import JobRun
from workers.jobs.sharing import run_online_job, run_sharing_job
from workers.model_cache import ModelCache
from workers.outbox import Outbox
from workers.server_api import LabServer, Refused, ServerUnreachable, TokenRevoked, Unsendable

log = logging.getLogger("latencylab.workers")

# Runs a claimed job on the device; returns the record the machine posts.
JobRunner = Callable[[JobRun], Any]

# What each kind of job runs.
RUNS: dict[str, JobRunner] = {
    "profile": run_profile_job,
    "fusion_sweep": run_fusion_sweep_job,
    "fusion_plan": run_fusion_plan_job,
    "sharing_sweep": run_sharing_job,
    "remote_scenario": run_remote_job,
    "online_schedule": run_online_job,
}

# Where each kind's record keeps its environment (the host lock is recorded there).
_ENVIRONMENT_FIELD = {"sharing_sweep": "device", "online_schedule": "device"}


def with_host_lock(kind: str, record: Any, lock: HostLockRecord | None) -> Any:
    """The record with the host lock noted in its environment (unchanged when none applied)."""
    if lock is None:
        return record
    name = _ENVIRONMENT_FIELD.get(kind, "environment")
    return dataclasses.replace(record, **{name: {**getattr(record, name), "host_lock": lock}})


def deliver(server: LabServer, outbox: Outbox, job: ClaimedJob, post: ResultPost) -> str:
    """Post a result; when the server does not answer, keep it on the disk for the agent to post.
    Returns what happened, in a word."""
    try:
        answer = server.post_result(job.id, post)
    except (Unsendable, Refused) as exc:
        # It has no JSON form, or the server refused it naming why (400): posting it again later
        # would end the same way, so the job fails now, saying why, instead of staying running.
        log.error("job %s: its result cannot be stored: %s", job.id, exc)
        _tell(server.fail, job.id, Ending(post.run, f"the result could not be stored: {exc}"))
        return "failed"
    except ServerUnreachable as exc:
        expires = time.time() + max(job.claim_seconds, 60)
        path = outbox.keep(job.id, post, expires)
        log.warning("job %s: the server does not answer (%s); its result waits in %s", job.id, exc, path)
        return "pending"
    if answer.outcome == "not-yours":
        log.info("job %s finished but is no longer this run's (%s): result dropped", job.id, answer.message)
        return "stopped"
    return "succeeded"


def _tell(call: Callable[[int, Ending], Outcome], job_id: int, ending: Ending) -> Outcome | None:
    """Tell the server how a job ended; when it cannot be told (down, or the token revoked), the
    server's own sweep re-queues the job once this machine's devices stop heart-beating (refused:
    the job is no longer this machine's, and nothing is left to tell)."""
    try:
        return call(job_id, ending)
    except (ServerUnreachable, TokenRevoked, Refused) as exc:
        log.error("job %s ended (%s) but the server could not be told: %s", job_id, ending.reason, exc)
        return None


def _past_time_limit(exc: BaseException) -> bool:
    """Whether ``exc`` is Celery's soft time limit, or an error a runtime raised because of it (a
    backend wraps what its runtime raised: "could not run graph ...: SoftTimeLimitExceeded()")."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain:  # a chain can loop back on itself
        if isinstance(link, SoftTimeLimitExceeded):
            return True
        chain.append(link)
        link = link.__cause__ or link.__context__
    return False


def _device_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it wraps) says the device itself is not there now."""
    link: BaseException | None = exc
    seen: list[BaseException] = []
    while link is not None and link not in seen:
        if isinstance(link, DeviceLost) and link.gone:
            return True
        seen.append(link)
        link = link.__cause__ or link.__context__
    return False


def run_claimed_job(
    job: ClaimedJob,
    info: DeviceInfo,
    server: LabServer,
    token: str,
    files: ModelCache,
    outbox: Outbox,
    soft_limit: int | None,
    lock: HostLockRecord | None = None,
    worker: str = "",
) -> str:
    """Run a claimed job by its kind and hand its outcome to the server; returns what happened,
    in a word. ``worker``: the worker name its device is registered under (to say the device
    is gone when the run finds it so)."""
    progress = ProgressReporter(server, job.id, token, lease_seconds=job.lease_seconds)
    try:
        run = RUNS.get(job.kind)
        if run is None:
            raise ValueError(f"this worker does not know jobs of kind {job.kind!r}; known: {sorted(RUNS)}")
        with progress.kept_alive():
            record = with_host_lock(job.kind, run(JobRun(job, info, server, files, progress)), lock)
    except Exception as exc:
        if _past_time_limit(exc):
            _tell(server.fail, job.id, Ending(token, f"the job ran past the time limit of {soft_limit} s"))
            return "timeout"
        failure = classify(exc, info, stopped=progress.stopped)
        if failure.action == "stop":
            log.info("job %s stopped: cancelled or taken over", job.id)
            return "stopped"
        if failure.action == "retry":
            if worker and _device_gone(exc):
                # The device is not there (a phone pulled mid-run): say so now, so that the job
                # moves to an equivalent device instead of burning its attempts on this one
                # before the agent's next look at the adb list.
                try:
                    server.devices_gone(DevicesGone(worker, token, {str(job.device): failure.reason}))
                except (ServerUnreachable, TokenRevoked, Refused) as gone_exc:
                    log.warning("job %s: could not tell the server that its device is gone: %s", job.id, gone_exc)
            answer = _tell(server.retry, job.id, Ending(token, failure.reason))
            outcome = answer.outcome if answer is not None else "unreported"
            log.warning("job %s: %s; %s", job.id, exc, outcome)
            return outcome
        if failure.unexpected:
            log.exception("job %s failed with an unexpected error", job.id)
        _tell(server.fail, job.id, Ending(token, failure.reason))
        return "failed"
    return deliver(server, outbox, job, ResultPost(token, job.attempt, job.kind, record.json_ready()))


__all__ = ["RUNS", "JobRunner", "deliver", "run_claimed_job", "with_host_lock"]
