"""Quantized ONNX models made from our own zoo for the tests: ResNet-18 exported with seeded
weights, its BatchNorms folded (as a framework's export in eval mode does), then quantized by
onnxruntime's ``quantize_static`` on a few seeded calibration images, in the QDQ and in the
QOperator (QLinearConv) form. Each is built once per test session (a few seconds apiece)."""

from __future__ import annotations

import functools
import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from devicelab.graph import zoo
from devicelab.graph.onnx import graph_to_onnx_bytes

CALIBRATION_IMAGES = 2


@functools.cache
def resnet18_fp32() -> bytes:
    """ResNet-18 of the zoo with seeded weights and its BatchNorms folded into the convolutions."""
    from onnxruntime.quantization.shape_inference import quant_pre_process

    with tempfile.TemporaryDirectory(prefix="latencylab-quant-") as tmp:
        raw, folded = Path(tmp) / "raw.onnx", Path(tmp) / "folded.onnx"
        raw.write_bytes(graph_to_onnx_bytes(zoo.build("resnet18"), seed=0))
        quant_pre_process(str(raw), str(folded), skip_symbolic_shape=True)
        return folded.read_bytes()


class _SeededImages:
    """onnxruntime's CalibrationDataReader over a few seeded N(0, 1) images."""

    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        images = [
            {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)} for _ in range(CALIBRATION_IMAGES)
        ]
        self._next: Iterator[dict[str, np.ndarray]] = iter(images)

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._next, None)


def _quantized(form: str) -> bytes:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    reader = type("Reader", (_SeededImages, CalibrationDataReader), {})()
    with tempfile.TemporaryDirectory(prefix="latencylab-quant-") as tmp:
        src, out = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(resnet18_fp32())
        quantize_static(
            str(src),
            str(out),
            reader,
            quant_format=QuantFormat.QDQ if form == "qdq" else QuantFormat.QOperator,
            activation_type=QuantType.QInt8 if form == "qdq" else QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
        return out.read_bytes()


@functools.cache
def resnet18_qdq() -> bytes:
    """ResNet-18 quantized to int8 in the QDQ form (QuantizeLinear / DequantizeLinear pairs)."""
    return _quantized("qdq")


@functools.cache
def resnet18_qoperator() -> bytes:
    """ResNet-18 quantized in the QOperator form (QLinearConv, QLinearAdd, QGemm on uint8)."""
    return _quantized("qoperator")


def sha256(data: bytes) -> str:
    """The hex SHA-256 of bytes, as results record it."""
    return hashlib.sha256(data).hexdigest()
