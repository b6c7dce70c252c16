"""Graph structure: topological order, edges, checking, op tables."""

from __future__ import annotations

import pytest

from devicelab.graph import Graph, GraphBuilder, GraphError, Operator, Tensor


def _diamond() -> Graph:
    b = GraphBuilder("diamond", (1, 8, 8, 8))
    a = b.relu(b.input, name="a")
    left = b.conv(a, 8, 3, name="left")
    right = b.conv(a, 8, 1, pad=0, name="right")
    return b.build(b.add(left, right, name="join"))


def test_edges_follow_tensors():
    g = _diamond()
    assert sorted(g.edges()) == sorted(
        [("a", "left", "a"), ("a", "right", "a"), ("left", "join", "left"), ("right", "join", "right")]
    )


def test_topological_order_repairs_a_shuffled_operator_list():
    g = _diamond()
    shuffled = Graph(g.name, g.tensors, g.inputs, g.outputs, list(reversed(g.operators)))
    order = [o.name for o in shuffled.topological_order()]
    assert order.index("a") < order.index("left") < order.index("join")
    assert order.index("right") < order.index("join")
    repaired = shuffled.sorted().check()
    assert sorted(o.name for o in repaired.operators) == sorted(o.name for o in g.operators)
    assert repaired.macs == g.macs


def test_check_rejects_a_cycle_with_the_node_named():
    t = {n: Tensor(n, (1, 4)) for n in ("x", "y", "z")}
    ops = [Operator("p", "relu", ["z"], ["y"]), Operator("q", "relu", ["y"], ["z"])]
    g = Graph("cyc", t, ["x"], ["z"], ops)
    with pytest.raises(GraphError, match="cycle") as err:
        g.topological_order()
    assert err.value.node in {"p", "q"}


def test_check_rejects_wrong_declared_shape():
    g = _diamond()
    g.tensors["left"] = Tensor("left", (1, 8, 4, 4))
    with pytest.raises(GraphError) as err:
        g.check()
    assert err.value.node == "left" and "declared" in err.value.reason


def test_check_rejects_reading_an_unwritten_tensor():
    g = _diamond()
    g.operators[1].inputs = ["nowhere"]
    with pytest.raises(GraphError, match="nowhere"):
        g.check()


def test_unknown_operator_type_is_named():
    b = GraphBuilder("g", (1, 3, 8, 8))
    with pytest.raises(GraphError) as err:
        b.op("non_max_suppression", [b.input], name="nms")
    assert err.value.node == "nms" and err.value.op == "non_max_suppression"
    assert "unknown operator type" in str(err.value)


def test_bad_attributes_are_named():
    b = GraphBuilder("g", (1, 6, 8, 8))
    with pytest.raises(GraphError, match="not divisible by groups"):
        b.conv(b.input, 8, 3, groups=4, name="c")
    with pytest.raises(GraphError, match="does not fit"):
        b.conv(b.input, 8, 11, pad=0, name="big")


def test_op_table_rows():
    rows = _diamond().op_table()
    assert [r["index"] for r in rows] == [0, 1, 2, 3]
    join = rows[-1]
    assert join["type"] == "add" and join["input_shapes"] == [[1, 8, 8, 8], [1, 8, 8, 8]]
    assert rows[1]["macs"] == 8 * 8 * 8 * 8 * 9


def test_split_concat_and_shapes():
    b = GraphBuilder("g", (1, 12, 5, 7))
    parts = b.split(b.input, [3, 4, 5])
    assert [b.shape(p) for p in parts] == [(1, 3, 5, 7), (1, 4, 5, 7), (1, 5, 5, 7)]
    y = b.concat([b.relu(p) for p in parts])
    assert b.shape(y) == (1, 12, 5, 7)
    with pytest.raises(GraphError, match="do not add up"):
        b.split(b.input, [3, 4])


def test_ceil_mode_pooling_matches_torch_rule():
    # torchvision SqueezeNet: 111x111 -> 3x3/2 max pool with ceil_mode -> 55x55
    b = GraphBuilder("g", (1, 4, 111, 111))
    assert b.shape(b.max_pool(b.input, 3, 2, ceil_mode=True)) == (1, 4, 55, 55)
    b2 = GraphBuilder("g", (1, 4, 112, 112))
    assert b2.shape(b2.max_pool(b2.input, 3, 2, ceil_mode=True)) == (1, 4, 56, 56)


def test_tf_same_padding_is_asymmetric():
    b = GraphBuilder("g", (1, 3, 224, 224))
    y = b.conv(b.input, 8, 3, stride=2, pad="same_tf")
    assert b.shape(y) == (1, 8, 112, 112)
    assert b.build(y).operators[0].attrs["pads"] == [0, 0, 1, 1]
