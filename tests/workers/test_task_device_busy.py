"""A job whose device is held by another measurement is not claimed: the task raises the transient
``DeviceBusy`` (retried with backoff by the worker) and the job stays queued."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from workers.device_lock import DeviceBusy, device_lock
from workers.failures import TRANSIENT_ERRORS
from workers.tasks import run_profiling_job


def test_busy_device_leaves_the_job_queued(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    job = make_job()
    found = as_device_process.devices[job.device_id]

    with device_lock(found.identity), pytest.raises(DeviceBusy, match="another process"):
        run_profiling_job(job.pk)

    job.refresh_from_db()
    assert job.state == "queued" and job.attempts == 0
    # Once the device is free the same message runs.
    assert run_profiling_job(job.pk) == "succeeded"


def test_only_named_transient_errors_are_retried() -> None:
    assert set(run_profiling_job.autoretry_for) == set(TRANSIENT_ERRORS)
    assert DeviceBusy in TRANSIENT_ERRORS and run_profiling_job.retry_backoff
    assert run_profiling_job.max_retries is not None


def test_job_fails_saying_why_once_the_retries_are_spent(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    job = make_job()
    busy = DeviceBusy("device 'cpu:x' is being measured by another process")

    # What Celery calls when autoretry re-raises the error after the last retry.
    run_profiling_job.on_failure(busy, "task-id", [job.pk], {}, None)

    job.refresh_from_db()
    assert job.state == "failed" and job.attempts == 1
    assert job.failure_reason.startswith("gave up after") and "another process" in job.failure_reason
