"""What the one-job-per-device guarantee rests on: each device process consumes only its own queue
one job at a time (a prefetch of one; its pool holds a warm spare process the consumer does not
count), and the task is acknowledged late, given back if its
process dies, and bounded in time by the limit its agent was given."""

from __future__ import annotations

from server.taskqueue import device_queue
from tests.workers.conftest import fake_cpu
from workers.celery_app import make_app
from workers.context import WorkerContext
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
    assert _option(argv, "--pool") == "custom"  # workers.device_pool: prefork and a warm spare


def test_task_is_acked_late_and_time_limited() -> None:
    context = WorkerContext("lab-1", "f" * 32, {7: fake_cpu(1)}, task_time_limit=600)
    app = make_app({"CELERY_BROKER_URL": "redis://broker.example:6379/0", **context.to_env()})  # not connected

    assert run_profiling_job.acks_late and run_profiling_job.reject_on_worker_lost
    assert run_profiling_job.ignore_result
    assert app.conf.task_acks_late and app.conf.task_reject_on_worker_lost
    assert app.conf.worker_prefetch_multiplier == 1
    assert app.conf.task_time_limit == 600 and app.conf.task_soft_time_limit < 600
    # the broker keeps a taken message invisible for longer than a job may run
    assert app.conf.broker_transport_options["visibility_timeout"] > 600
    assert not app.conf.task_always_eager
    assert "workers.tasks" in app.conf.imports
