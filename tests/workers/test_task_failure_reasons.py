"""A job that cannot be measured ends failed with a reason a person can act on, not a traceback."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workers.tasks import run_profiling_job


def test_unreadable_stored_graph_fails_the_job_naming_the_problem(
    as_device_process: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.models import JobResult

    job = make_job()
    model = job.model
    model.graph = {**model.graph, "schema_version": 99}  # e.g. written by a newer LatencyLab
    model.save(update_fields=["graph"])

    assert run_profiling_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed" and job.attempts == 1
    assert job.failure_reason.startswith("the model cannot be profiled:")
    assert "schema_version" in job.failure_reason
    assert not JobResult.objects.filter(job=job).exists()


def test_settings_the_device_cannot_honour_fail_the_job_naming_the_device(
    as_device_process: Any, make_job: Callable[..., Any], agent: Any
) -> None:
    from server.devices.models import Device

    # Submission refuses them for a device that declared its capabilities; a row registered by an
    # older worker declared none, and the backend's own check on the worker is what stops the job.
    Device.objects.filter(pk=agent.devices[0].pk).update(capabilities={})
    job = make_job({"runs": 2, "warmup_runs": 0, "cores": [4096]})

    assert run_profiling_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed"
    assert "cannot run this job" in job.failure_reason and "4096" in job.failure_reason
    assert "Traceback" not in job.failure_reason
    assert job.device.status == "online"  # released again
