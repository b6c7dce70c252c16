"""The same job sent twice (a redelivery, a re-enqueue) runs once: the second message finds the job
claimed or finished and does nothing."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.e2e.helpers import QUICK, job_row, submit, tiny_graph, upload, wait_finished
from tests.waiting import wait_for


@pytest.mark.django_db(transaction=True)
def test_a_job_enqueued_twice_runs_once(start_worker: Any, e2e_api: Any) -> None:
    from server.profiling.models import JobResult
    from server.taskqueue import send_profiling_job

    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, tiny_graph("twice")), device.pk, QUICK)
    row = job_row(job_id)
    send_profiling_job(row.pk, row.device_id)  # the second message for the same job

    job = wait_finished(job_id)
    assert job.state == "succeeded", job.failure_reason
    # One "Task ...run_profiling_job[id] succeeded in ...: '<outcome>'" line per message that
    # reached a pool process (the start-up banner also names the task, so count the outcome
    # lines, not the name); a copy the consumer's peek ruled out never reaches one.
    outcomes = re.compile(r"run_profiling_job\[[^]]+\] succeeded in [^:]+: '([a-z-]+)'")
    dropped = f"job {job_id}: message dropped before a process was spent on it"

    def both_handled() -> bool:
        tail = worker.log_tail(400)
        return len(outcomes.findall(tail)) + tail.count(dropped) >= 2

    wait_for(both_handled, 30, "the worker to receive and handle both messages")
    tail = worker.log_tail(400)
    assert tail.count("'succeeded'") == 1
    assert dropped in tail or "'not-queued'" in tail or "'taken'" in tail
    job = job_row(job_id)
    assert job.attempts == 1
    assert JobResult.objects.filter(job_id=job_id).count() == 1
