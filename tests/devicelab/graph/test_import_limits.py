"""Import limits (issue 18, finding 6): no model file can make an import allocate what it describes.

A hostile file is refused with a ``LimitExceeded`` naming the node, the op type and the numbers,
before the constant is folded or the tensor accepted; in a fresh interpreter the refusing import
stays under 400 MB of peak RSS (the old importer grew to 4 GB on a 143-byte file). The zoo's
networks import under the default limits with a wide margin.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from devicelab.graph import (
    DEFAULT_LIMITS,
    GraphError,
    ImportLimits,
    LimitExceeded,
    graph_from_dict,
    graph_from_json,
    graph_to_dict,
    load_graph,
)
from devicelab.graph.onnx import graph_from_onnx_bytes, graph_to_onnx_bytes
from devicelab.graph.onnx.fold import FOLD_BOUNDS, FOLDERS
from devicelab.graph.tflite import graph_from_tflite_bytes
from devicelab.graph.zoo import registry
from tests.devicelab.graph import hostile_models as hostile
from tests.devicelab.graph.tflite_writer import TFLiteWriter

MAX_RSS_KB = 400 * 1024


def _refusal(data: bytes, limits: ImportLimits = DEFAULT_LIMITS) -> LimitExceeded:
    with pytest.raises(LimitExceeded) as info:
        graph_from_onnx_bytes(data, limits=limits)
    return info.value


# -- ONNX: every hostile file is refused, naming the node and the numbers --------------------------


@pytest.mark.parametrize("case,make,node,op,limit", hostile.ONNX_CASES, ids=[c[0] for c in hostile.ONNX_CASES])
def test_hostile_onnx_is_refused_naming_the_node(
    case: str, make: Callable[[], bytes], node: str | None, op: str | None, limit: str
) -> None:
    data = make()
    assert len(data) < 4096  # each is a small file
    err = _refusal(data)
    assert isinstance(err, GraphError)
    assert (err.node, err.op, err.limit) == (node, op, limit)
    assert err.maximum == getattr(DEFAULT_LIMITS, limit) and err.count > err.maximum
    assert f"the limit is {err.maximum}" in str(err) or f"the limit of {err.maximum}" in str(err)
    if node is not None:
        assert str(err).startswith(f"node {node!r}")


def test_range_message_gives_the_length_it_would_fold() -> None:
    err = _refusal(hostile.range_2_28())
    assert str(err) == (
        f"node 'r', operator 'Range': would fold {2**28} elements; the limit is {2**24} folded elements per model"
    )


def test_the_fold_budget_is_per_model_not_per_node() -> None:
    err = _refusal(hostile.folds_under_a_per_node_bound())
    assert f"({8 * 2**21} folded before it)" in err.reason
    # each fold alone is within the budget: a budget of 16 such folds accepts the model
    graph = graph_from_onnx_bytes(
        hostile.folds_under_a_per_node_bound(), limits=ImportLimits(max_folded_elements=16 * 2**21)
    )
    assert [o.type for o in graph.operators] == ["relu"]


def test_input_message_gives_shape_and_count() -> None:
    err = _refusal(hostile.huge_input())
    assert "the graph input has shape [1, 3, 100000, 100000], 30000000000 elements" in str(err)


def test_a_raised_limit_lets_a_larger_fold_through() -> None:
    data = hostile.range_2_28()
    small = ImportLimits(max_folded_elements=2**10)
    big = hostile.onnx_model(
        [
            helper.make_node("Range", ["s", "l", "d"], ["r"], name="r"),
            helper.make_node("Relu", ["x"], ["y"], name="relu"),
        ],
        [hostile.i64("s", 0), hostile.i64("l", 2**12), hostile.i64("d", 1)],
    )
    assert _refusal(big, small).count == 2**12
    graph_from_onnx_bytes(big, limits=ImportLimits(max_folded_elements=2**12))
    assert _refusal(data, ImportLimits(max_folded_elements=2**27)).count == 2**28


@pytest.mark.parametrize(
    "start,limit,delta,length",
    [(0, 10, 3, 4), (10, 0, -3, 4), (5, 5, 1, 0), (10, 0, 1, 0), (0.0, 1.0, 0.25, 4), (0.0, 1.0, 0.3, 4)],
)
def test_range_length_is_computed_exactly_before_folding(start: float, limit: float, delta: float, length: int) -> None:
    dtype = np.int64 if isinstance(start, int) else np.float32
    values = [np.array(v, dtype=dtype) for v in (start, limit, delta)]
    assert FOLD_BOUNDS["Range"](values, {}) == length == FOLDERS["Range"](values, {}).size


def test_every_folder_has_a_bound_at_least_its_result() -> None:
    assert set(FOLD_BOUNDS) == set(FOLDERS)
    a, b = np.arange(1, 7, dtype=np.int64).reshape(2, 3), np.arange(1, 4, dtype=np.int64)
    samples: dict[str, tuple[list, dict]] = {
        "Gather": ([a, np.array([1, 0, 1, 2])], {"axis": 1}),
        "Concat": ([a, a], {"axis": 0}),
        "Expand": ([b, np.array([4, 1, 3])], {}),
        "Where": ([a > 2, a, b], {}),
        "ConstantOfShape": ([np.array([2, 5])], {}),
        "Range": ([np.array(0), np.array(7), np.array(2)], {}),
        "Reshape": ([a, np.array([3, 2])], {}),
        "Cast": ([a], {"to": TensorProto.FLOAT}),
        "Slice": ([a, np.array([0]), np.array([1]), np.array([0])], {}),
        "Unsqueeze": ([b, np.array([0])], {}),
        "Squeeze": ([a[:1]], {}),
        "ReduceProd": ([a], {"keepdims": 0}),
        "Concat3": ([a, a, a], {"axis": 1}),
    }
    binary = ("Add", "Sub", "Mul", "Div", "Min", "Max", "Equal", "Less", "Greater")
    for op, fold in FOLDERS.items():
        values, attrs = samples.get(op, ([a[:, None, :], b[:, None]], {}) if op in binary else ([a], {}))
        result = np.asarray(fold(values, attrs))
        assert FOLD_BOUNDS[op](values, attrs) >= result.size, op
        if op in binary or op in ("Gather", "Concat", "Expand", "ConstantOfShape", "Range", "Reshape", "Where"):
            assert FOLD_BOUNDS[op](values, attrs) == result.size, op  # exact where the size can grow


def test_a_negative_or_overlong_shape_operand_is_a_graph_error() -> None:
    for shape in ([2, -3], [1] * 65):
        data = hostile.onnx_model(
            [helper.make_node("ConstantOfShape", ["s"], ["c"], name="fill"), hostile.relu()],
            [hostile.i64("s", shape)],
        )
        with pytest.raises(GraphError) as info:
            graph_from_onnx_bytes(data)
        assert info.value.node == "fill" and not isinstance(info.value, LimitExceeded)


def test_a_shape_operand_of_millions_of_values_is_refused_before_it_becomes_a_list() -> None:
    """A fold within the budget (2**23 values) as a Reshape target would be a list of 8 million ints."""
    nodes = [
        helper.make_node("Range", ["s", "l", "d"], ["target"], name="r"),
        helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape"),
    ]
    data = hostile.onnx_model(nodes, [hostile.i64("s", 0), hostile.i64("l", 2**23), hostile.i64("d", 1)])
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(data)
    assert (info.value.node, info.value.op) == ("reshape", "Reshape")
    assert f"holds {2**23} values" in info.value.reason and "at most 1024" in info.value.reason


def test_cast_to_string_is_not_folded() -> None:
    cast = helper.make_node("Cast", ["c"], ["s"], name="to_text", to=TensorProto.STRING)
    data = hostile.onnx_model([cast, hostile.relu()], [hostile.i64("c", [1, 2, 3])])
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(data)
    assert info.value.node == "to_text" and "cannot be folded" in info.value.reason


def test_a_constant_declaring_huge_dims_is_refused_before_it_is_read() -> None:
    value = TensorProto(name="v", data_type=TensorProto.FLOAT, dims=[2**20, 2**20])
    const = helper.make_node("Constant", [], ["c"], name="const", value=value)
    err = _refusal(hostile.onnx_model([const, hostile.relu()]))
    assert (err.node, err.op, err.limit) == ("const", "Constant", "max_tensor_elements")


def test_a_constant_with_external_data_is_refused() -> None:
    value = numpy_helper.from_array(np.zeros(4, np.float32), "v")
    value.ClearField("raw_data")
    value.data_location = TensorProto.EXTERNAL
    entry = value.external_data.add()
    entry.key, entry.value = "location", "settings.py"
    const = helper.make_node("Constant", [], ["c"], name="const", value=value)
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(hostile.onnx_model([const, hostile.relu()]))
    assert info.value.node == "const" and "external file" in info.value.reason


def test_a_recursive_local_function_is_refused() -> None:
    opsets = [helper.make_opsetid("", hostile.OPSET), helper.make_opsetid("local", 1)]
    f = helper.make_function("local", "f", ["a"], ["b"], [helper.make_node("f", ["a"], ["b"], domain="local")], opsets)
    data = hostile.onnx_model([helper.make_node("f", ["x"], ["y"], domain="local", name="top")], functions=[f])
    with pytest.raises(GraphError) as info:
        graph_from_onnx_bytes(data)
    assert "calls itself" in info.value.reason


def test_shallow_local_functions_are_still_inlined() -> None:
    graph = graph_from_onnx_bytes(hostile.nested_functions(depth=4))
    assert len(graph.operators) == 8 and {o.type for o in graph.operators} == {"relu"}
    err = _refusal(hostile.nested_functions(depth=4), ImportLimits(max_operators=7))
    assert err.limit == "max_operators" and "once its local functions are inlined" in err.reason


# -- in a fresh process: the refusing import stays small ------------------------------------------


@pytest.mark.parametrize("case,make,node,op,limit", hostile.ONNX_CASES, ids=[c[0] for c in hostile.ONNX_CASES])
def test_refusing_a_hostile_file_stays_under_400_mb(
    tmp_path: Path, case: str, make: Callable[[], bytes], node: str | None, op: str | None, limit: str
) -> None:
    out = hostile.import_in_subprocess(make(), tmp_path)
    assert out["refused"], out
    assert (out["node"], out["op"], out["limit"]) == (node, op, limit), out
    assert out["maxrss_kb"] < MAX_RSS_KB, f"the import grew to {out['maxrss_kb'] // 1024} MB"


# -- graph JSON --------------------------------------------------------------------------------


def _doc(input_shape: list[int], op: dict) -> dict:
    return {
        "schema_version": 1,
        "name": "hostile",
        "inputs": [{"name": "x", "shape": input_shape}],
        "operators": [{"name": "op", "inputs": ["x"], "outputs": ["y"], **op}],
    }


def test_json_input_over_the_tensor_limit() -> None:
    doc = _doc([1, 3, 100000, 100000], {"type": "relu"})
    with pytest.raises(LimitExceeded) as info:
        graph_from_dict(doc)
    assert info.value.node == "x" and "30000000000 elements" in str(info.value)
    with pytest.raises(LimitExceeded):
        graph_from_json(json.dumps(doc))


def test_json_output_over_the_tensor_limit() -> None:
    doc = _doc([1, 1, 1, 1], {"type": "pad", "attrs": {"pads": [0, 0, 100000, 100000, 0, 0, 100000, 100000]}})
    with pytest.raises(LimitExceeded) as info:
        graph_from_dict(doc)
    assert (info.value.node, info.value.op) == ("op", "pad") and "its output 'y'" in str(info.value)


def test_json_weights_over_the_tensor_limit() -> None:
    """A conv whose activations are small but whose weights are 65536 x 65536 x 3 x 3."""
    conv = {"type": "conv2d", "attrs": {"out_channels": 65536, "kernel": [3, 3], "pads": [1, 1, 1, 1]}}
    with pytest.raises(LimitExceeded) as info:
        graph_from_dict(_doc([1, 65536, 1, 1], conv))
    assert (info.value.node, info.value.op) == ("op", "conv2d") and "weights" in info.value.reason


def test_json_operator_count() -> None:
    doc = _doc([1, 4], {"type": "relu"})
    graph_from_dict(doc, ImportLimits(max_operators=1))
    doc["operators"].append({"name": "op2", "type": "relu", "inputs": ["y"], "outputs": ["z"]})
    with pytest.raises(LimitExceeded) as info:
        graph_from_dict(doc, ImportLimits(max_operators=1))
    assert info.value.limit == "max_operators"


def test_load_graph_passes_the_limits_to_every_reader() -> None:
    doc = json.dumps(_doc([1, 8], {"type": "relu"})).encode()
    tight = ImportLimits(max_tensor_elements=4)
    for data in (doc, graph_to_onnx_bytes(graph_from_json(doc))):
        load_graph(data)
        with pytest.raises(LimitExceeded):
            load_graph(data, limits=tight)


# -- TFLite ------------------------------------------------------------------------------------


def test_tflite_input_over_the_tensor_limit() -> None:
    w = TFLiteWriter("big-input")
    x = w.input("image", [1, 100000, 100000, 3])
    w.outputs = [w.unary("RELU", x, name="r")]
    with pytest.raises(LimitExceeded) as info:
        graph_from_tflite_bytes(w.to_bytes())
    assert info.value.node == "image" and "[1, 3, 100000, 100000]" in str(info.value)


def test_tflite_output_over_the_tensor_limit_names_the_operator() -> None:
    w = TFLiteWriter("big-output")
    x = w.input("x", [1, 4, 4, 8])
    y = w.tensor("grown", [1, 100000, 100000, 8])
    w.op("RELU", [x], [y])
    with pytest.raises(LimitExceeded) as info:
        graph_from_tflite_bytes(w.to_bytes(outputs=[y]))
    assert (info.value.node, info.value.op) == ("grown", "RELU")


def test_tflite_weights_over_the_tensor_limit() -> None:
    w = TFLiteWriter("big-weights", with_weights=False)  # shape-only: the file stays small
    x = w.input("x", [1, 65536])
    w.outputs = [w.fc(x, 65536, name="fc")]
    data = w.to_bytes()
    assert len(data) < 4096
    with pytest.raises(LimitExceeded) as info:
        graph_from_tflite_bytes(data)
    assert info.value.op == "fully_connected" and "weights would hold 4295032832 elements" in info.value.reason


# -- the limits themselves, and the zoo under the defaults ----------------------------------------


def test_limits_must_be_positive_ints() -> None:
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            ImportLimits(max_tensor_elements=bad)  # type: ignore[arg-type]
    assert ImportLimits() == DEFAULT_LIMITS


def test_the_zoo_fits_the_default_limits_with_a_wide_margin() -> None:
    """Every zoo network's largest tensor and heaviest operator are at most 1/20 of the limit."""
    biggest = {}
    for name, entry in registry.entries().items():
        graph = entry.build()
        biggest[name] = max(math.prod(t.shape) for t in graph.tensors.values())
        heaviest = max(graph.op_cost(o).params for o in graph.operators)
        assert biggest[name] * 20 <= DEFAULT_LIMITS.max_tensor_elements, name
        assert heaviest * 20 <= DEFAULT_LIMITS.max_tensor_elements, name
    assert biggest["deeplab_v3_mnv2"] > 1_000_000 and biggest["inception_v3"] > 1_000_000  # 257x257, 299x299


@pytest.mark.parametrize("name", ["deeplab_v3_mnv2", "deeplab_v3_mnv2_513", "inception_v3"])
def test_large_zoo_models_import_as_json_and_onnx_under_the_defaults(name: str) -> None:
    graph = registry.build(name)
    assert graph_from_json(json.dumps(graph_to_dict(graph))).summary() == graph.summary()
    assert load_graph(graph_to_onnx_bytes(graph), filename=f"{name}.onnx").macs == graph.macs
