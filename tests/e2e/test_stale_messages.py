"""A message whose job is not the device's to run any more (it finished, or moved) is dropped by
the device process's consumer after one peek at the server, without a pool process: copies of
messages (resends, re-queues, redeliveries) cost milliseconds, and the next job is not kept
waiting behind them (``workers.stale_messages``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import QUICK, submit, tiny_graph, upload, wait_finished
from tests.waiting import wait_for

COPIES = 5


@pytest.mark.django_db(transaction=True)
def test_copies_of_a_finished_jobs_message_are_dropped_without_a_pool_process(start_worker: Any, e2e_api: Any) -> None:
    from server.profiling.models import JobResult
    from server.profiling.services import dispatch_job

    worker = start_worker()
    device = worker.device()
    model_id = upload(e2e_api, tiny_graph("stale"))
    done = wait_finished(submit(e2e_api, model_id, device.pk, QUICK))
    assert done.state == "succeeded", done.failure_reason

    for _ in range(COPIES):
        assert dispatch_job(done.pk, device.pk)
    after = wait_finished(submit(e2e_api, model_id, device.pk, QUICK))
    assert after.state == "succeeded", after.failure_reason

    dropped = f"job {done.pk}: message dropped before a process was spent on it"
    wait_for(lambda: worker.log_tail(400).count(dropped) == COPIES or None, 30, f"{COPIES} drops", interval=0.2)
    log = worker.log_tail(400)
    # no pool process claimed a copy (it would log the claim's answer), and nothing ran twice
    assert f"job {done.pk}: not-queued" not in log, log
    assert JobResult.objects.filter(job_id=done.pk).count() == 1
