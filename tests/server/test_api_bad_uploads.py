"""Every bad upload gets a 4xx whose message says what was wrong and where."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from server.networks.models import NetworkModel
from tests.devicelab.graph import hostile_models as hostile
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


# -- models that describe more than an import may compute (issue 18, finding 6) ------------------


@contextmanager
def capped_growth(extra_bytes: int = 1024**3) -> Iterator[Callable[[], int]]:
    """Cap this process's address space at its current size plus ``extra_bytes`` (a guard for the
    machine, should the importer allocate what the file describes) and yield a function giving how
    many kB the peak RSS has grown since entering."""
    import resource

    status = Path("/proc/self/status").read_text()
    vm_size_kb = int(status.split("VmSize:")[1].split()[0])
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = vm_size_kb * 1024 + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


HOSTILE_UPLOADS = [
    (case, make, node, op, limit)
    for case, make, node, op, limit in hostile.ONNX_CASES
    if case in ("Range(0, 2**28)", "ConstantOfShape [1024]*3", "input [1,3,100000,100000]")
]


@pytest.mark.parametrize("case,make,node,op,limit", HOSTILE_UPLOADS, ids=[c[0] for c in HOSTILE_UPLOADS])
def test_a_model_over_the_import_limits_is_a_400_naming_the_node(
    api: Any, case: str, make: Callable[[], bytes], node: str, op: str | None, limit: str
) -> None:
    data = make()
    with capped_growth() as grown_kb:
        response = api.post("/api/models/", {"file": SimpleUploadedFile("hostile.onnx", data)}, format="multipart")
        assert grown_kb() < 200 * 1024  # the old importer grew by 4 GB here
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["error"]["node"] == node and body["error"]["op"] == op
    setting = {
        "max_folded_elements": "LATENCYLAB_MAX_FOLDED_ELEMENTS",
        "max_tensor_elements": "LATENCYLAB_MAX_MODEL_ELEMENTS",
    }
    assert f"node {node!r}" in body["detail"] and "the limit is" in body["detail"] and setting[limit] in body["detail"]
    assert not NetworkModel.objects.exists()


def test_a_graph_json_body_over_the_tensor_limit_is_a_400(api: Any) -> None:
    doc = json.loads(graph_bytes())
    doc["inputs"][0]["shape"] = [1, 3, 100000, 100000]
    response = api.generic("POST", "/api/models/", json.dumps(doc).encode(), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["error"]["node"] == doc["inputs"][0]["name"]
    assert "30000000000 elements" in response.json()["detail"]


def test_the_limits_come_from_the_settings(api: Any, settings: Any) -> None:
    data = graph_bytes(tiny_graph())
    settings.LATENCYLAB_MAX_MODEL_ELEMENTS = 16
    response = api.post("/api/models/", {"file": SimpleUploadedFile("tiny.json", data)}, format="multipart")
    assert response.status_code == 400 and "LATENCYLAB_MAX_MODEL_ELEMENTS" in response.json()["detail"]
    settings.LATENCYLAB_MAX_MODEL_ELEMENTS = 2**27
    settings.LATENCYLAB_MAX_MODEL_OPERATORS = 1
    response = api.post("/api/models/", {"file": SimpleUploadedFile("tiny.json", data)}, format="multipart")
    assert response.status_code == 400 and "LATENCYLAB_MAX_MODEL_OPERATORS" in response.json()["detail"]
    settings.LATENCYLAB_MAX_MODEL_OPERATORS = 2**20
    response = api.post("/api/models/", {"file": SimpleUploadedFile("tiny.json", data)}, format="multipart")
    assert response.status_code == 201, response.content


def test_predict_refuses_a_hostile_onnx_architecture_without_growing(api: Any, settings: Any) -> None:
    from server.predictors.qed_import import ensure_qed_device
    from server.predictors.serving import clear_cache
    from tests.server.predictor_data import ready_predictor

    settings.LATENCYLAB_PREDICT_PROCESSES = 1  # no worker processes started under the cap below
    clear_cache()
    phone = ensure_qed_device("s10")[0]
    ready_predictor(phone)
    fine = {"name": "fine", "graph": json.loads(graph_bytes(tiny_graph()))}
    assert api.post("/api/predict/", {"device": phone.pk, "architectures": [fine]}, format="json").status_code == 200
    huge = json.loads(graph_bytes(tiny_graph()))
    huge["inputs"][0]["shape"] = [1, 3, 100000, 100000]
    archs = [
        fine,
        {"name": "ranged", "onnx_base64": base64.b64encode(hostile.range_2_28()).decode()},
        {"name": "filled", "onnx_base64": base64.b64encode(hostile.constant_of_shape_1g()).decode()},
        {"name": "huge", "graph": huge},
    ]
    with capped_growth() as grown_kb:
        response = api.post("/api/predict/", {"device": phone.pk, "architectures": archs}, format="json")
        assert grown_kb() < 200 * 1024
    assert response.status_code == 400, response.content
    errors = {e["name"]: e for e in response.json()["errors"]}
    assert sorted(errors) == ["filled", "huge", "ranged"]
    assert errors["ranged"]["index"] == 1
    assert errors["ranged"]["error"].startswith("onnx_base64: node 'r', operator 'Range': would fold 268435456")
    assert errors["filled"]["error"].startswith("onnx_base64: node 'fill0', operator 'ConstantOfShape'")
    assert (
        errors["huge"]["error"].startswith("graph: node 'input'") and "30000000000 elements" in errors["huge"]["error"]
    )
    clear_cache()


@pytest.mark.parametrize("where", ["graph", "operator", "tensor"])
def test_a_nul_character_in_a_name_is_a_400_naming_it(api: Any, where: str) -> None:
    import json

    from devicelab.graph import graph_to_dict
    from tests.server.factories import tiny_graph

    doc = graph_to_dict(tiny_graph("nul"))
    if where == "graph":
        doc["name"] = "bad\x00name"
    elif where == "operator":
        doc["operators"][1]["name"] = "bn\x00evil"
    else:
        old = doc["operators"][0]["outputs"][0]
        text = json.dumps(doc).replace(json.dumps(old), json.dumps(old + "\x00x"))
        doc = json.loads(text)
    response = api.post("/api/models/", data=json.dumps(doc), content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "NUL character" in response.json()["detail"]


def test_an_onnx_node_name_with_a_nul_is_a_400(api: Any) -> None:
    from devicelab.graph.onnx import graph_to_onnx_model
    from tests.server.factories import tiny_graph

    model = graph_to_onnx_model(tiny_graph("nul-onnx"))
    model.graph.node[0].name = "conv\x00evil"
    response = api.post(
        "/api/models/", {"file": SimpleUploadedFile("nul.onnx", model.SerializeToString())}, format="multipart"
    )
    assert response.status_code == 400, response.content[:300]
    assert "NUL character" in response.json()["detail"] and "conv" in response.json()["detail"]
