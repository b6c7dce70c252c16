"""A message for a job that has since moved to a device this worker does not hold is dropped, and
the job is left for the device it now belongs to."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.workers.conftest import fake_cpu
from workers.tasks import run_profiling_job


def test_job_routed_to_another_device_is_not_run_here(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    from server.devices.services import register_devices

    other = register_devices("some-other-worker", [fake_cpu(1)])[0]
    job = make_job(device_pk=other.pk)

    assert run_profiling_job(job.pk) == "elsewhere"
    job.refresh_from_db()
    assert job.state == "queued" and job.attempts == 0 and job.claimed_by == ""
