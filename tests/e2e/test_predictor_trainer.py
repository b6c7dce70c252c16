"""A predictor requested through the API is trained by a real trainer process (``python -m
server.trainer``, its own queue) and then answers predictions."""

from __future__ import annotations

from typing import Any

import pytest

from tests.waiting import wait_for

CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.mark.django_db(transaction=True)
def test_a_requested_predictor_is_trained_by_the_trainer_process(start_trainer: Any, e2e_api: Any) -> None:
    from server.predictors.models import Predictor
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

    def finished() -> Any:
        if trainer.poll() is not None:
            raise AssertionError(f"the trainer exited with {trainer.returncode}")
        row = Predictor.objects.get(pk=pk)
        return row if row.state in ("ready", "failed") else None

    row = wait_for(finished, 240, f"predictor {pk} to be trained")
    assert row.state == "ready", row.failure_reason
    assert row.started_at is not None and row.trained_at is not None
    assert row.evaluation["protocol"] == "grouped 5-fold cv" and row.e2e_mape > 0

    body = e2e_api.get(f"/api/predictors/{pk}/").json()
    assert body["state"] == "ready" and body["evaluation"]["e2e_mape"] == row.e2e_mape
    answer = e2e_api.post("/api/predict/", {"device": phone.pk, "architectures": [{"nb201": CELL}]}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["predictor"]["id"] == pk and answer.json()["results"][0]["latency_ms"] > 0
