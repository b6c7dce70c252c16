"""A predictor in training holds a lease its trainer renews; a trainer killed mid-training lets it
lapse, and the sweeper queues the training again (its message sent on the real broker), or fails
it, saying why, after ``MAX_TRAINING_ATTEMPTS`` attempts. A live lease is left alone."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.server.predictor_data import cpu_profiles, store_profiles
from tests.server.test_resend_queued_predictors import _messages, private_prefix

__all__ = ["private_prefix"]  # the fixture, used by name


def _training(member: Any, make_device: Any, lease_seconds: float = 60) -> Any:
    from server.predictors.services import request_predictor

    device = make_device()
    store_profiles(member.team, device, cpu_profiles())
    row = request_predictor(member.team, device, method="lasso", enqueue=False)
    assert row.claim(lease_seconds)
    return row


@pytest.mark.django_db
def test_a_claim_takes_an_attempt_under_a_lease(member: Any, make_device: Any) -> None:
    row = _training(member, make_device)
    assert row.state == "training" and row.attempts == 1
    assert timezone.now() + timedelta(seconds=55) < row.lease_until < timezone.now() + timedelta(seconds=65)


@pytest.mark.django_db
def test_a_lapsed_lease_queues_the_training_again_and_sends_it(
    private_prefix: str, member: Any, make_device: Any
) -> None:
    from server.predictors.models import Predictor
    from server.predictors.services import sweep_lost_trainings

    lost, alive = _training(member, make_device), _training(member, make_device)
    Predictor.objects.filter(pk=lost.pk).update(lease_until=timezone.now() - timedelta(seconds=1))

    assert sweep_lost_trainings() == [lost.pk]
    lost.refresh_from_db()
    assert (lost.state, lost.attempts, lost.lease_until) == ("queued", 1, None)
    assert lost.progress_message.startswith("attempt 1 lost: the trainer stopped while training")
    assert _messages() == [lost.pk]
    alive.refresh_from_db()
    assert alive.state == "training"
    assert sweep_lost_trainings() == []  # done once


@pytest.mark.django_db
def test_a_training_lost_at_its_last_attempt_fails_saying_why(member: Any, make_device: Any) -> None:
    from server.predictors.models import Predictor
    from server.predictors.services import MAX_TRAINING_ATTEMPTS, sweep_lost_trainings

    row = _training(member, make_device)
    Predictor.objects.filter(pk=row.pk).update(
        attempts=MAX_TRAINING_ATTEMPTS, lease_until=timezone.now() - timedelta(seconds=1)
    )
    assert sweep_lost_trainings() == [row.pk]
    row.refresh_from_db()
    assert row.state == "failed"
    assert f"attempted {MAX_TRAINING_ATTEMPTS} times (limit {MAX_TRAINING_ATTEMPTS})" in row.failure_reason
    assert "the trainer stopped while training" in row.failure_reason


@pytest.mark.django_db(transaction=True)
def test_the_lease_is_renewed_while_training_runs_and_not_for_another_attempt(member: Any, make_device: Any) -> None:
    from server.leases import LeaseKeeper
    from server.predictors.models import Predictor

    row = _training(member, make_device, lease_seconds=0.4)
    first = row.lease_until
    with LeaseKeeper(lambda: row.renew_lease(0.4), 0.1, f"predictor {row.pk}"):
        time.sleep(1.0)  # four renewals' worth
        renewed = Predictor.objects.get(pk=row.pk).lease_until
    assert renewed > first + timedelta(seconds=0.3)
    # a later attempt (the row was swept and claimed again) is not this keeper's to renew
    Predictor.objects.filter(pk=row.pk).update(attempts=2)
    assert not row.renew_lease(60)


@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_queues_the_training_again_saying_so(
    member: Any, make_device: Any, private_prefix: str
) -> None:
    from unittest import mock

    from django.db import OperationalError

    from server.predictors.models import Predictor
    from server.predictors.services import request_predictor, run_training

    device = make_device()
    store_profiles(member.team, device, cpu_profiles())
    row = request_predictor(member.team, device, method="lasso", enqueue=False)
    # a progress note that cannot be written does not stop the training
    reports = mock.patch.object(Predictor, "report", side_effect=OperationalError("server closed the connection"))
    with reports:
        trained = run_training(row.pk, enqueue_table=False)
    assert trained is not None and Predictor.objects.get(pk=row.pk).state == "ready"

    row = request_predictor(member.team, device, method="lasso", enqueue=False)
    dropped = OperationalError("terminating connection due to administrator command")
    with mock.patch("server.predictors.services.train_and_evaluate", side_effect=dropped):
        run_training(row.pk, enqueue_table=False)
    row.refresh_from_db()
    assert (row.state, row.attempts, row.lease_until) == ("queued", 1, None)
    assert "attempt 1 lost: the database connection dropped while training" in row.progress_message
    assert _messages() == [row.pk]  # sent again at once
