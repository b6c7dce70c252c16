"""Who cancelled a job is recorded with it: the dashboard's and the API's user; a cancellation
by code without a user leaves it empty; a job that already finished keeps its state and nobody."""

from __future__ import annotations

from typing import Any

import pytest

from server.profiling.models import JobState, ProfilingJob
from server.profiling.services import cancel_job, claim_job

pytestmark = pytest.mark.django_db


def test_the_api_records_who_cancelled(member: Any, api: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert claim_job(job.pk, "run-1") is not None
    resp = api.post(f"/api/jobs/{job.pk}/cancel/")
    assert resp.status_code == 200, resp.content
    job.refresh_from_db()
    assert (job.state, job.cancelled_by_id) == (JobState.CANCELLED, member.user.pk)
    assert job.finished_at is not None


def test_a_cancellation_without_a_user_records_nobody(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert cancel_job(job)
    assert job.state == JobState.CANCELLED and job.cancelled_by is None


def test_a_finished_job_is_not_cancelled_again_by_someone_else(member: Any, make_member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert cancel_job(job, user=member.user)
    other = make_member()
    assert not cancel_job(ProfilingJob.objects.get(pk=job.pk), user=other.user)
    job.refresh_from_db()
    assert job.cancelled_by_id == member.user.pk
