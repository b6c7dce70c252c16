"""Malformed ONNX and graph JSON get one clear GraphError naming node, operator and reason.

Every case goes through ``load_graph`` as an upload would. (The TFLite helper keeps its own bad
cases beside its reader's tests.)
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from devicelab.graph import GraphBuilder, GraphError, load_graph
from devicelab.graph.onnx import graph_to_onnx_bytes

FLOAT = TensorProto.FLOAT


def load_error(data: bytes, filename: str = "model.onnx") -> GraphError:
    """The GraphError that loading ``data`` raises (and nothing from inside onnx or protobuf)."""
    with pytest.raises(GraphError) as err:
        load_graph(data, filename)
    assert type(err.value) is GraphError
    assert err.value.__cause__ is None, "the library error must be wrapped, not chained"
    assert err.value.reason
    return err.value


def vi(name: str, shape: Sequence[int | str] | None, elem: int = FLOAT) -> onnx.ValueInfoProto:
    """A value info."""
    return helper.make_tensor_value_info(name, elem, shape)


def onnx_bytes(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: Sequence[onnx.TensorProto] = (),
    opset: int = 17,
) -> bytes:
    """A serialized model."""
    graph = helper.make_graph(nodes, "bad", inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model.SerializeToString()


def small_model() -> bytes:
    """A valid little model to damage."""
    b = GraphBuilder("small", (1, 3, 8, 8))
    return graph_to_onnx_bytes(b.build(b.relu(b.conv(b.input, 4, 3, bias=True))))


# ---------------------------------------------------------------------------------------------
# Files that are not ONNX at all


def test_empty_file() -> None:
    assert "empty" in load_error(b"").reason


def test_truncated_onnx() -> None:
    data = small_model()
    err = load_error(data[: len(data) // 2])
    assert "truncated" in err.reason and "graph field" in err.reason


def test_every_truncation_is_a_graph_error() -> None:
    data = small_model()
    assert load_graph(data, "model.onnx").operators  # the whole file is fine
    for cut in range(1, len(data), 3):
        with pytest.raises(GraphError):
            load_graph(data[:cut], "model.onnx")


def test_random_bytes() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        data = b"\x00" + rng.bytes(512)  # a leading zero byte is never '{' or a TFLite header
        assert "ONNX" in load_error(data).reason


@pytest.mark.parametrize("magic", [b"\x89PNG\r\n\x1a\n", b"PK\x03\x04", b"%PDF-1.4\n", b"\x1f\x8b\x08\x00", b"GIF89a"])
def test_wrong_magic_bytes(magic: bytes) -> None:
    err = load_error(magic + bytes(range(256)))
    assert "not a valid ONNX model" in err.reason or "no graph" in err.reason


def test_a_length_header_claiming_two_gigabytes() -> None:
    # Field 7 (graph), wire type 2 (length-delimited), with a varint length of 2,000,000,000.
    length = 2_000_000_000
    varint = bytearray()
    while True:
        byte, length = length & 0x7F, length >> 7
        varint.append(byte | (0x80 if length else 0))
        if not length:
            break
    data = b"\x08\x07" + b"\x3a" + bytes(varint) + b"\x0a\x00"
    err = load_error(data)
    assert "claims 2000000000 bytes" in err.reason and "graph field" in err.reason


def test_a_model_without_a_graph() -> None:
    model = onnx.ModelProto(ir_version=8, opset_import=[helper.make_opsetid("", 17)])
    assert "no graph" in load_error(model.SerializeToString()).reason


def test_a_graph_without_nodes() -> None:
    data = onnx_bytes([], [vi("x", [1, 3])], [vi("x", [1, 3])])
    assert "no nodes" in load_error(data).reason


def test_an_opset_that_is_too_old() -> None:
    data = onnx_bytes([helper.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [1, 3])], [vi("y", None)], opset=5)
    assert "opset 5" in load_error(data).reason


# ---------------------------------------------------------------------------------------------
# Valid ONNX that LatencyLab cannot represent


def test_unknown_operator_names_the_node() -> None:
    nodes = [
        helper.make_node("Relu", ["boxes"], ["b"], name="relu"),
        helper.make_node("NonMaxSuppression", ["b", "scores"], ["selected"], name="/postprocess/nms"),
    ]
    data = onnx_bytes(
        nodes, [vi("boxes", [1, 10, 4]), vi("scores", [1, 1, 10])], [vi("selected", None, TensorProto.INT64)]
    )
    err = load_error(data)
    assert (err.node, err.op) == ("/postprocess/nms", "NonMaxSuppression")
    assert "not in the LatencyLab operator vocabulary" in err.reason
    assert "/postprocess/nms" in str(err)


def test_custom_domain_operator_names_the_node() -> None:
    node = helper.make_node("FancyAttention", ["x"], ["y"], name="block0/attn", domain="com.example")
    graph = helper.make_graph([node], "custom", [vi("x", [1, 4])], [vi("y", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    err = load_error(model.SerializeToString())
    assert (err.node, err.op) == ("block0/attn", "FancyAttention")
    assert "custom domain 'com.example'" in err.reason and "not in the LatencyLab operator vocabulary" in err.reason


def test_unresolvable_dynamic_shape_names_the_input() -> None:
    data = onnx_bytes(
        [helper.make_node("Relu", ["input"], ["y"], name="r")], [vi("input", [1, 3, "H", "W"])], [vi("y", None)]
    )
    err = load_error(data)
    assert err.node == "input"
    assert "dynamic dimension 'H' at axis 2" in err.reason


def test_reshape_to_a_shape_known_only_at_run_time() -> None:
    node = helper.make_node("Reshape", ["x", "target"], ["y"], name="/head/Reshape")
    data = onnx_bytes([node], [vi("x", [1, 12]), vi("target", [2], TensorProto.INT64)], [vi("y", None)])
    err = load_error(data)
    assert (err.node, err.op) == ("/head/Reshape", "Reshape")
    assert "computed at run time" in err.reason


def test_gather_on_activations_names_the_node() -> None:
    node = helper.make_node("Gather", ["x", "idx"], ["y"], name="embed", axis=1)
    idx = numpy_helper.from_array(np.array([0, 2], dtype=np.int64), "idx")
    err = load_error(onnx_bytes([node], [vi("x", [1, 4, 3])], [vi("y", None)], [idx]))
    assert (err.node, err.op) == ("embed", "Gather") and "activation tensors" in err.reason


def test_conv1d_is_refused_with_the_reason() -> None:
    w = numpy_helper.from_array(np.zeros((4, 3, 3), np.float32), "w")
    err = load_error(
        onnx_bytes(
            [helper.make_node("Conv", ["x", "w"], ["y"], name="c1")], [vi("x", [1, 3, 16])], [vi("y", None)], [w]
        )
    )
    assert (err.node, err.op) == ("c1", "Conv") and "only 2-D convolution" in err.reason


def test_a_node_reading_a_missing_tensor() -> None:
    err = load_error(
        onnx_bytes([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [vi("x", [1, 3])], [vi("y", None)])
    )
    assert err.node == "add" and "'ghost'" in err.reason


def test_an_output_that_does_not_depend_on_the_input() -> None:
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r"), helper.make_node("Shape", ["x"], ["s"], name="shape")]
    err = load_error(onnx_bytes(nodes, [vi("x", [1, 3])], [vi("y", None), vi("s", None, TensorProto.INT64)]))
    assert err.node == "s" and "constants and shapes only" in err.reason


def test_a_string_input_is_refused() -> None:
    err = load_error(
        onnx_bytes(
            [helper.make_node("Identity", ["x"], ["y"], name="i")],
            [vi("x", [1], TensorProto.STRING)],
            [vi("y", None, TensorProto.STRING)],
        )
    )
    assert err.node == "x" and "STRING" in err.reason


# ---------------------------------------------------------------------------------------------
# Graph JSON


def test_json_with_an_unknown_operator_type() -> None:
    doc = {
        "schema_version": 1,
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "operators": [{"name": "weird", "type": "fancy_conv", "inputs": ["x"], "outputs": ["y"]}],
    }
    err = load_error(json.dumps(doc).encode(), "graph.json")
    assert (err.node, err.op) == ("weird", "fancy_conv") and "unknown operator type" in err.reason


def test_json_with_an_inconsistent_declared_shape() -> None:
    doc = {
        "schema_version": 1,
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "operators": [
            {
                "name": "pool",
                "type": "max_pool2d",
                "inputs": ["x"],
                "outputs": ["y"],
                "attrs": {"kernel": [2, 2], "stride": [2, 2]},
                "output_shapes": [[1, 3, 8, 8]],
            }
        ],
    }
    err = load_error(json.dumps(doc).encode(), "graph.json")
    assert err.node == "pool" and "declared [1, 3, 8, 8]" in err.reason and "[1, 3, 4, 4]" in err.reason


def test_a_node_missing_a_required_input() -> None:
    w = numpy_helper.from_array(np.zeros((4, 3), np.float32), "w")
    err = load_error(
        onnx_bytes([helper.make_node("Gemm", ["x"], ["y"], name="fc")], [vi("x", [1, 3])], [vi("y", None)], [w])
    )
    assert (err.node, err.op) == ("fc", "Gemm") and "malformed node" in err.reason


def test_reading_an_output_that_is_not_modelled() -> None:
    nodes = [
        helper.make_node("MaxPool", ["x"], ["y", "idx"], name="pool", kernel_shape=[2, 2]),
        helper.make_node("Cast", ["idx"], ["z"], name="cast", to=FLOAT),
    ]
    err = load_error(onnx_bytes(nodes, [vi("x", [1, 1, 4, 4])], [vi("y", None), vi("z", None)]))
    assert err.node == "cast" and "'idx'" in err.reason
