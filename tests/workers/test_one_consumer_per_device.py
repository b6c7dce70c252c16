"""What the one-job-per-device guarantee rests on: each device process consumes only its own queue
with one pool process and a prefetch of one, and the task is acknowledged late, given back if its
process dies, and bounded in time."""

from __future__ import annotations

from server.taskqueue import device_queue
from workers.device_process import celery_argv
from workers.tasks import run_profiling_job


def _option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_device_process_consumes_one_queue_one_message_at_a_time(settings: object) -> None:
    settings.LATENCYLAB_QUEUE_PREFIX = "lab2."
    queue = device_queue(42)
    assert queue == "lab2.device.42"
    argv = celery_argv(queue, "node@host", "INFO")
    assert _option(argv, "--queues") == queue
    assert _option(argv, "--concurrency") == "1"
    assert _option(argv, "--prefetch-multiplier") == "1"
    assert _option(argv, "--pool") == "prefork"


def test_task_is_acked_late_and_time_limited() -> None:
    from workers.celery_app import app

    assert run_profiling_job.acks_late and run_profiling_job.reject_on_worker_lost
    assert run_profiling_job.ignore_result
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_time_limit and app.conf.task_soft_time_limit < app.conf.task_time_limit
    assert not app.conf.task_always_eager
