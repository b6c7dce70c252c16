"""Element-wise kernels against numpy: binary operators with every broadcast pattern the zoo
uses (and odder ones), constant operands on either side, a fused activation; every activation
standalone; a batch norm that cannot be folded (scale_shift)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from devicelab.graph.builder import GraphBuilder
from tests.devicelab.backends.opencl import reference as ref
from tests.devicelab.backends.opencl.conftest import assert_close, one_op

NUMPY_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide}

SHAPES = [
    ("same", (2, 5, 7, 9), (2, 5, 7, 9)),
    ("channel_gate", (1, 6, 5, 7), (1, 6, 1, 1)),  # squeeze-and-excite
    ("row_broadcast", (2, 3, 4, 5), (1, 1, 4, 1)),
    ("both_broadcast", (2, 1, 4, 5), (1, 3, 1, 5)),
    ("lower_rank", (2, 3, 4, 6), (6,)),
    ("rank2", (3, 17), (1, 17)),
]


@pytest.mark.parametrize("op", list(NUMPY_BINARY))
@pytest.mark.parametrize("shapes", SHAPES, ids=[s[0] for s in SHAPES])
def test_binary_broadcasts_like_numpy(run_graph, op: str, shapes) -> None:
    _, sa, sb = shapes
    b = GraphBuilder("bin", sa)
    other = b.add_input("other", sb)
    graph = b.build(b.op(op, [b.input, other], name="bin"))
    rng = np.random.default_rng(7)
    feeds = {
        "input": rng.standard_normal(sa).astype(np.float32),
        "other": rng.uniform(0.5, 2.0, sb).astype(np.float32),
    }  # no divisor near zero
    r = run_graph(graph, feeds)
    assert [k.kernel for k in r.runner.plan] == ["binary"]
    assert_close(r.out, NUMPY_BINARY[op](feeds["input"].astype(np.float64), feeds["other"]))


@pytest.mark.parametrize("const_first", [False, True])
@pytest.mark.parametrize(
    "op,const_shape,value", [("sub", [1, 5, 1, 1], None), ("div", [1], None), ("add", [1], 3.0), ("mul", [7], None)]
)
def test_binary_with_a_constant_operand(run_graph, op, const_shape, value, const_first) -> None:
    attrs: dict[str, Any] = {"const_shape": const_shape, "const_first": const_first}
    if value is not None:
        attrs["const_value"] = value
    r = run_graph(one_op((2, 5, 3, 7), lambda b, x: b.op(op, [x], name="bin", **attrs)))
    const = r.weights["bin"]["const"].astype(np.float64)
    x = r.x.astype(np.float64)
    want = NUMPY_BINARY[op](const, x) if const_first else NUMPY_BINARY[op](x, const)
    assert_close(r.out, want)


def test_add_absorbs_the_following_relu(run_graph) -> None:
    def build(b, x):
        y = b.conv(x, 4, 1, name="conv")
        return b.relu(b.add(x, y, name="add"), name="relu")

    r = run_graph(one_op((1, 4, 6, 5), build))
    assert [(k.kernel, k.ops) for k in r.runner.plan] == [("conv2d_1x1", ("conv",)), ("binary", ("add", "relu"))]
    y = ref.conv2d(r.x, r.weights["conv"]["weight"], None, [1, 1], [0, 0, 0, 0], [1, 1], 1)
    assert_close(r.out, np.maximum(r.x + y, 0))


ACTS: list[tuple[str, dict[str, Any]]] = [
    ("relu", {}),
    ("relu6", {}),
    ("hard_swish", {}),
    ("hard_sigmoid", {}),
    ("sigmoid", {}),
    ("swish", {}),
    ("tanh", {}),
    ("gelu", {}),
    ("leaky_relu", {"alpha": 0.1}),
    ("elu", {"alpha": 1.5}),
    ("clip", {"min": -1.0, "max": 2.0}),
    ("clip", {"min": 0.5, "max": None}),
]


@pytest.mark.parametrize("shape", [(1, 3, 7, 11), (2, 17)])
@pytest.mark.parametrize("act", ACTS, ids=[f"{a}-{i}" for i, (a, _) in enumerate(ACTS)])
def test_standalone_activation(run_graph, act, shape) -> None:
    kind, attrs = act
    x = (np.random.default_rng(4).standard_normal(shape) * 6).astype(np.float32)
    r = run_graph(one_op(shape, lambda b, t: b.act(t, kind, name="act", **attrs)), {"input": x})
    assert [k.kernel for k in r.runner.plan] == ["activation"]
    assert_close(r.out, ref.activation(kind, x.astype(np.float64), **r.graph.op("act").attrs))


def test_batch_norm_after_a_shared_tensor_runs_scale_shift(run_graph) -> None:
    def build(b, x):
        y = b.conv(x, 6, 3, pad="same", name="conv")
        z = b.relu6(b.bn(y, name="bn"), name="act")  # y also feeds the add: BN cannot fold into conv
        return b.add(y, z, name="add")

    x = (np.random.default_rng(6).standard_normal((2, 3, 5, 23)) * 6).astype(np.float32)
    r = run_graph(one_op((2, 3, 5, 23), build), {"input": x})
    assert [(k.kernel, k.ops) for k in r.runner.plan] == [
        ("conv2d_flat", ("conv",)),
        ("scale_shift", ("bn", "act")),
        ("binary", ("add",)),
    ]
    y = ref.conv2d(x, r.weights["conv"]["weight"], None, [1, 1], [1, 1, 1, 1], [1, 1], 1)
    z = np.clip(ref.batch_norm(y, r.weights["bn"], 1e-5), 0, 6)
    assert_close(r.out, y + z)


def test_batch_norm_on_a_2d_tensor(run_graph) -> None:
    r = run_graph(one_op((3, 10), lambda b, x: b.bn(x, name="bn")))
    assert [k.kernel for k in r.runner.plan] == ["scale_shift"]
    assert_close(r.out, ref.batch_norm(r.x.astype(np.float64), r.weights["bn"], 1e-5))
