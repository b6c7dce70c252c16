"""A job that comes back while still running under this run's token was being measured by a pool
process that died (the broker redelivered it): it is not run blind. A first death is retried as
the machine's failure; a second fails the job as the model's, saying so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devicelab.lab_protocol import Claim
from workers.tasks import run_profiling_job


def test_redelivered_job_of_a_dead_pool_process_is_retried_then_fails_with_the_reason(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job()
    claimed = agent.server.claim(job.pk, Claim(as_device_process.token, job.device_id))
    assert claimed.outcome == "claimed"  # the attempt whose pool process died

    assert run_profiling_job(job.pk) == "lost"
    job.refresh_from_db()
    assert (job.state, job.attempts, job.process_deaths) == ("queued", 1, 1)
    assert "died during attempt 1" in job.moved_from

    assert agent.server.claim(job.pk, Claim(as_device_process.token, job.device_id)).outcome == "claimed"
    assert run_profiling_job(job.pk) == "lost"  # the second attempt's process died too
    job.refresh_from_db()
    assert (job.state, job.attempts) == ("failed", 2)
    assert "died during attempt 2" in job.failure_reason and "the model is taken to crash" in job.failure_reason
