"""A predictor requested through the API is trained by a real trainer process (``python -m
server.trainer``, its own queue) and then answers predictions; a trainer killed mid-training
leaves a lease that lapses, and another trainer trains the predictor."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from tests.waiting import wait_for

CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


def _trained(pk: int, trainer: Any, what: str) -> Any:
    """The predictor's row once it is ready or failed; the trainer must not exit meanwhile."""
    from server.predictors.models import Predictor

    def finished() -> Any:
        if trainer.poll() is not None:
            raise AssertionError(f"the trainer exited with {trainer.returncode}")
        row = Predictor.objects.get(pk=pk)
        return row if row.state in ("ready", "failed") else None

    return wait_for(finished, 240, what)


@pytest.mark.django_db(transaction=True)
def test_a_requested_predictor_is_trained_by_the_trainer_process(start_trainer: Any, e2e_api: Any) -> None:
    from server.predictors.qed_import import import_qed
    from server.predictors.serving import clear_cache

    clear_cache()
    phone = next(d.device for d in import_qed().devices if d.device.name == "mi8se")
    trainer = start_trainer()

    resp = e2e_api.post(
        "/api/predictors/", {"device": phone.pk, "method": "rf", "search": "fast", "seed": 1}, format="json"
    )
    assert resp.status_code == 202, resp.content
    pk = resp.json()["id"]

    row = _trained(pk, trainer, f"predictor {pk} to be trained")
    assert row.state == "ready", row.failure_reason
    assert row.started_at is not None and row.trained_at is not None
    assert row.evaluation["protocol"] == "grouped 5-fold cv" and row.e2e_mape > 0

    body = e2e_api.get(f"/api/predictors/{pk}/").json()
    assert body["state"] == "ready" and body["evaluation"]["e2e_mape"] == row.e2e_mape
    answer = e2e_api.post("/api/predict/", {"device": phone.pk, "architectures": [{"nb201": CELL}]}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["predictor"]["id"] == pk and answer.json()["results"][0]["latency_ms"] > 0


@pytest.mark.django_db(transaction=True)
def test_a_trainer_killed_mid_training_leaves_the_training_to_the_next_one(start_trainer: Any, e2e_api: Any) -> None:
    from server.predictors.models import Predictor
    from server.predictors.qed_import import import_qed

    phone = next(d.device for d in import_qed().devices if d.device.name == "mi8se")
    first = start_trainer()
    resp = e2e_api.post("/api/predictors/", {"device": phone.pk, "method": "rf", "search": "fast"}, format="json")
    assert resp.status_code == 202, resp.content
    pk = resp.json()["id"]
    wait_for(lambda: Predictor.objects.get(pk=pk).state == "training", 120, f"predictor {pk} to be in training")
    os.killpg(first.pid, signal.SIGKILL)  # the trainer and its pool process, mid-training
    first.wait(timeout=30)

    second = start_trainer()

    row = _trained(pk, second, f"predictor {pk} to be trained by the second trainer")
    assert (row.state, row.attempts) == ("ready", 2), row.failure_reason
