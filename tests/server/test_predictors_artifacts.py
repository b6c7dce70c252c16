"""A stored predictor whose artifact is broken or unknown says why instead of predicting."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest

from devicelab.predict.errors import PredictorError
from tests.server.predictor_data import ready_predictor

pytestmark = pytest.mark.django_db

NB201 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.fixture
def phone() -> Any:
    from server.predictors.qed_import import ensure_qed_device

    return ensure_qed_device("s10")[0]


def _seal(artifact: dict[str, Any]) -> dict[str, Any]:
    """The artifact with a checksum that matches its content (as the artifact writer computes it)."""
    body = {k: v for k, v in artifact.items() if k != "sha256"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return {**body, "sha256": hashlib.sha256(canonical).hexdigest()}


def _tampered(artifact: dict[str, Any]) -> dict[str, Any]:
    broken = copy.deepcopy(artifact)
    broken["t_overhead_ms"] = broken["t_overhead_ms"] + 1.0  # the checksum no longer matches
    return broken


def test_a_good_artifact_loads_and_predicts(phone: Any) -> None:
    from devicelab.graph.nas import nb201
    from server.predictors.artifacts import load_row

    row = ready_predictor(phone)
    (p,) = load_row(row).predict([nb201.from_string(NB201)])
    assert p.latency_ms > 0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda a: _tampered(a), "checksum mismatch"),
        (lambda a: {**a, "schema_version": 99}, "schema version 99 is not supported"),
        (lambda a: {**a, "format": "pickle"}, "not a predictor artifact"),
        (lambda a: _seal({k: v for k, v in a.items() if k != "models"}), "incomplete or malformed"),
        (lambda a: _seal({**a, "method": "svm"}), "unknown method 'svm'"),
    ],
)
def test_a_broken_artifact_is_refused_with_the_reason(phone: Any, change: Any, message: str) -> None:
    from server.predictors.artifacts import load_row

    row = ready_predictor(phone)
    broken = change(row.artifact)
    row.artifact = broken
    row.artifact_sha256 = broken.get("sha256", "")
    row.save(update_fields=["artifact", "artifact_sha256"])
    with pytest.raises(PredictorError, match=message) as caught:
        load_row(row)
    assert f"predictor #{row.pk}" in str(caught.value) and "Train a new version" in str(caught.value)


def test_an_artifact_replaced_after_training_is_refused(phone: Any) -> None:
    from devicelab.predict.artifacts import predictor_to_dict
    from server.predictors.artifacts import load_row
    from tests.server.predictor_data import qed_predictor

    row = ready_predictor(phone)
    other = predictor_to_dict(qed_predictor())
    # A valid artifact, but not the one this row recorded when it was trained.
    row.artifact = _seal({**other, "meta": {**other["meta"], "seed": 12345}})
    row.save(update_fields=["artifact"])
    with pytest.raises(PredictorError, match="was changed"):
        load_row(row)


def test_the_api_answers_409_with_the_reason_for_a_broken_predictor(phone: Any, api: Any) -> None:
    from server.predictors.serving import clear_cache

    clear_cache()
    row = ready_predictor(phone)
    row.artifact = _tampered(row.artifact)
    row.save(update_fields=["artifact"])
    resp = api.post("/api/predict/", {"predictor": row.pk, "architectures": [{"nb201": NB201}]}, format="json")
    assert resp.status_code == 409, resp.content
    assert "checksum mismatch" in resp.json()["detail"]
    assert "results" not in resp.json()
