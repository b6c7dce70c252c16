"""The task claims a queued job, measures it on the device with the real CPU backend, and stores
one result with per-operator timings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workers.tasks import run_profiling_job


def test_task_measures_the_job_and_stores_its_result(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    job = make_job({"runs": 4, "warmup_runs": 1})

    assert run_profiling_job(job.pk) == "succeeded"

    job.refresh_from_db()
    assert job.state == "succeeded" and job.attempts == 1
    assert job.claimed_by == as_device_process.token
    assert job.started_at <= job.finished_at
    result = job.result
    assert result.attempt == 1 and result.e2e_n == 4 and len(result.samples_ms) == 4
    assert result.device_info["identity"] == as_device_process.devices[job.device_id].identity
    names = set(result.operators.exclude(index=None).values_list("name", flat=True))
    assert names == {op["name"] for op in job.model.graph["operators"]}
