"""A heartbeat sends again the lost messages of the machine's idle devices, but not of a device
whose measuring process is down and restarting: what its queue holds waits for the process, and
a copy sent on every beat of its back-off would pile up (66 messages for 6 jobs once)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from devicelab.lab_protocol import Heartbeat
from server.profiling.models import ProfilingJob
from tests.labs.protocol_calls import lab_client, post, queue_prefix

pytestmark = pytest.mark.django_db
__all__ = ["queue_prefix"]  # the fixture, used by name


def _lost(job: Any) -> None:
    """Pretend the job's message went out long enough ago to count as lost."""
    then = timezone.now() - timedelta(seconds=settings.LATENCYLAB_RESEND_AFTER_SECONDS + 5)
    ProfilingJob.objects.filter(pk=job.pk).update(created_at=then, sent_at=then)


def test_a_restarting_device_gets_no_message_again_and_an_idle_one_does(
    add_lab: Callable[..., Any],
    member: Any,
    make_device: Callable[..., Any],
    make_job: Callable[..., Any],
    queue_prefix: str,
) -> None:
    _, token = add_lab("rack")
    client = lab_client(token)
    down = make_device(worker="rack", identity="cpu:rack-down")
    idle = make_device(worker="rack", identity="cpu:rack-idle")
    waiting, lost = make_job(member.team, device=down), make_job(member.team, device=idle)
    for job in (waiting, lost):
        _lost(job)

    beat = Heartbeat("rack", "run-1", ["cpu:rack-down", "cpu:rack-idle"], restarting=["cpu:rack-down"])
    assert post(client, "/api/lab/heartbeat", beat).status_code == 200

    waiting.refresh_from_db()
    lost.refresh_from_db()
    recently = timezone.now() - timedelta(seconds=5)
    assert waiting.sent_at < recently, "a message was sent again to a device whose process is restarting"
    assert lost.sent_at > recently, "the idle device's lost message was not sent again"

    # once its process is back, the device is idle like any other
    assert post(client, "/api/lab/heartbeat", Heartbeat("rack", "run-1", ["cpu:rack-down"])).status_code == 200
    waiting.refresh_from_db()
    assert waiting.sent_at > recently
