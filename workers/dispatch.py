"""Sending a job to the worker that holds its device.

Every device has its own queue, consumed only by that device's process (``workers.run``), and
a message carries nothing but the job id: the task reloads everything else from the job row.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings


def device_queue(device_id: int) -> str:
    """The queue of one device: ``device.<pk>``, behind ``LATENCYLAB_QUEUE_PREFIX`` when set."""
    return f"{getattr(settings, 'LATENCYLAB_QUEUE_PREFIX', '')}device.{device_id}"


def enqueue_job(job: Any) -> None:
    """Send ``run_profiling_job(job.pk)`` to the queue of the job's device.

    Called by the server on transaction commit; sending the same job twice is harmless, because
    the task claims the job with a conditional update before it runs it.
    """
    from workers.tasks import run_profiling_job

    # A string queue goes through the anonymous direct exchange with the queue's name as routing
    # key, so the message lands in the device's queue even before its worker first declared it.
    run_profiling_job.apply_async(args=[job.pk], queue=device_queue(job.device_id))


def purge_queues(prefix: str) -> int:
    """Delete every queue, binding and pending message whose queue name starts with ``prefix``;
    returns how many broker entries went.

    For runs that used a private ``LATENCYLAB_QUEUE_PREFIX`` (a test session, a benchmark) to
    leave the shared broker as they found it. Refuses an empty prefix: that would be every queue.
    """
    import json
    from pathlib import Path

    from workers.celery_app import app

    if not prefix:
        raise ValueError("purge_queues needs a non-empty prefix")
    url = str(app.conf.broker_url)
    removed = 0
    if url.startswith(("redis://", "rediss://")):
        import redis

        client = redis.Redis.from_url(url)
        # The queue's list and kombu's binding sets all carry the queue name in their key.
        for key in client.scan_iter(match=f"*{prefix}*"):
            removed += client.delete(key)
        # Delivered but unacknowledged messages wait in one hash for the whole broker.
        for tag, raw in client.hgetall("unacked").items():
            if str(json.loads(raw)[2]).startswith(prefix):
                removed += client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    elif url.startswith("filesystem"):
        options = app.conf.broker_transport_options or {}
        for folder, pattern in (
            (options.get("data_folder_in"), f"*.{prefix}*.msg"),
            (options.get("control_folder"), f"{prefix}*.exchange"),
        ):
            for path in Path(folder).glob(pattern) if folder else ():
                path.unlink(missing_ok=True)
                removed += 1
    return removed
