"""A claimed job's progress and its other ends over the lab API: ``progress`` tells the run to go
on until the job is cancelled, ``fail`` records the reason, ``retry`` queues it again, and
``fail-running`` ends the run's running jobs on a device whose process died (retried after a
first death, failed after a second)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.lab_protocol import Ending
from server.profiling.models import JobState
from server.profiling.services import cancel_job
from tests.labs.protocol_calls import claim, end, lab_client, post, progress

pytestmark = pytest.mark.django_db


@pytest.fixture
def claimed(
    add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> Any:
    """(client of 'rack', its job claimed by run 'run-1' through the API)."""
    _, token = add_lab("rack")
    client = lab_client(token)
    job = make_job(member.team, device=make_device(worker="rack"))
    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
    return client, job


def test_progress_goes_on_while_running_and_stops_once_cancelled(claimed: Any) -> None:
    client, job = claimed
    answer = progress(client, job.pk, "run-1", 0.4)
    assert answer.status_code == 200 and answer.json() == {"go_on": True}
    job.refresh_from_db()
    assert job.progress == pytest.approx(0.4)

    cancel_job(job)

    assert progress(client, job.pk, "run-1", 0.6).json() == {"go_on": False}
    job.refresh_from_db()
    assert job.state == JobState.CANCELLED and job.progress == pytest.approx(0.4)


def test_progress_of_another_run_is_told_to_stop(claimed: Any) -> None:
    client, job = claimed
    assert progress(client, job.pk, "run-2").json() == {"go_on": False}


def test_fail_records_the_reason(claimed: Any) -> None:
    client, job = claimed
    answer = end(client, job.pk, "fail", "run-1", "onnxruntime could not load the model: bad opset")
    assert answer.status_code == 200 and answer.json() == {"outcome": "failed", "jobs": []}
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert job.failure_reason == "onnxruntime could not load the model: bad opset"


def test_fail_by_another_run_is_not_mine(claimed: Any) -> None:
    client, job = claimed
    assert end(client, job.pk, "fail", "run-2", "no").json()["outcome"] == "not-mine"
    job.refresh_from_db()
    assert (job.state, job.claimed_by) == (JobState.RUNNING, "run-1")


def test_retry_queues_the_job_again(claimed: Any) -> None:
    client, job = claimed
    answer = end(client, job.pk, "retry", "run-1", "adb transport lost")
    assert answer.status_code == 200 and answer.json()["outcome"] == "retried"
    job.refresh_from_db()
    assert (job.state, job.claimed_by) == (JobState.QUEUED, "")
    assert "attempt 1 lost: adb transport lost" in job.moved_from
    assert claim(client, job.pk, "run-1", job.device_id).json()["job"]["attempt"] == 2


def test_fail_running_retries_this_runs_running_jobs_then_fails_them_at_a_second_death(
    claimed: Any, member: Any, make_job: Callable[..., Any]
) -> None:
    client, job = claimed
    queued = make_job(member.team, device=job.device)
    died = Ending("run-1", "the Celery process of device #1 was killed by SIGKILL while measuring the job")

    answer = post(client, f"/api/lab/devices/{job.device_id}/fail-running", died)

    assert answer.status_code == 200 and answer.json() == {"outcome": "ended", "jobs": [job.pk]}
    job.refresh_from_db()
    assert (job.state, job.process_deaths) == (JobState.QUEUED, 1)
    assert "attempt 1 lost: the Celery process of device #1 was killed by SIGKILL" in job.moved_from
    queued.refresh_from_db()
    assert queued.state == JobState.QUEUED

    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
    answer = post(client, f"/api/lab/devices/{job.device_id}/fail-running", died)
    assert answer.json() == {"outcome": "ended", "jobs": [job.pk]}
    job.refresh_from_db()
    assert (job.state, job.process_deaths) == (JobState.FAILED, 2)
    assert job.failure_reason.startswith("the Celery process of device #1 was killed by SIGKILL")
    assert "died in 2 of its attempts, so the model is taken to crash the runtime" in job.failure_reason


def test_fail_running_leaves_another_runs_jobs(claimed: Any) -> None:
    client, job = claimed
    answer = post(client, f"/api/lab/devices/{job.device_id}/fail-running", Ending("run-0", "an older run died"))
    assert answer.json() == {"outcome": "ended", "jobs": []}
    job.refresh_from_db()
    assert job.state == JobState.RUNNING


def test_endings_of_another_machines_job_are_refused(
    claimed: Any, add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    _, job = claimed
    _, theirs = add_lab("other")
    other = lab_client(theirs)
    assert progress(other, job.pk, "run-1").status_code == 403
    assert end(other, job.pk, "fail", "run-1", "x").status_code == 403
    assert end(other, job.pk, "retry", "run-1", "x").status_code == 403
    fail_running = post(other, f"/api/lab/devices/{job.device_id}/fail-running", Ending("run-1", "x"))
    assert fail_running.status_code == 403
    job.refresh_from_db()
    assert (job.state, job.claimed_by) == (JobState.RUNNING, "run-1")
