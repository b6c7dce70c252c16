"""A quantized ONNX model (ResNet-18 in the QDQ and in the QOperator form) uploads through the API,
and its operators are counted: the same MACs as the float network, counted as int8 ones."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from devicelab.graph import zoo
from tests.quantized_models import resnet18_qdq, resnet18_qoperator, sha256

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def parse_inline(settings: Any) -> None:
    """Parse the 12 MB files in the request (the test transaction never commits, so a background
    parse would never start)."""
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 64 * 1024 * 1024


@pytest.mark.parametrize(("form", "dtype"), [("qdq", "int8"), ("qoperator", "uint8")])
def test_a_quantized_resnet18_uploads_with_its_macs_counted_as_int8(api: Any, form: str, dtype: str) -> None:
    data = resnet18_qdq() if form == "qdq" else resnet18_qoperator()
    created = api.post("/api/models/", {"file": SimpleUploadedFile(f"resnet18_{form}.onnx", data)}, format="multipart")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["state"] == "ready" and body["format"] == "onnx" and body["sha256"] == sha256(data)
    float_net = zoo.build("resnet18")
    assert body["macs"] == float_net.macs  # quantization changes the number format, not the work
    assert body["summary"]["macs_by_dtype"] == {dtype: float_net.macs}
    assert body["summary"]["op_types"]["conv2d"] == 20
    assert body["summary"]["op_types"]["quantize_linear"] >= 1
    assert body["summary"]["op_types"]["dequantize_linear"] >= 1
    table = api.get(f"/api/models/{body['id']}/").json()["operators"]
    convs = [row for row in table if row["type"] == "conv2d"]
    assert len(convs) == 20 and {row["dtype"] for row in convs} == {dtype}
    assert sum(row["macs"] for row in convs) + sum(
        row["macs"] for row in table if row["type"] == "fully_connected"
    ) == (float_net.macs)
    quantize = next(row for row in table if row["type"] == "quantize_linear")
    assert quantize["attrs"] == {"dtype": dtype} and quantize["dtype"] == "float32"
