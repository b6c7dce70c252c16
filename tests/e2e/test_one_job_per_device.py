"""Jobs for one device never run at the same time: their [started, finished] intervals do not
overlap, whichever order the worker takes them in."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import submit, tiny_graph, upload, wait_finished

SETTINGS = {"runs": 20, "warmup_runs": 1}


@pytest.mark.django_db(transaction=True)
def test_jobs_on_one_device_run_one_after_another(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker()
    device = worker.device()
    model_id = upload(e2e_api, tiny_graph("serial"))
    job_ids = [submit(e2e_api, model_id, device.pk, SETTINGS) for _ in range(4)]

    jobs = [wait_finished(job_id) for job_id in job_ids]
    assert all(j.state == "succeeded" for j in jobs), [j.failure_reason for j in jobs]
    spans = sorted((j.started_at, j.finished_at) for j in jobs)
    for (_, end), (next_start, _) in zip(spans, spans[1:], strict=False):
        assert end <= next_start, f"two jobs overlapped on device #{device.pk}: {spans}"
