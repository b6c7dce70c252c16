"""A running job whose run reported nothing for its lease (``LATENCYLAB_JOB_LEASE_SECONDS``) is
lost though its worker heart-beats (a hung process, a task that ended without a word): the lab's
sweep queues it again with an attempt counted, or fails it past ``MAX_ATTEMPTS``. A job that
reports is left alone."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from server.profiling.models import MAX_ATTEMPTS, JobState, ProfilingJob
from server.profiling.services import claim_job, report_progress, sweep_lab
from server.taskqueue import purge_queues

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _private_queues(settings: Any) -> Iterator[None]:
    prefix = f"test-{uuid.uuid4().hex[:10]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    yield
    purge_queues(prefix)


def _silent_for(job: Any, seconds: float) -> None:
    then = timezone.now() - timedelta(seconds=seconds)
    ProfilingJob.objects.filter(pk=job.pk).update(started_at=then, progress_at=then)


def test_a_silent_running_job_is_queued_again_and_a_reporting_one_left_alone(
    member: Any, make_job: Any, make_device: Any
) -> None:
    device = make_device()
    silent, talking = make_job(member.team, device=device), make_job(member.team, device=make_device())
    for job in (silent, talking):
        assert claim_job(job.pk, "run-1") is not None
    _silent_for(silent, settings.LATENCYLAB_JOB_LEASE_SECONDS + 5)
    _silent_for(talking, settings.LATENCYLAB_JOB_LEASE_SECONDS + 5)
    assert report_progress(talking.pk, "run-1", 0.3, "measuring")  # it spoke just now

    sweep_lab()

    silent.refresh_from_db()
    assert (silent.state, silent.claimed_by, silent.attempts) == (JobState.QUEUED, "", 1)
    assert (
        f"attempt 1 lost: its run reported nothing for {settings.LATENCYLAB_JOB_LEASE_SECONDS} s" in silent.moved_from
    )
    talking.refresh_from_db()
    assert talking.state == JobState.RUNNING
    assert not report_progress(silent.pk, "run-1", 0.5)  # the lost attempt is told to stop


def test_a_job_silent_at_its_last_attempt_fails_saying_why(member: Any, make_job: Any, make_device: Any) -> None:
    job = make_job(member.team, device=make_device())
    assert claim_job(job.pk, "run-1") is not None
    ProfilingJob.objects.filter(pk=job.pk).update(attempts=MAX_ATTEMPTS)
    _silent_for(job, settings.LATENCYLAB_JOB_LEASE_SECONDS + 5)

    sweep_lab()

    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert "reported nothing" in job.failure_reason and f"limit {MAX_ATTEMPTS}" in job.failure_reason
