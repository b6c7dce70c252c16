"""A worker killed with SIGKILL in the middle of a job and started again finishes the job exactly
once: the restarted run re-queues it (attempt 2), and the message the dead run never acknowledged
is harmless when the broker hands it out again."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.helpers import LONG, job_row, long_graph, submit, upload, wait_finished
from tests.waiting import wait_for


def _unacked_tags(job_id: int, queue: str) -> list[str]:
    """Delivery tags of the messages for ``job_id`` that Redis holds as delivered but unacknowledged."""
    import base64

    import redis

    from workers.celery_app import app

    client = redis.Redis.from_url(app.conf.broker_url)
    tags = []
    for tag, raw in client.hgetall("unacked").items():
        message, _exchange, routing_key = json.loads(raw)
        args = json.loads(base64.b64decode(message["body"]))[0]
        if routing_key == queue and args == [job_id]:
            tags.append(tag.decode())
    return tags


def _redeliver(tags: list[str]) -> None:
    """Give unacknowledged messages back to their queue, as Redis does after the visibility timeout."""
    from workers.celery_app import app

    with app.connection_for_write() as conn:
        for tag in tags:
            conn.default_channel.qos.restore_by_tag(tag, leftmost=True)


@pytest.mark.django_db(transaction=True)
def test_killed_worker_restarts_and_finishes_the_job_once(start_worker: Any, e2e_api: Any) -> None:
    from server.profiling.models import JobResult
    from server.taskqueue import device_queue
    from workers.celery_app import app

    worker = start_worker()
    device = worker.device()
    job_id = submit(e2e_api, upload(e2e_api, long_graph()), device.pk, LONG)

    wait_for(lambda: (j := job_row(job_id)).state == "running" and j.progress > 0, 60, "the job to make progress")
    first = job_row(job_id)
    assert first.attempts == 1
    worker.kill()
    assert job_row(job_id).state == "running"  # nobody is left to say otherwise

    worker.start()  # same worker name: a new run with a new token
    job = wait_finished(job_id, timeout=120)
    assert job.state == "succeeded", job.failure_reason
    assert job.attempts == 2
    assert job.claimed_by != first.claimed_by
    results = JobResult.objects.filter(job_id=job_id)
    assert results.count() == 1 and results.get().attempt == 2

    if str(app.conf.broker_url).startswith("redis"):
        # acks_late: the killed run's message is still delivered-but-unacknowledged. Hand it out
        # again now instead of after the visibility timeout; the claim must turn it away.
        tags = _unacked_tags(job_id, device_queue(device.pk))
        assert len(tags) == 1, "the dead run's message should be waiting for redelivery"
        _redeliver(tags)
        wait_for(
            lambda: not _unacked_tags(job_id, device_queue(device.pk)) and worker_consumed(device_queue(device.pk)),
            30,
            "the redelivered message to be consumed",
        )
        # The worker's consumer turned it away after a peek at the server (or, had the peek got no
        # answer, its pool process's claim did).
        dropped = f"job {job_id}: message dropped before a process was spent on it"
        wait_for(
            lambda: dropped in (tail := worker.log_tail(400)) or "'not-queued'" in tail,
            10,
            "the worker to log the turned-away message",
        )
        job = job_row(job_id)
        assert job.state == "succeeded" and job.attempts == 2
        assert JobResult.objects.filter(job_id=job_id).count() == 1


def worker_consumed(queue: str) -> bool:
    """Whether the Redis list of ``queue`` is empty (every message taken by a worker)."""
    import redis

    from workers.celery_app import app

    return redis.Redis.from_url(app.conf.broker_url).llen(queue) == 0
