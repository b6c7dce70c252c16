"""Cancelling a running job through the API stops the worker at its next progress report: the job
ends cancelled with no result, and the device is free for the next job at once."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.helpers import LONG, QUICK, job_row, long_graph, submit, tiny_graph, upload, wait_finished
from tests.waiting import wait_for


@pytest.mark.django_db(transaction=True)
def test_cancelled_job_stops_and_stores_nothing(start_worker: Any, e2e_api: Any) -> None:
    from server.profiling.models import JobResult

    worker = start_worker()
    device = worker.device()
    long_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)
    wait_for(lambda: (j := job_row(long_id)).state == "running" and j.progress > 0, 60, "the job to make progress")

    resp = e2e_api.post(f"/api/jobs/{long_id}/cancel/")
    assert resp.status_code == 200, resp.content
    cancelled_at = time.monotonic()
    next_id = submit(e2e_api, upload(e2e_api, tiny_graph("after-cancel")), device.pk, QUICK)

    # The device's only consumer takes the next job only after it dropped the cancelled one.
    nxt = wait_finished(next_id, timeout=60)
    assert nxt.state == "succeeded", nxt.failure_reason
    assert time.monotonic() - cancelled_at < 8, "the worker kept measuring the cancelled job"
    job = job_row(long_id)
    assert job.state == "cancelled" and job.finished_at is not None
    assert job.progress < 1.0
    assert not JobResult.objects.filter(job_id=long_id).exists()
    assert "'stopped'" in worker.log_tail(400)
    assert e2e_api.post(f"/api/jobs/{long_id}/cancel/").status_code == 409


@pytest.mark.django_db(transaction=True)
def test_a_job_of_many_long_runs_shows_progress_and_stops_within_seconds_of_a_cancel(
    start_worker: Any, e2e_api: Any
) -> None:
    from devicelab.backends.base import MAX_RUNS

    worker = start_worker()
    device = worker.device()
    # ~50 ms a run, 10,000 runs: by count alone the first report would come after 1,000 runs (~50 s).
    many = {"runs": MAX_RUNS, "warmup_runs": 0}
    job_id = submit(e2e_api, upload(e2e_api, long_graph("many-runs")), device.pk, many)
    wait_for(lambda: job_row(job_id).state == "running", 60, "the job to start")
    started = time.monotonic()
    moving = wait_for(lambda: (j := job_row(job_id)).progress > 0.2 and j, 60, "progress past the set-up")
    first = moving.progress
    wait_for(lambda: job_row(job_id).progress > first, 10, "progress to move again within seconds")
    assert time.monotonic() - started < 60

    assert e2e_api.post(f"/api/jobs/{job_id}/cancel/").status_code == 200
    cancelled_at = time.monotonic()
    next_id = submit(e2e_api, upload(e2e_api, tiny_graph("after-many")), device.pk, QUICK)
    nxt = wait_finished(next_id, timeout=60)
    assert nxt.state == "succeeded", nxt.failure_reason
    assert time.monotonic() - cancelled_at < 10, "the worker kept measuring the cancelled job"
