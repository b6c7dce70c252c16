"""A stored model over the import limits fails its job with the reason, before the device allocates it.

Issue 18, finding 6: a model stored before the limits existed (or under higher ones) declared an
input of [1, 3, 100000, 100000], and its job failed allocating 224 GiB on the device. The worker
reads the stored graph under the server's import limits, so the job fails at once, naming the input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workers.tasks import run_profiling_job


def test_a_stored_graph_over_the_tensor_limit_fails_the_job_naming_the_input(
    as_device_process: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.models import JobResult

    job = make_job()
    model = job.model
    inputs = [{**model.graph["inputs"][0], "shape": [1, 3, 100000, 100000]}]
    model.graph = {**model.graph, "inputs": inputs}
    model.save(update_fields=["graph"])

    assert run_profiling_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed" and job.attempts == 1
    assert job.failure_reason.startswith("the model cannot be profiled:")
    assert f"node {inputs[0]['name']!r}" in job.failure_reason and "30000000000 elements" in job.failure_reason
    assert not JobResult.objects.filter(job=job).exists()
