"""send_profiling_job puts one message on the device's own queue of the real broker, carrying only the
job id."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from server.taskqueue import PROFILING_TASK, device_queue, purge_queues, send_profiling_job


@pytest.fixture
def private_prefix(settings: Any) -> Iterator[str]:
    """A queue prefix of this test alone, purged afterwards."""
    prefix = f"test-{uuid.uuid4().hex[:10]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    yield prefix
    purge_queues(prefix)


def _take(queue: str) -> Any:
    """The next message of a queue, read straight from the server's broker (acknowledged at once)."""
    from server.taskqueue import app

    with app.connection_for_read() as conn:
        simple = conn.SimpleQueue(queue, no_ack=True)
        try:
            return simple.get(timeout=10)
        finally:
            simple.close()


def test_message_carries_only_the_job_id_to_the_device_queue(private_prefix: str, make_job: Callable[..., Any]) -> None:
    job = make_job()
    send_profiling_job(job.pk, job.device_id)

    message = _take(device_queue(job.device_id))
    assert device_queue(job.device_id) == f"{private_prefix}device.{job.device_id}"
    assert message.headers["task"] == PROFILING_TASK == "workers.tasks.run_profiling_job"
    args, kwargs, _embed = message.decode()
    assert args == [job.pk] and kwargs == {}
