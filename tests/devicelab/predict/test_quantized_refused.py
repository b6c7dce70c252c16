"""The predictors model float kernels: every kernel deducer refuses a quantized graph with a
``PredictorError`` saying so, whether its quantization is in operators (QDQ) or in int8 tensors."""

from __future__ import annotations

import pytest

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.deduce_tflite_cpu import TfliteCpuDeducer
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import op_kind

DEDUCERS = {
    "cpu": lambda: CpuDeducer({}, {}, {}, 8, {}),
    "opencl": OpenclDeducer,
    "tflite_cpu": lambda: TfliteCpuDeducer({}, {}, {}),
    "tflite_gpu": lambda: TfliteGpuDeducer("mali"),
}


def qdq_net() -> Graph:
    b = GraphBuilder("qdq", (1, 3, 16, 16))
    x = b.op("quantize_linear", [b.input], dtype="int8", name="quantize_in")
    x = b.op("dequantize_linear", [x], name="dequantize_in")
    return b.build(b.relu(b.conv(x, 8, 3)))


def int8_net() -> Graph:
    """An int8 graph without quantization operators (a graph JSON with an int8 input)."""
    b = GraphBuilder("int8", (1, 3, 16, 16), dtype="int8")
    return b.build(b.conv(b.input, 8, 3, name="conv_int8"))


@pytest.mark.parametrize("deducer", sorted(DEDUCERS))
@pytest.mark.parametrize("build", [qdq_net, int8_net], ids=["qdq", "int8_tensors"])
def test_every_deducer_refuses_a_quantized_graph(deducer: str, build: object) -> None:
    graph = build()  # type: ignore[operator]
    # the OpenCL plan itself names the quantize_linear it has no kernel for, or the int8 input
    refused = r"is quantized: the predictors model float kernels|'quantize_linear' has no opencl kernel|is int8; the opencl backend runs float graphs only"
    with pytest.raises(PredictorError, match=refused):
        DEDUCERS[deducer]().kernels(graph)


def test_op_kind_names_the_quantization_type() -> None:
    with pytest.raises(PredictorError, match="a dequantize_linear operator is quantized"):
        op_kind("dequantize_linear", {}, [(1, 3, 4, 4)])
