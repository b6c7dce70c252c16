"""Every bad upload gets a 4xx whose message says what was wrong and where."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from server.networks.models import NetworkModel
from tests.server.factories import graph_bytes, tiny_graph

pytestmark = pytest.mark.django_db


def onnx_bytes() -> bytes:
    export = pytest.importorskip("devicelab.graph.onnx")
    return export.graph_to_onnx_bytes(tiny_graph())  # type: ignore[no-any-return]


def onnx_with_unknown_op() -> bytes:
    pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    nodes = [
        helper.make_node("Relu", ["x"], ["t"], name="relu_in"),
        helper.make_node("NonMaxSuppression", ["t"], ["y"], name="nms_1"),
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    return model.SerializeToString()  # type: ignore[no-any-return]


def json_with_unknown_op() -> bytes:
    doc = json.loads(graph_bytes())
    doc["operators"][2]["type"] = "frobnicate"
    return json.dumps(doc).encode()


CORPUS: list[tuple[str, str, Callable[[], bytes], list[str]]] = [
    ("empty file", "net.onnx", lambda: b"", ["is empty"]),
    ("truncated ONNX", "net.onnx", lambda: onnx_bytes()[: len(onnx_bytes()) // 2], ["truncated"]),
    ("wrong magic", "net.onnx", lambda: b"\x89PNG\r\n\x1a\n" + b"\0" * 64, ["not a valid ONNX model"]),
    ("text named .onnx", "net.onnx", lambda: b"hello, this is not a network", ["not a valid ONNX model"]),
    ("corrupt TFLite", "net.tflite", lambda: b"\0\0\0\0TFL3" + b"\0" * 24, ["TFLite"]),
    ("unknown ONNX operator", "net.onnx", onnx_with_unknown_op, ["nms_1", "NonMaxSuppression"]),
    ("unknown graph operator", "net.json", json_with_unknown_op, ["relu_0", "frobnicate"]),
    ("bad JSON", "net.json", lambda: b'{"schema_version": 1, "inputs": [', ["not valid JSON"]),
    ("wrong schema version", "net.json", lambda: b'{"schema_version": 99}', ["schema_version must be 1"]),
]


@pytest.mark.parametrize("case,filename,make,words", CORPUS, ids=[c[0] for c in CORPUS])
def test_bad_file_is_refused_with_reason(
    api: Any, case: str, filename: str, make: Callable[[], bytes], words: list[str]
) -> None:
    response = api.post("/api/models/", {"file": SimpleUploadedFile(filename, make())}, format="multipart")
    assert response.status_code == 400, response.content
    detail = response.json()["detail"]
    assert filename in detail
    for word in words:
        assert word in detail, detail
    assert not NetworkModel.objects.exists()


def test_unknown_operator_answer_names_node_and_op(api: Any) -> None:
    response = api.post(
        "/api/models/", {"file": SimpleUploadedFile("net.json", json_with_unknown_op())}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["node"] == "relu_0"
    assert response.json()["error"]["op"] == "frobnicate"


def test_missing_file(api: Any) -> None:
    response = api.post("/api/models/", {"name": "no file here"}, format="multipart")
    assert response.status_code == 400
    assert "multipart field 'file'" in response.json()["file"][0]


def test_bad_json_body(api: Any) -> None:
    response = api.generic("POST", "/api/models/", b"{not json", content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]


def test_unsupported_content_type(api: Any) -> None:
    response = api.generic("POST", "/api/models/", b"hello", content_type="text/plain")
    assert response.status_code == 415
    assert "multipart/form-data" in response.json()["detail"]


@override_settings(LATENCYLAB_MAX_UPLOAD_BYTES=1000)
def test_oversized_file_names_the_limit(api: Any) -> None:
    data = graph_bytes(tiny_graph())
    assert len(data) > 1000
    response = api.post("/api/models/", {"file": SimpleUploadedFile("big.json", data)}, format="multipart")
    assert response.status_code == 413
    assert "the limit is 1000 bytes" in response.json()["detail"]
    as_body = api.generic("POST", "/api/models/", data, content_type="application/json")
    assert as_body.status_code == 413
    assert not NetworkModel.objects.exists()


@override_settings(LATENCYLAB_MAX_UPLOAD_BYTES=100_000, DATA_UPLOAD_MAX_MEMORY_SIZE=50_000)
def test_json_body_over_djangos_limit_is_413(api: Any) -> None:
    doc = json.loads(graph_bytes())
    doc["name"] = "x" * 60_000
    response = api.generic("POST", "/api/models/", json.dumps(doc).encode(), content_type="application/json")
    assert response.status_code == 413
    assert "LATENCYLAB_MAX_UPLOAD_BYTES" in response.json()["detail"]
