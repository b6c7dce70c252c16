"""The OpenCL backend says what it ran (the IR, by its own kernels) and refuses quantized graphs."""

from __future__ import annotations

import pytest

from devicelab.backends.base import BackendError, ModelFile, ProfileSettings
from devicelab.backends.opencl.backend import BACKEND, MODEL_FORMAT, device_info, profile
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph

SETTINGS = ProfileSettings(backend="opencl", threads=1, warmup_runs=1, runs=2)


def _net(quantized: bool) -> Graph:
    b = GraphBuilder("q" if quantized else "f", (1, 3, 16, 16))
    x = b.op("quantize_linear", [b.input], dtype="int8", name="quantize_in") if quantized else b.input
    x = b.relu(b.conv(x, 8, 3))
    if quantized:
        x = b.op("dequantize_linear", [x], name="dequantize_out")
    return b.build(b.global_avg_pool(x))


def test_the_environment_says_the_ir_ran_on_our_kernels_even_for_an_upload(found) -> None:
    upload = ModelFile("onnx", b"not what runs", "model.onnx")
    env = BACKEND.profile(device_info(found), _net(False), SETTINGS, None, upload).environment
    assert env["model_format"] == MODEL_FORMAT and "weights are not used" in MODEL_FORMAT
    assert env["model_sha256"] is None  # no file ran


def test_a_quantized_graph_is_refused_naming_its_first_quantized_operator(found) -> None:
    with pytest.raises(BackendError, match=r"quantized operators \(the first: 'quantize_in', quantize_linear") as err:
        profile(device_info(found), _net(True), SETTINGS)
    assert "profile a quantized model on a cpu device" in str(err.value)
