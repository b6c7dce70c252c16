"""The job state machine: every move is a conditional UPDATE and only allowed moves happen."""

from __future__ import annotations

from typing import Any

import pytest

from server.devices.models import DeviceStatus
from server.profiling.models import JobState, ProfilingJob
from server.profiling.services import cancel_job, claim_job, fail_job, report_progress

pytestmark = pytest.mark.django_db


def test_claim_runs_the_job_and_counts_an_attempt(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert job.state == JobState.QUEUED and job.attempts == 0
    claimed = claim_job(job.pk, "run-1")
    assert claimed is not None
    assert (claimed.state, claimed.attempts, claimed.claimed_by) == (JobState.RUNNING, 1, "run-1")
    assert claimed.started_at is not None
    claimed.device.refresh_from_db()
    assert claimed.device.status == DeviceStatus.BUSY


def test_second_claim_loses(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert claim_job(job.pk, "run-1") is not None
    assert claim_job(job.pk, "run-2") is None
    job.refresh_from_db()
    assert (job.claimed_by, job.attempts) == ("run-1", 1)


def test_claim_checks_the_device_it_was_routed_to(member: Any, make_job: Any, make_device: Any) -> None:
    job = make_job(member.team)
    elsewhere = make_device()
    assert claim_job(job.pk, "run-1", device_id=elsewhere.pk) is None
    assert claim_job(job.pk, "run-1", device_id=job.device_id) is not None


def test_progress_is_recorded_only_for_the_claiming_run(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert not report_progress(job.pk, "run-1", 0.5, "not claimed yet")
    claim_job(job.pk, "run-1")
    assert report_progress(job.pk, "run-1", 0.5, "warm-up done")
    assert not report_progress(job.pk, "run-2", 0.9, "an older run")
    assert report_progress(job.pk, "run-1", 7.0, "clamped")
    job.refresh_from_db()
    assert (job.progress, job.progress_message) == (1.0, "clamped")


def test_cancel_tells_a_running_worker_to_stop(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    claim_job(job.pk, "run-1")
    assert cancel_job(job)
    assert job.state == JobState.CANCELLED and job.finished_at is not None
    assert not report_progress(job.pk, "run-1", 0.6, "still going")
    job.device.refresh_from_db()
    assert job.device.status == DeviceStatus.ONLINE


def test_cancel_a_queued_job_then_nothing_can_claim_it(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert cancel_job(job)
    assert claim_job(job.pk, "run-1") is None
    assert not cancel_job(job)  # already cancelled


def test_fail_needs_the_claiming_run(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    claim_job(job.pk, "run-1")
    assert not fail_job(job.pk, "run-2", "not mine")
    assert fail_job(job.pk, "run-1", "onnxruntime could not load the model: bad opset")
    job.refresh_from_db()
    assert job.state == JobState.FAILED and job.failure_reason.startswith("onnxruntime")
    assert not fail_job(job.pk, "run-1", "twice")


def test_finished_jobs_stay_finished(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    claim_job(job.pk, "run-1")
    assert not job.succeed("run-2")
    # The instance is stale (it still says queued), but the UPDATE's condition is on the row.
    assert job.succeed("run-1")
    assert not job.cancel() and not job.requeue() and not job.fail("late")
    assert not job.start("run-2")
    assert ProfilingJob.objects.get(pk=job.pk).state == JobState.SUCCEEDED


def test_illegal_moves_are_refused_before_touching_the_row() -> None:
    with pytest.raises(ValueError, match="cannot go from succeeded to running"):
        ProfilingJob.objects.transition(1, JobState.RUNNING, from_states=[JobState.SUCCEEDED])
