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
