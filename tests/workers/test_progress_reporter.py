"""The backend's progress callback writes progress to the job row (at a bounded rate) and stops the
measurement once the job was cancelled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from workers.failures import JobStopped
from workers.jobs.progress import ProgressReporter


def test_progress_reaches_the_row_and_a_cancel_stops_the_run(
    as_device_process: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.services import cancel_job, claim_job

    job = make_job()
    token = as_device_process.token
    claim_job(job.pk, token)
    report = ProgressReporter(job.pk, token)

    report(0.25, "timed run 3/12")
    job.refresh_from_db()
    assert job.progress == 0.25 and job.progress_message == "timed run 3/12"
    report(0.3, "timed run 4/12")  # within the interval: not written
    job.refresh_from_db()
    assert job.progress == 0.25

    assert cancel_job(job)
    report.last = 0.0  # let the next report through at once
    with pytest.raises(JobStopped):
        report(0.5, "timed run 6/12")
    assert report.stopped
    job.refresh_from_db()
    assert job.state == "cancelled" and job.progress == 0.25
