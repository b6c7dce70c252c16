"""Jobs for one device never run at the same time: their [started, finished] intervals do not
overlap, whichever order the worker takes them in, although the device's process holds a warm
spare pool process beside the one measuring (``workers.device_pool``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import submit, tiny_graph, upload, wait_finished
from tests.waiting import wait_for

SETTINGS = {"runs": 20, "warmup_runs": 1}


@pytest.mark.django_db(transaction=True)
def test_jobs_on_one_device_run_one_after_another(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker()
    device = worker.device()
    model_id = upload(e2e_api, tiny_graph("serial"))
    job_ids = [submit(e2e_api, model_id, device.pk, SETTINGS) for _ in range(4)]

    # the device process: its pool holds a process for the job and a warm one for the next
    wait_for(lambda: len(_pool_processes(worker)) == 2 or None, 60, "two pool processes")

    jobs = [wait_finished(job_id) for job_id in job_ids]
    assert all(j.state == "succeeded" for j in jobs), [j.failure_reason for j in jobs]
    spans = sorted((j.started_at, j.finished_at) for j in jobs)
    for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False):
        assert end <= next_start, f"two jobs overlapped on device #{device.pk}: {spans}"


def _pool_processes(worker: Any) -> list[Any]:
    """The pool processes of the worker's one device process."""
    import psutil

    (device_process,) = [
        p for p in psutil.Process(worker.proc.pid).children() if "workers.device_process" in " ".join(p.cmdline())
    ]
    return list(device_process.children())
