"""The POST /api/predict/ body is validated by the serializer that documents it: what the view
refused by hand before, the serializer refuses with the same words; the batch is kept as sent."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from devicelab.graph import graph_to_dict
from devicelab.predict.batch import KEYS, NB201_SETTINGS
from server.predictors.api.serializers import ArchitectureSerializer, PredictRequestSerializer
from tests.server.factories import tiny_graph

CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
ARCHS = [{"nb201": CELL}]


def _errors(body: Any) -> dict[str, list[str]]:
    incoming = PredictRequestSerializer(data=body)
    assert not incoming.is_valid()
    return {key: [str(m) for m in messages] for key, messages in incoming.errors.items()}


def test_a_good_request_keeps_the_batch_as_sent() -> None:
    archs = [{"name": "a", "nb201": CELL}, "not an object", {"colour": "red"}]  # items: parse_item's to judge
    incoming = PredictRequestSerializer(data={"device": 3, "architectures": archs})
    assert incoming.is_valid(), incoming.errors
    assert incoming.validated_data == {
        "device": 3,
        "predictor": None,
        "method": None,
        "architectures": archs,
        "breakdown": False,
    }
    assert incoming.validated_data["architectures"] is archs  # no copy of a 12 MB batch
    full = {"predictor": 4, "device": None, "method": "rf", "architectures": ARCHS, "breakdown": True}
    incoming = PredictRequestSerializer(data=full)
    assert incoming.is_valid(), incoming.errors
    assert incoming.validated_data == full


@pytest.mark.parametrize(
    "body,key,message",
    [
        ([1, 2], "non_field_errors", "the request body must be a JSON object, got list"),
        (
            {"device": 1, "architectures": ARCHS, "devise": 2},
            "non_field_errors",
            "unknown key(s) ['devise']; expected device or predictor, method, architectures, breakdown",
        ),
        ({"device": "1", "architectures": ARCHS}, "device", "device must be an id (a positive integer), got '1'"),
        ({"device": True, "architectures": ARCHS}, "device", "device must be an id (a positive integer), got True"),
        ({"device": 0, "architectures": ARCHS}, "device", "device must be an id (a positive integer), got 0"),
        (
            {"predictor": -3, "architectures": ARCHS},
            "predictor",
            "predictor must be an id (a positive integer), got -3",
        ),
        (
            {"predictor": 1.0, "architectures": ARCHS},
            "predictor",
            "predictor must be an id (a positive integer), got 1.0",
        ),
        (
            {"device": 1, "method": "svm", "architectures": ARCHS},
            "method",
            "unknown method 'svm'; expected one of ['lasso', 'rf', 'gbdt', 'mlp']",
        ),
        (
            {"device": 1, "breakdown": "yes", "architectures": ARCHS},
            "breakdown",
            "breakdown must be true or false, got 'yes'",
        ),
        ({"device": 1, "breakdown": 1, "architectures": ARCHS}, "breakdown", "breakdown must be true or false, got 1"),
        (
            {"device": 1, "breakdown": None, "architectures": ARCHS},
            "breakdown",
            "breakdown must be true or false, got None",
        ),
        ({"architectures": ARCHS}, "non_field_errors", "give a device or a predictor"),
        (
            {"device": None, "predictor": None, "architectures": ARCHS},
            "non_field_errors",
            "give a device or a predictor",
        ),
        ({"device": 1}, "architectures", "architectures must be a non-empty list"),
        ({"device": 1, "architectures": []}, "architectures", "architectures must be a non-empty list"),
        ({"device": 1, "architectures": None}, "architectures", "architectures must be a non-empty list"),
        ({"device": 1, "architectures": {"nb201": CELL}}, "architectures", "architectures must be a non-empty list"),
    ],
)
def test_the_serializer_refuses_what_the_view_refused(body: Any, key: str, message: str) -> None:
    assert _errors(body)[key] == [message]


def test_the_batch_limit_is_read_when_a_request_comes(settings: Any) -> None:
    settings.LATENCYLAB_PREDICT_MAX_BATCH = 3
    assert _errors({"device": 1, "architectures": ARCHS * 4})["architectures"] == [
        "4 architectures is over the limit of 3 (LATENCYLAB_PREDICT_MAX_BATCH)"
    ]
    assert PredictRequestSerializer(data={"device": 1, "architectures": ARCHS * 3}).is_valid()


def test_validating_keeps_no_reference_to_the_batch() -> None:
    """The view validates with run_validation: once the request is answered, reference counting
    frees the batch, with the collector still paused (a serializer given data= would keep it in
    a reference cycle until the collector's next pass walked the whole batch)."""

    class Item:
        pass

    archs = [Item()]
    probe = weakref.ref(archs[0])
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        body = PredictRequestSerializer().run_validation({"device": 1, "architectures": archs})
        assert body["architectures"] is archs
        del body, archs
        assert probe() is None
    finally:
        if was_enabled:
            gc.enable()


def test_the_documented_architecture_is_the_one_the_reader_reads() -> None:
    """An item is checked by devicelab's parse_item; its declaration lists the same keys."""
    assert set(ArchitectureSerializer().fields) == {"name", *KEYS, *NB201_SETTINGS}


@pytest.mark.django_db
def test_the_view_answers_with_the_serializers_words(api: Any) -> None:
    response = api.post("/api/predict/", {"device": "7", "architectures": ARCHS}, format="json")
    assert response.status_code == 400
    assert response.json() == {"device": ["device must be an id (a positive integer), got '7'"]}
    response = api.post("/api/predict/", {"architectures": ARCHS}, format="json")
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["give a device or a predictor"]}
    response = api.post("/api/predict/", b"null", content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"non_field_errors": ["the request body must be a JSON object, got null"]}
    response = api.post("/api/predict/", b"[1]", content_type="application/json")
    assert response.json() == {"non_field_errors": ["the request body must be a JSON object, got list"]}
    graph = graph_to_dict(tiny_graph())
    response = api.post("/api/predict/", {"device": 999999, "architectures": [{"graph": graph}]}, format="json")
    assert response.status_code == 404  # a well-formed request: the service says the device is unknown
