"""Issue 32, item 8: a tensor whose data is in an external file is refused wherever it sits, with
one message whatever its path, and the path is never opened; node order and the one-node shape
rule stay linear and bounded."""

from __future__ import annotations

import time
from unittest import mock

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from devicelab.graph import GraphError
from devicelab.graph.onnx import count_onnx_nodes, graph_from_onnx_bytes
from tests.devicelab.graph import hostile_models as hostile


def external(name: str, location: str = "/etc/passwd") -> onnx.TensorProto:
    t = numpy_helper.from_array(np.zeros(4, np.float32), name)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    entry = t.external_data.add()
    entry.key, entry.value = "location", location
    return t


def in_initializer() -> bytes:
    return hostile.onnx_model([helper.make_node("Add", ["x", "ext"], ["y"], name="add")], [external("ext")])


def in_constant() -> bytes:
    const = helper.make_node("Constant", [], ["c"], name="const", value=external("ext"))
    return hostile.onnx_model([const, hostile.relu()])


def in_sparse_initializer() -> bytes:
    model = onnx.load_from_string(hostile.onnx_model([hostile.relu()]))
    sparse = helper.make_sparse_tensor(external("ext"), numpy_helper.from_array(np.array([0], np.int64), "i"), [4])
    model.graph.sparse_initializer.append(sparse)
    return model.SerializeToString()  # type: ignore[no-any-return]


def in_a_subgraph() -> bytes:
    body = helper.make_graph(
        [helper.make_node("Constant", [], ["c"], name="inner", value=external("ext"))],
        "body",
        [],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [4])],
    )
    cond = numpy_helper.from_array(np.array(True), "cond")
    branch = helper.make_node("If", ["cond"], ["z"], name="if", then_branch=body, else_branch=body)
    return hostile.onnx_model([branch, hostile.relu()], [cond])


def in_a_function() -> bytes:
    opsets = [helper.make_opsetid("", hostile.OPSET), helper.make_opsetid("local", 1)]
    body = [
        helper.make_node("Constant", [], ["c"], name="fconst", value=external("ext")),
        helper.make_node("Add", ["a", "c"], ["b"]),
    ]
    f = helper.make_function("local", "f", ["a"], ["b"], body, opsets)
    top = helper.make_node("f", ["x"], ["y"], domain="local", name="top")
    return hostile.onnx_model([top], functions=[f])


PLACES = {
    "initializer": (in_initializer, "ext"),
    "Constant": (in_constant, "const"),
    "sparse initializer": (in_sparse_initializer, "ext"),
    "If branch": (in_a_subgraph, "inner"),
    "local function": (in_a_function, "fconst"),
}


@pytest.mark.parametrize("place", list(PLACES))
def test_external_data_is_refused_wherever_it_sits(place: str) -> None:
    make, node = PLACES[place]
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(make())
    assert info.value.node == node
    assert "keeps its data in an external file" in info.value.reason


@pytest.mark.parametrize("location", ["../../../etc/passwd", "/proc/self/environ", "/no/such/file", "w.bin"])
def test_the_refusal_is_one_message_and_the_path_is_never_opened(location: str) -> None:
    data = hostile.onnx_model([helper.make_node("Add", ["x", "ext"], ["y"], name="add")], [external("ext", location)])
    with (
        mock.patch("builtins.open", side_effect=AssertionError("opened")),
        mock.patch("os.stat", side_effect=AssertionError("stat")),
        pytest.raises(GraphError) as info,
    ):
        graph_from_onnx_bytes(data)
    assert location not in str(info.value)
    reference = graph_error(in_initializer())
    assert str(info.value) == reference


def graph_error(data: bytes) -> str:
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(data)
    return str(info.value)


def test_a_long_chain_stored_in_reverse_imports_in_linear_time() -> None:
    # the old pass-until-nothing-moves order took 13.6 s for 5,000 nodes (quadratic)
    n = 5000
    chain = [
        helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}" if i < n - 1 else "y"], name=f"r{i}")
        for i in range(n)
    ]
    data = hostile.onnx_model(chain[::-1])
    started = time.perf_counter()
    graph = graph_from_onnx_bytes(data)
    assert time.perf_counter() - started < 3
    assert [o.name for o in graph.operators] == [f"r{i}" for i in range(n)]


def test_a_cycle_still_names_the_first_node_waiting() -> None:
    nodes = [
        helper.make_node("Relu", ["b"], ["a"], name="first"),
        helper.make_node("Relu", ["a"], ["b"], name="second"),
        hostile.relu(),
    ]
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(hostile.onnx_model(nodes))
    assert info.value.node == "first" and "reads 'b'" in info.value.reason


def test_count_onnx_nodes_stops_past_its_bound() -> None:
    assert (count_onnx_nodes(hostile.nested_functions(), 1000) or 0) > 1000  # 2**29 once inlined
    assert count_onnx_nodes(hostile.onnx_model([hostile.relu()]), 1000) == 1
    assert count_onnx_nodes(b"not a model at all", 1000) is None


def test_resize_keep_aspect_ratio_uses_onnx_rule_on_one_node() -> None:
    sizes = numpy_helper.from_array(np.array([6, 6], np.int64), "sizes")
    node = helper.make_node(
        "Resize", ["x", "", "", "sizes"], ["y"], name="resize", axes=[2, 3], keep_aspect_ratio_policy="not_larger"
    )
    graph = graph_from_onnx_bytes(hostile.onnx_model([node], [sizes], input_shape=[1, 3, 2, 4]))
    assert graph.tensors["y"].shape == (1, 3, 3, 6)
