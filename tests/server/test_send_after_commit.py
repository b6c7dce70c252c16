"""The one "send after commit" helper: a message goes out only once the row it names is
committed, a broker that refuses it is logged naming what stays pending, and the profiling job
is sent only while still queued, with ``sent_at`` noted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import transaction

from server.profiling.models import ProfilingJob
from server.taskqueue import send_after_commit, try_send

pytestmark = pytest.mark.django_db


@pytest.fixture
def queue_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """The task queue's log, captured ("server" loggers do not propagate)."""
    logger = logging.getLogger("server.taskqueue")
    logger.addHandler(caplog.handler)
    yield caplog
    logger.removeHandler(caplog.handler)


def _refuse(*args: Any) -> None:
    raise ConnectionError("[Errno 111] Connection refused")


def test_the_message_goes_out_only_when_the_transaction_commits(django_capture_on_commit_callbacks: Any) -> None:
    sent: list[tuple[int, str]] = []
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with transaction.atomic():
            send_after_commit(lambda *a: sent.append(a), 7, "x", what="thing 7 stays queued", then="nobody")
            assert sent == []
    assert len(callbacks) == 1 and sent == [(7, "x")]


def test_a_refused_message_is_logged_naming_what_stays_pending(queue_log: pytest.LogCaptureFixture) -> None:
    assert try_send(_refuse, 7, what="thing 7 stays queued", then="the janitor sends it again") is False
    assert "thing 7 stays queued: its message could not be sent (ConnectionError:" in queue_log.text
    assert "Connection refused" in queue_log.text and "the janitor sends it again" in queue_log.text
    assert try_send(lambda n: None, 7, what="thing 7 stays queued", then="nobody") is True


def test_a_refused_message_after_commit_never_undoes_the_request(
    django_capture_on_commit_callbacks: Any, queue_log: pytest.LogCaptureFixture
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            send_after_commit(_refuse, 3, what="thing 3 stays queued", then="nobody")
    assert "thing 3 stays queued: its message could not be sent" in queue_log.text


def test_a_job_is_sent_once_committed_and_notes_when(
    member: Any, make_job: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.profiling import services

    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(services, "send_profiling_job", lambda job_id, device_id: sent.append((job_id, device_id)))
    with django_capture_on_commit_callbacks(execute=True):
        job = make_job(member.team)
    assert sent == [(job.pk, job.device_id)]
    assert ProfilingJob.objects.get(pk=job.pk).sent_at is not None


def test_a_job_cancelled_before_the_commit_is_not_sent(
    member: Any, make_job: Any, django_capture_on_commit_callbacks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from server.profiling import services

    sent: list[tuple[int, int]] = []
    monkeypatch.setattr(services, "send_profiling_job", lambda job_id, device_id: sent.append((job_id, device_id)))
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            job = make_job(member.team)
            ProfilingJob.objects.get(pk=job.pk).cancel()
    assert sent == []
    assert ProfilingJob.objects.get(pk=job.pk).sent_at is None
