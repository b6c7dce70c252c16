"""A process of a running worker dies mid-job while the agent lives on: the job fails with a reason
that says what died, and the device serves the next job.

The pool process (where the backend runs) dying is what a runtime crashing on a model looks like:
Celery gives the message back (reject_on_worker_lost) and the task, finding the job still running
under its own run's token, fails it rather than measuring it blind. The device's whole Celery
process dying is caught by the agent, which fails the job and restarts the process.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import psutil
import pytest

from tests.e2e.helpers import LONG, QUICK, long_graph, submit, tiny_graph, upload, wait_finished, wait_running
from tests.waiting import wait_for


def _device_process(worker: Any, other_than: int | None = None) -> psutil.Process:
    """The device's Celery main process (a child of the agent), once one other than ``other_than`` runs."""
    agent = psutil.Process(worker.proc.pid)

    def find() -> psutil.Process | None:
        for p in agent.children():
            try:
                if p.pid != other_than and "workers.device_process" in " ".join(p.cmdline()):
                    return p
            except psutil.Error:  # exited (or a zombie) between listing and reading
                continue
        return None

    return wait_for(find, 30, "the device process")


@pytest.mark.django_db(transaction=True)
def test_pool_process_crash_fails_the_job_and_the_device_serves_on(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)
    wait_running(job_id)

    pool = _device_process(worker).children()
    assert len(pool) == 1
    os.kill(pool[0].pid, signal.SIGKILL)  # as a segfault in the runtime would

    job = wait_finished(job_id, timeout=60)
    assert job.state == "failed" and job.attempts == 1
    assert "died during attempt 1" in job.failure_reason
    nxt = wait_finished(submit(e2e_api, upload(e2e_api, tiny_graph("after-crash")), device.pk, QUICK))
    assert nxt.state == "succeeded", nxt.failure_reason


@pytest.mark.django_db(transaction=True)
def test_agent_restarts_a_dead_device_process(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)
    wait_running(job_id)

    first = _device_process(worker)
    first.kill()

    job = wait_finished(job_id, timeout=60)
    assert job.state == "failed"
    assert f"Celery process of device #{device.pk} was killed by SIGKILL" in job.failure_reason
    second = _device_process(worker, other_than=first.pid)
    assert second.pid != first.pid
    nxt = wait_finished(submit(e2e_api, upload(e2e_api, tiny_graph("after-restart")), device.pk, QUICK))
    assert nxt.state == "succeeded", nxt.failure_reason
    assert worker.proc.poll() is None  # the agent itself never stopped
