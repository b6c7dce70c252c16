"""The reconciler of a device's agent: a queued job of an idle device whose message went out long
ago is sent again; a busy device, a recent message or an offline device is left alone."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from server.devices.models import Device, DeviceStatus
from server.profiling.models import ProfilingJob
from server.profiling.services import claim_job, dispatch_job, resend_lost_jobs
from server.taskqueue import device_queue, purge_queues
from tests.brokers import broker

pytestmark = pytest.mark.django_db


@pytest.fixture
def private_prefix(settings: Any) -> Iterator[str]:
    """A queue prefix of this test alone on the real broker, purged afterwards."""
    prefix = f"test-{uuid.uuid4().hex[:10]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    yield prefix
    purge_queues(prefix)


def _sent(*devices: Any) -> list[tuple[int, int]]:
    """The (job, device) pairs waiting in these devices' queues of the real broker, taken out."""
    from workers.celery_app import app

    found = []
    with app.connection_for_read() as conn:
        for device in devices:
            queue = conn.SimpleQueue(device_queue(device.pk), no_ack=True)
            try:
                while True:
                    try:
                        message = queue.get(timeout=0.5)
                    except queue.Empty:
                        break
                    found.append((message.decode()[0][0], device.pk))
            finally:
                queue.close()
    return found


def _age(job: Any, seconds: float) -> None:
    """Pretend the job was made, and its message sent, ``seconds`` ago."""
    then = timezone.now() - timedelta(seconds=seconds)
    ProfilingJob.objects.filter(pk=job.pk).update(created_at=then, sent_at=then)


def test_a_lost_message_of_an_idle_device_is_sent_again(
    member: Any, make_job: Any, make_device: Any, private_prefix: str
) -> None:
    device = make_device()
    old, fresh = make_job(member.team, device=device), make_job(member.team, device=device)
    _age(old, settings.LATENCYLAB_RESEND_AFTER_SECONDS + 5)
    _sent(device)  # the messages of the submissions
    assert resend_lost_jobs([device.pk]) == [old.pk]
    assert _sent(device) == [(old.pk, device.pk)]
    assert ProfilingJob.objects.get(pk=old.pk).sent_at > timezone.now() - timedelta(seconds=5)
    assert resend_lost_jobs([device.pk]) == []  # just sent: not again
    assert resend_lost_jobs([device.pk], force=True) == [old.pk, fresh.pk]  # a worker that just started


def test_a_busy_or_offline_device_is_left_alone(
    member: Any, make_job: Any, make_device: Any, private_prefix: str
) -> None:
    busy, offline = make_device(), make_device()
    running, waiting = make_job(member.team, device=busy), make_job(member.team, device=busy)
    claim_job(running.pk, "run-1")
    lost = make_job(member.team, device=offline)
    for job in (waiting, lost):
        _age(job, settings.LATENCYLAB_RESEND_AFTER_SECONDS + 5)
    Device.objects.filter(pk=offline.pk).update(status=DeviceStatus.OFFLINE)
    _sent(busy, offline)  # the messages of the submissions
    assert resend_lost_jobs([busy.pk, offline.pk]) == []
    assert _sent(busy, offline) == []


def test_a_device_that_just_finished_a_job_is_still_working_through_its_queue(
    member: Any, make_job: Any, make_device: Any, private_prefix: str
) -> None:
    device = make_device()
    done, waiting = make_job(member.team, device=device), make_job(member.team, device=device)
    claim_job(done.pk, "run-1")
    ProfilingJob.objects.get(pk=done.pk).cancel()
    _age(waiting, settings.LATENCYLAB_RESEND_AFTER_SECONDS + 5)
    assert resend_lost_jobs([device.pk]) == []


def test_a_broker_that_refuses_leaves_the_job_queued_and_says_so(
    member: Any,
    make_job: Any,
    make_device: Any,
    private_prefix: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    job = make_job(member.team, device=make_device())
    logger = logging.getLogger("server.taskqueue")  # it says what the broker refused
    logger.addHandler(caplog.handler)
    try:
        with broker(monkeypatch, "redis://127.0.0.1:1/0"):  # nothing listens there: a broker that is down
            assert dispatch_job(job.pk, job.device_id) is False
    finally:
        logger.removeHandler(caplog.handler)
    assert ProfilingJob.objects.get(pk=job.pk).state == "queued"
    assert f"job {job.pk} stays queued" in caplog.text and "could not be sent" in caplog.text
    assert "Connection refused" in caplog.text or "Error 111" in caplog.text
    # And the session's broker works again afterwards.
    assert dispatch_job(job.pk, job.device_id) is True
