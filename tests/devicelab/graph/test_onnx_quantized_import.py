"""Quantized ONNX models read into the IR: QDQ and QOperator ResNet-18 as onnxruntime's
quantize_static writes them, hand-made QLinear / integer nodes, and what is refused."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from devicelab.backends.ort_mapping import uploaded_node_owners
from devicelab.graph import GraphError, zoo
from devicelab.graph.onnx import graph_from_onnx_bytes, import_onnx_model, parse_onnx_bytes
from tests.quantized_models import resnet18_qdq, resnet18_qoperator


def test_qdq_resnet18_keeps_its_structure_with_int8_macs_and_folds_its_weights() -> None:
    result = import_onnx_model(parse_onnx_bytes(resnet18_qdq()))
    g = result.graph
    float_net = zoo.build("resnet18")
    assert g.macs == float_net.macs  # quantization changes the number format, not the work
    assert g.macs_by_dtype() == {"int8": float_net.macs}
    assert g.tensors[g.inputs[0]].dtype == "float32" and g.tensors[g.outputs[0]].dtype == "float32"
    # activation Q / DQ are operators; the DequantizeLinear of each weight is folded, never computed
    weight_dq = [n for n, op in result.node_map.items() if n.endswith("::weight_DequantizeLinear")]
    assert len(weight_dq) == 21 and all(result.node_map[n] is None for n in weight_dq)
    q = g.op("input_QuantizeLinear")
    assert q.type == "quantize_linear" and q.attrs == {"dtype": "int8"} and g.tensors[q.outputs[0]].dtype == "int8"
    # a folded weight's node counts for the convolution it feeds
    owners = uploaded_node_owners(onnx.load_from_string(resnet18_qdq()), result.node_map)
    assert owners["ConvBnFusion_W_layer1.0/conv2d_1::weight_DequantizeLinear"] == "layer1.0/conv2d_1"


def test_qoperator_resnet18_reads_as_uint8_operators() -> None:
    g = graph_from_onnx_bytes(resnet18_qoperator())
    types = {o.type for o in g.operators}
    assert types == {
        "quantize_linear",
        "conv2d",
        "add",
        "max_pool2d",
        "global_avg_pool",
        "flatten",
        "fully_connected",
        "dequantize_linear",
    }
    assert g.macs_by_dtype() == {"uint8": zoo.build("resnet18").macs}
    assert {g.tensors[o.outputs[0]].dtype for o in g.operators if o.type == "conv2d"} == {"uint8"}


def _model(nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto], out_type: int, out_shape: list[int]) -> bytes:
    graph = helper.make_graph(
        nodes,
        "hand",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", out_type, out_shape)],
        initializer=inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets).SerializeToString()


def _init(name: str, value: object, dtype: type) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def test_conv_integer_writes_int32_and_a_dequantized_constant_is_read_by_value() -> None:
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"], name="q"),
        helper.make_node("ConvInteger", ["q", "w", "zp"], ["acc"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("DequantizeLinear", ["acc", "s32"], ["f"], name="dq"),
        # a clip bound given as a dequantized constant: folded when its value is read (2 * 0.5 = 1.0)
        helper.make_node("DequantizeLinear", ["lo_q", "half"], ["lo"], name="lo_dq"),
        helper.make_node("Clip", ["f", "lo"], ["y"], name="clip"),
    ]
    inits = [
        _init("s", 0.1, np.float32),
        _init("zp", 128, np.uint8),
        _init("w", np.ones((6, 4, 3, 3)), np.uint8),
        _init("s32", 0.01, np.float32),
        _init("lo_q", 2, np.int8),
        _init("half", 0.5, np.float32),
    ]
    g = graph_from_onnx_bytes(_model(nodes, inits, TensorProto.FLOAT, [1, 6, 8, 8]))
    assert [o.type for o in g.operators] == ["quantize_linear", "conv_integer", "dequantize_linear", "clip"]
    assert g.op("q").attrs == {"dtype": "uint8"}
    assert g.tensors["acc"].dtype == "int32" and g.tensors["f"].dtype == "float32"
    assert g.op("conv").attrs["out_channels"] == 6
    assert g.op("clip").attrs == {"min": 1.0, "max": None}
    assert g.macs_by_dtype() == {"uint8": 1 * 6 * 8 * 8 * 4 * 3 * 3}


def test_a_qlinear_conv_that_changes_dtype_is_refused_naming_it() -> None:
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "zp_u8"], ["q"], name="q"),
        helper.make_node(
            "QLinearConv",
            ["q", "s", "zp_u8", "w", "s", "zp_s8", "s", "zp_s8"],
            ["y"],
            name="qconv",
            kernel_shape=[1, 1],
        ),
    ]
    inits = [
        _init("s", 0.1, np.float32),
        _init("zp_u8", 128, np.uint8),
        _init("zp_s8", 0, np.int8),
        _init("w", np.ones((4, 4, 1, 1)), np.int8),
    ]
    with pytest.raises(GraphError, match="reads uint8 and writes int8") as err:
        graph_from_onnx_bytes(_model(nodes, inits, TensorProto.INT8, [1, 4, 8, 8]))
    assert err.value.node == "qconv"


def test_an_unknown_microsoft_operator_is_still_refused() -> None:
    nodes = [helper.make_node("QLinearSoftmax", ["x"], ["y"], name="sm", domain="com.microsoft")]
    with pytest.raises(GraphError, match="'com.microsoft.QLinearSoftmax' from the custom domain"):
        graph_from_onnx_bytes(_model(nodes, [], TensorProto.FLOAT, [1, 4, 8, 8]))


def test_quantizing_to_int16_is_refused() -> None:
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["y"], name="q16")]
    inits = [_init("s", 0.1, np.float32), _init("zp", 0, np.int16)]
    with pytest.raises(GraphError, match="quantization to int16 is not in the vocabulary"):
        graph_from_onnx_bytes(_model(nodes, inits, TensorProto.INT16, [1, 4, 8, 8]))
