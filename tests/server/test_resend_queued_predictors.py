"""The trainer's reconciliation: a predictor still queued long after it was requested has lost its
message, and its training is sent again on the trainer's queue of the real broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from server.taskqueue import TRAINING_TASK, purge_queues, trainer_queue
from tests.server.predictor_data import cpu_profiles, store_profiles

pytestmark = pytest.mark.django_db


@pytest.fixture
def private_prefix(settings: Any) -> Iterator[str]:
    prefix = f"test-{uuid.uuid4().hex[:10]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    yield prefix
    purge_queues(prefix)


def _messages() -> list[int]:
    """Predictor ids of the training messages waiting on the trainer's queue, taken out."""
    from server.celery_app import app

    found = []
    with app.connection_for_read() as conn:
        queue = conn.SimpleQueue(trainer_queue(), no_ack=True)
        try:
            while True:
                try:
                    message = queue.get(timeout=0.5)
                except queue.Empty:
                    break
                assert message.headers["task"] == TRAINING_TASK
                found.append(message.decode()[0][0])
        finally:
            queue.close()
    return found


def test_a_predictor_queued_long_ago_is_sent_again(private_prefix: str, member: Any, make_device: Any) -> None:
    from server.predictors.models import Predictor
    from server.predictors.services import request_predictor, resend_queued_predictors

    device = make_device()
    store_profiles(member.team, device, cpu_profiles())
    old = request_predictor(member.team, device, method="lasso", enqueue=False)
    new = request_predictor(member.team, device, method="rf", enqueue=False)
    Predictor.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(minutes=5))
    assert resend_queued_predictors(requested_before=timezone.now() - timedelta(minutes=1)) == [old.pk]
    assert _messages() == [old.pk]
    Predictor.objects.filter(pk=old.pk).update(state="training")
    assert resend_queued_predictors(requested_before=timezone.now()) == [new.pk]  # only what is still queued
