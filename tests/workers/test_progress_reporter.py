"""The backend's progress callback reports progress to the server, which writes it to the job row
(at a bounded rate), and stops the measurement once the job was cancelled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.lab_protocol import Claim
from tests.waiting import wait_for
from workers.failures import JobStopped
from workers.jobs.progress import ProgressReporter


def test_progress_reaches_the_row_and_a_cancel_stops_the_run(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.services import cancel_job

    job = make_job()
    token = as_device_process.token
    assert agent.server.claim(job.pk, Claim(token, job.device_id)).outcome == "claimed"
    report = ProgressReporter(agent.server, job.pk, token)

    report(0.25, "timed run 3/12")
    job.refresh_from_db()
    assert job.progress == 0.25 and job.progress_message == "timed run 3/12"
    report(0.3, "timed run 4/12")  # within the interval: not sent
    job.refresh_from_db()
    assert job.progress == 0.25

    assert cancel_job(job)
    report.last = 0.0  # let the next report through at once
    with pytest.raises(JobStopped):
        report(0.5, "timed run 6/12")
    assert report.stopped
    job.refresh_from_db()
    assert job.state == "cancelled" and job.progress == 0.25


def test_an_unreachable_server_does_not_stop_the_measurement(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    import requests

    job = make_job()
    token = as_device_process.token
    assert agent.server.claim(job.pk, Claim(token, job.device_id)).outcome == "claimed"
    report = ProgressReporter(agent.server, job.pk, token)

    def down(request: Any) -> None:
        raise requests.ConnectionError("connection refused")

    agent.machine.adapter.before = down
    report(0.5, "timed run 6/12")  # logged, not raised: the result may still reach the server later
    agent.machine.adapter.before = None
    assert not report.stopped
    job.refresh_from_db()
    assert job.state == "running" and job.progress == 0.0


@pytest.mark.django_db(transaction=True)  # the keeper's thread reads the rows on a connection of its own
def test_a_silent_backend_is_kept_alive_and_learns_of_a_cancel(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.services import cancel_job

    job = make_job()
    token = as_device_process.token
    claimed = agent.server.claim(job.pk, Claim(token, job.device_id))
    assert claimed.outcome == "claimed" and claimed.job is not None and claimed.job.lease_seconds > 0
    report = ProgressReporter(agent.server, job.pk, token, lease_seconds=0.4)
    report(0.5, "loading the model")
    job.refresh_from_db()
    first = job.progress_at

    def reported_again() -> bool:
        job.refresh_from_db()
        return bool(job.progress_at > first)

    with report.kept_alive():
        # the backend says nothing: the keeper reports the last progress again
        wait_for(reported_again, 30, "the keeper to report again", interval=0.1)
        assert (job.progress, job.progress_message) == (0.5, "loading the model")
        cancel_job(job)
        wait_for(lambda: report.stop_told, 30, "the keeper to learn of the cancel", interval=0.1)
        with pytest.raises(JobStopped, match="cancelled"):
            report(0.6, "measuring")
    assert report.stopped
