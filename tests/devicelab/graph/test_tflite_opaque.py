"""Operators outside the graph IR (a TFLite ARG_MAX, GATHER, a custom operator) are kept as
``opaque`` operators: name, inputs, outputs with their shapes and dtypes, no MACs; graph JSON
writes and reads them; the operator table shows them; a device that runs the IR refuses them."""

from __future__ import annotations

import pytest

from devicelab.graph import GraphError
from devicelab.graph.jsonio import graph_from_dict, graph_from_json, graph_to_dict, graph_to_json
from devicelab.graph.onnx import graph_to_onnx_bytes
from devicelab.graph.opaque import opaque_refusal
from devicelab.graph.tflite import graph_from_tflite_bytes, graph_to_tflite_bytes
from tests.devicelab.graph.opaque_models import argmax_model, custom_op_model
from tests.devicelab.graph.tflite_writer import TFLiteWriter


def test_arg_max_is_kept_as_an_opaque_last_operator():
    g = graph_from_tflite_bytes(argmax_model())
    last = g.operators[-1]
    assert (last.name, last.type, last.inputs, last.outputs) == ("classes", "opaque", ["conv"], ["classes"])
    assert last.attrs == {"op": "ARG_MAX", "custom": False, "output_shapes": [[1, 16, 16]], "output_dtypes": ["int64"]}
    assert g.tensors["classes"].dtype == "int64" and g.outputs == ["classes"]
    cost = g.op_cost(last)
    assert (cost.macs, cost.flops, cost.params) == (0, 0, 0)
    assert g.summary()["op_types"]["opaque"] == 1


def test_a_custom_operator_keeps_its_code_and_every_output():
    g = graph_from_tflite_bytes(custom_op_model())
    op = g.op("upsampled")
    assert op.type == "opaque" and op.attrs["op"] == "MyLab_Upsample" and op.attrs["custom"] is True
    assert op.outputs == ["upsampled", "mask"]
    # 4-D outputs are NCHW like every other tensor of the import; the mask keeps its rank
    assert [g.tensors[t].shape for t in op.outputs] == [(1, 4, 16, 16), (1, 16, 16)]
    assert [g.tensors[t].dtype for t in op.outputs] == ["float32", "int32"]
    assert g.op("head").inputs == ["upsampled"]  # a known operator reads its output


def test_a_builtin_without_a_handler_is_opaque_too():
    w = TFLiteWriter("gather")
    x = w.input("x", [1, 4, 4, 8])
    relu = w.unary("RELU", x, name="relu")
    idx = w.const("indices", [2], [0, 1], dtype="int32")
    y = w.tensor("gathered", [1, 2, 4, 8])
    w.op("GATHER", [relu, idx], [y])
    op = graph_from_tflite_bytes(w.to_bytes(outputs=[y])).op("gathered")
    # the constant indices are not tensors of the IR
    assert (op.type, op.attrs["op"], op.inputs) == ("opaque", "GATHER", ["relu"])


@pytest.mark.parametrize("make", [argmax_model, custom_op_model])
def test_graph_json_writes_and_reads_opaque_operators(make):
    g = graph_from_tflite_bytes(make())
    back = graph_from_json(graph_to_json(g))
    assert graph_to_dict(back) == graph_to_dict(g)
    assert back.tensors == g.tensors


def test_the_operator_table_shows_an_opaque_operator_like_the_others():
    row = graph_from_tflite_bytes(argmax_model()).op_table()[-1]
    assert (row["name"], row["type"], row["category"], row["attrs"]["op"]) == ("classes", "opaque", "opaque", "ARG_MAX")
    assert (row["input_shapes"], row["output_shapes"], row["macs"]) == ([[1, 8, 16, 16]], [[1, 16, 16]], 0)


@pytest.mark.parametrize(
    ("attrs", "reason"),
    [
        ({"output_shapes": [[1, 4]]}, "'op'"),
        ({"op": "ARG_MAX"}, "output_shapes"),
        ({"op": "ARG_MAX", "output_shapes": [[1, 0]]}, "output_shapes"),
        ({"op": "ARG_MAX", "output_shapes": [[1, 4]], "output_dtypes": ["bool"]}, "output_dtypes"),
        ({"op": "ARG_MAX", "output_shapes": [[1, 4], [1, 4]]}, "expected 2"),
    ],
)
def test_graph_json_refuses_an_opaque_operator_it_cannot_size(attrs, reason):
    doc = {
        "schema_version": 1,
        "inputs": [{"name": "x", "shape": [1, 4]}],
        "operators": [{"name": "am", "type": "opaque", "inputs": ["x"], "outputs": ["y"], "attrs": attrs}],
    }
    with pytest.raises(GraphError, match=reason) as info:
        graph_from_dict(doc)
    assert info.value.node == "am"


@pytest.mark.parametrize("export", [graph_to_tflite_bytes, graph_to_onnx_bytes])
def test_the_writers_say_they_cannot_export_an_opaque_operator(export):
    with pytest.raises(GraphError, match="opaque") as info:
        export(graph_from_tflite_bytes(argmax_model()))
    assert info.value.node == "classes"


def test_only_a_device_that_runs_the_upload_itself_takes_opaque_operators():
    operators = graph_to_dict(graph_from_tflite_bytes(argmax_model()))["operators"]
    assert opaque_refusal(operators, "tflite", ("tflite",)) is None
    reason = opaque_refusal(operators, "tflite", ("ir",))
    assert reason is not None and "ARG_MAX" in reason and "'classes'" in reason
    custom = graph_to_dict(graph_from_tflite_bytes(custom_op_model()))["operators"]
    assert "custom operator MyLab_Upsample" in str(opaque_refusal(custom, "tflite", ("onnx",)))
    known = [o for o in operators if o["type"] != "opaque"]
    assert opaque_refusal(known, "tflite", ("ir",)) is None
