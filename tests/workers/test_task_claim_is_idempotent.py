"""A second message for a job that already ran (or that another run holds) does nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devicelab.lab_protocol import Claim
from workers.tasks import run_profiling_job


def test_second_delivery_of_a_finished_job_is_a_no_op(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    from server.profiling.models import JobResult

    job = make_job()
    assert run_profiling_job(job.pk) == "succeeded"
    assert run_profiling_job(job.pk) == "not-queued"

    job.refresh_from_db()
    assert job.attempts == 1
    assert JobResult.objects.filter(job=job).count() == 1


def test_job_held_by_another_run_is_left_alone(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job()
    assert agent.server.claim(job.pk, Claim("another-run", job.device_id)).outcome == "claimed"

    assert run_profiling_job(job.pk) == "not-queued"
    job.refresh_from_db()
    assert job.state == "running" and job.claimed_by == "another-run" and job.attempts == 1


def test_missing_job_is_skipped(as_device_process: Any) -> None:
    assert run_profiling_job(987654321) == "missing"


def test_a_claim_without_an_answer_is_made_again_with_the_same_key() -> None:
    from workers.server_api import ServerUnreachable
    from workers.tasks import CLAIM_TRIES, claim

    calls: list[Claim] = []

    class Flaky:
        def claim(self, job_id: int, call: Claim) -> str:
            calls.append(call)
            if len(calls) < CLAIM_TRIES:
                raise ServerUnreachable("POST /api/lab/jobs/1/claim: 502 Bad Gateway")
            return "claimed"

    assert claim(Flaky(), 1, Claim("run-1", 7, key="k1"), pause_s=0.01) == "claimed"  # type: ignore[arg-type]
    assert [c.key for c in calls] == ["k1"] * CLAIM_TRIES

    calls.clear()

    class Down:
        def claim(self, job_id: int, call: Claim) -> str:
            calls.append(call)
            raise ServerUnreachable("POST /api/lab/jobs/1/claim: connection refused")

    import pytest

    with pytest.raises(ServerUnreachable):
        claim(Down(), 1, Claim("run-1", 7, key="k1"), pause_s=0.01)  # type: ignore[arg-type]
    assert len(calls) == CLAIM_TRIES
