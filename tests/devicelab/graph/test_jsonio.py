"""Graph JSON: round trips, defaults, and the documented example."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from devicelab.graph import GraphBuilder, GraphError, graph_from_dict, graph_from_json, graph_to_dict, graph_to_json
from devicelab.graph.ops import OPS

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_round_trip_is_equal():
    b = GraphBuilder("g", (1, 3, 16, 16))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2)))
    parts = b.split(x, [4, 4])
    g = b.build(b.concat([b.op("hard_swish", [parts[0]]), parts[1]]))
    assert graph_from_json(graph_to_json(g)) == g


def test_defaults_are_filled_and_shapes_inferred():
    doc = {
        "schema_version": 1,
        "name": "d",
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "operators": [
            {
                "name": "c",
                "type": "conv2d",
                "inputs": ["x"],
                "outputs": ["y"],
                "attrs": {"out_channels": 4, "kernel": 3},
            }
        ],
    }
    g = graph_from_json(json.dumps(doc))
    assert g.tensors["y"].shape == (1, 4, 6, 6)
    assert g.op("c").attrs == {
        "kernel": [3, 3],
        "stride": [1, 1],
        "pads": [0, 0, 0, 0],
        "dilation": [1, 1],
        "out_channels": 4,
        "groups": 1,
        "bias": True,
    }
    assert g.outputs == ["y"]


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda d: d.update(schema_version=2), "schema_version"),
        (lambda d: d["operators"][0].update(type="frobnicate"), "unknown operator type"),
        (lambda d: d["operators"][0].update(output_shapes=[[1, 4, 8, 8]]), "declared"),
        (lambda d: d["inputs"][0].update(shape=[1, 3, -1, 8]), "positive integers"),
        (lambda d: d["operators"][0].update(inputs=["ghost"]), "ghost"),
        (lambda d: d["operators"][0]["attrs"].pop("out_channels"), "out_channels"),
        (lambda d: d["operators"].append({**d["operators"][0], "inputs": ["y"], "outputs": ["z"]}), "more than once"),
        (lambda d: d["operators"][0].update(outputs=["x"]), "already written"),
        (lambda d: d["operators"][0].update(outputs=[7]), "non-empty list of tensor names"),
        (lambda d: d["operators"][0].update(name=["c"]), "'name' must be a string"),
        (lambda d: d.update(outputs=["nowhere"]), "never written"),
    ],
)
def test_bad_documents_name_the_reason(mutate, reason):
    doc = {
        "schema_version": 1,
        "name": "d",
        "inputs": [{"name": "x", "shape": [1, 3, 8, 8]}],
        "operators": [
            {
                "name": "c",
                "type": "conv2d",
                "inputs": ["x"],
                "outputs": ["y"],
                "attrs": {"out_channels": 4, "kernel": 3},
            }
        ],
    }
    mutate(doc)
    with pytest.raises(GraphError, match=reason):
        graph_from_json(json.dumps(doc))


def test_not_json_is_a_graph_error():
    with pytest.raises(GraphError, match="not valid JSON"):
        graph_from_json(b"{nope")


def test_documented_example_loads_with_the_documented_numbers():
    text = (DOCS / "graph-format.md").read_text()
    block = re.search(r"```json\n(.*?)```", text, re.S).group(1)
    g = graph_from_json(block)
    assert (len(g.operators), g.macs, g.params) == (13, 147_872, 1_050)
    assert "13 operators, 147,872 MACs and 1,050 parameters" in " ".join(text.split())
    assert json.loads((DOCS / "examples" / "tiny-se-net.json").read_text()) == json.loads(block)


def test_every_operator_type_is_documented():
    text = (DOCS / "graph-format.md").read_text()
    missing = [name for name in OPS if f"| `{name}` |" not in text]
    assert missing == []


def test_repeated_operators_are_remembered_not_shared() -> None:
    """The reader remembers each checked (type, attributes, input shapes); repeats get equal
    but separate attribute dicts, and a failing configuration is never remembered."""
    import numpy as np

    from devicelab.graph import nas, ops

    g = nas.sample("synthetic", 1, 11)[0]
    doc = graph_to_dict(g)
    a, b = graph_from_dict(doc), graph_from_dict(doc)
    assert a.operators == b.operators == g.operators
    assert all(x.attrs is not y.attrs for x, y in zip(a.operators, b.operators))
    conv = next(o for o in doc["operators"] if o["type"] == "conv2d")
    shapes = [a.tensors[conv["inputs"][0]].shape]
    bad = {**conv["attrs"], "kernel": [0, 3]}
    for _ in range(2):
        with pytest.raises(GraphError, match="kernel sizes"):
            ops.normalize_and_infer_memo("conv2d", bad, shapes, "n1")
    # attributes that are not plain JSON data are checked directly
    odd = {**conv["attrs"], "out_channels": np.int64(conv["attrs"]["out_channels"])}
    assert ops.normalize_and_infer_memo("conv2d", odd, shapes)[1] == ops.normalize_and_infer("conv2d", odd, shapes)[1]
