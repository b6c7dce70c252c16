"""A process of a running worker dies mid-job while the agent lives on: the job is retried once
(one death may be the machine's: an out-of-memory kill, an operator's ``kill -9``) and fails with a
reason that says what died when its process dies again; the device serves the next job.

The pool process (where the backend runs) dying is what a runtime crashing on a model looks like:
Celery gives the message back (reject_on_worker_lost) and the task, finding the job still running
under its own run's token, reports the death rather than measuring it blind. The device's whole
Celery process dying is caught by the agent, which reports it and restarts the process.
"""

from __future__ import annotations

from typing import Any

import psutil
import pytest

from tests.e2e.helpers import LONG, QUICK, job_row, long_graph, submit, tiny_graph, upload, wait_finished, wait_running
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


def _measuring(worker: Any, device: Any) -> psutil.Process:
    """The pool process measuring the device now: the holder of its device lock (the device
    process's other pool process is the warm spare waiting for the next job)."""
    from workers.device_lock import lock_path

    def find() -> psutil.Process | None:
        pool = {p.pid: p for p in _device_process(worker).children()}
        try:
            holder = int(lock_path(device.identity).read_text().strip() or 0)
        except (OSError, ValueError):
            return None
        return pool.get(holder)

    return wait_for(find, 30, "the measuring pool process")


def _wait_attempt_running(job_id: int, attempt: int) -> Any:
    return wait_for(
        lambda: (j := job_row(job_id)).state == "running" and j.attempts == attempt and j.progress > 0 and j,
        90,
        f"attempt {attempt} of job {job_id} to make progress",
    )


@pytest.mark.django_db(transaction=True)
def test_a_pool_process_killed_twice_by_one_job_fails_it_and_the_device_serves_on(
    start_worker: Any, e2e_api: Any
) -> None:
    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)
    wait_running(job_id)

    for attempt in (1, 2):
        _wait_attempt_running(job_id, attempt)
        _measuring(worker, device).kill()  # SIGKILL, as a segfault in the runtime would

    job = wait_finished(job_id, timeout=90)
    assert (job.state, job.attempts, job.process_deaths) == ("failed", 2, 2), job.failure_reason
    assert "died during attempt 2" in job.failure_reason and "the model is taken to crash" in job.failure_reason
    assert "attempt 1 lost: the worker process measuring the job died during attempt 1" in job.moved_from
    nxt = wait_finished(submit(e2e_api, upload(e2e_api, tiny_graph("after-crash")), device.pk, QUICK))
    assert nxt.state == "succeeded", nxt.failure_reason


@pytest.mark.django_db(transaction=True)
def test_one_kill_of_the_device_process_is_retried_and_the_job_succeeds(start_worker: Any, e2e_api: Any) -> None:
    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)
    wait_running(job_id)

    first = _device_process(worker)
    first.kill()

    job = wait_finished(job_id, timeout=120)
    assert (job.state, job.attempts, job.process_deaths) == ("succeeded", 2, 1), job.failure_reason
    assert f"attempt 1 lost: the Celery process of device #{device.pk} was killed by SIGKILL" in job.moved_from
    second = _device_process(worker, other_than=first.pid)
    assert second.pid != first.pid
    nxt = wait_finished(submit(e2e_api, upload(e2e_api, tiny_graph("after-restart")), device.pk, QUICK))
    assert nxt.state == "succeeded", nxt.failure_reason
    assert worker.proc.poll() is None  # the agent itself never stopped


@pytest.mark.django_db(transaction=True)
def test_a_hung_measuring_process_loses_its_attempt_and_the_job_runs_again(
    start_worker: Any, e2e_api: Any, settings: Any
) -> None:
    settings.LATENCYLAB_JOB_LEASE_SECONDS = 10  # the live server's: claims give it, sweeps use it
    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)
    wait_running(job_id)

    pool = _measuring(worker, device)
    pool.suspend()  # SIGSTOP: hung, its agent heart-beating on
    try:
        lost = wait_for(
            lambda: (j := job_row(job_id)).state == "queued" and j,
            60,
            "the silent attempt to be taken back",
            interval=0.5,
        )
        assert "attempt 1 lost: its run reported nothing for 10 s" in lost.moved_from
    finally:
        pool.resume()
    job = wait_finished(job_id, timeout=120)
    assert (job.state, job.attempts) == ("succeeded", 2), job.failure_reason
