"""A predictor's next version, created queued with its training sent once the transaction commits."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from devicelab.predict.predictor import Scenario
from server.accounts.models import Team
from server.devices.models import Device
from server.predictors.models import Predictor, PredictorState
from server.taskqueue import send_after_commit, send_training


def send_training_if_queued(predictor_id: int) -> None:
    """Send a predictor's training if it is still queued."""
    if Predictor.objects.filter(pk=predictor_id, state=PredictorState.QUEUED).exists():
        send_training(predictor_id)


def enqueue_on_commit(predictor_id: int) -> None:
    """Hand the training to the broker once the transaction that made the predictor queued has committed."""
    send_after_commit(
        send_training_if_queued,
        predictor_id,
        what=f"predictor {predictor_id} stays queued",
        then="the idle trainer sends its training again",
    )


def create_predictor_version(
    owner: Team | None,
    device: Device,
    *,
    source: str,
    method: str,
    scenario: Scenario,
    params: dict[str, Any],
    user: Any = None,
    enqueue: bool = True,
) -> Predictor:
    """The next version of a predictor of ``device`` for ``scenario`` and ``method``, per owner,
    as ``queued`` (its training sent when the transaction commits, with ``enqueue``)."""
    for attempt in range(5):
        try:
            with transaction.atomic():
                latest = (
                    Predictor.objects.filter(device=device, scenario_key=scenario.key, method=method)
                    .owned_by(owner)
                    .aggregate(v=Max("version"))["v"]
                )
                row = Predictor.objects.create(
                    team=owner,
                    device=device,
                    created_by=user if getattr(user, "is_authenticated", False) else None,
                    source=source,
                    method=method,
                    scenario=scenario.to_dict(),
                    scenario_key=scenario.key,
                    version=(latest or 0) + 1,
                    params=params,
                )
                if enqueue:
                    enqueue_on_commit(row.pk)
            return row
        except IntegrityError:
            # Another request took this version number at the same moment: take the next one.
            if attempt == 4:
                raise
    raise AssertionError("unreachable")
