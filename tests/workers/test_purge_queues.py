"""purge_queues removes a prefix's queues and messages from the real broker and nothing else."""

from __future__ import annotations

import uuid

import pytest

from server.taskqueue import purge_queues


def _pending(queue: str) -> int:
    """Messages waiting in a queue (0 when the broker no longer knows the queue)."""
    from amqp.exceptions import ChannelError

    from server.taskqueue import app

    with app.connection_for_read() as conn:
        try:
            return int(conn.default_channel.queue_declare(queue, passive=True).message_count)
        except ChannelError:
            return 0


def test_purge_removes_only_the_given_prefix() -> None:
    from server.taskqueue import PROFILING_TASK, app

    mine, theirs = f"test-{uuid.uuid4().hex[:10]}.", f"test-{uuid.uuid4().hex[:10]}."
    try:
        for prefix in (mine, theirs):
            for _ in range(2):
                app.send_task(PROFILING_TASK, args=[1], queue=f"{prefix}device.1")  # as the server sends it
        assert _pending(f"{mine}device.1") == 2

        assert purge_queues(mine) >= 2
        assert _pending(f"{mine}device.1") == 0
        assert _pending(f"{theirs}device.1") == 2
    finally:
        purge_queues(mine)
        purge_queues(theirs)


def test_empty_prefix_is_refused() -> None:
    with pytest.raises(ValueError, match="non-empty prefix"):
        purge_queues("")
