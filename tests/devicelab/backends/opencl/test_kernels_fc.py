"""fully_connected and matmul kernels against numpy: feature counts off the vector width, 3-D
inputs (ONNX MatMul weight layout), a folded batch norm, a fused activation, broadcast batches."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.graph.builder import GraphBuilder
from tests.devicelab.backends.opencl import reference as ref
from tests.devicelab.backends.opencl.conftest import assert_close, one_op


@pytest.mark.parametrize(
    "shape,out,bias", [((1, 1280), 1000, True), ((3, 37), 11, False), ((1, 5), 1, True), ((2, 64), 16, True)]
)
def test_fc_2d_matches_numpy(run_graph, shape, out, bias) -> None:
    r = run_graph(one_op(shape, lambda b, x: b.fc(x, out, bias=bias, name="fc")))
    assert [k.kernel for k in r.runner.plan] == ["fully_connected"]
    w = r.weights["fc"]
    want = r.x.astype(np.float64) @ w["weight"].T.astype(np.float64) + (w["bias"] if bias else 0)
    assert_close(r.out, want)


def test_fc_on_3d_input_uses_the_matmul_layout(run_graph) -> None:
    r = run_graph(one_op((2, 5, 19), lambda b, x: b.fc(x, 13, name="fc")))
    w = r.weights["fc"]
    assert w["weight"].shape == (19, 13)
    assert_close(r.out, r.x.astype(np.float64) @ w["weight"] + w["bias"])


def test_fc_folds_batch_norm_and_activation(run_graph) -> None:
    x = (np.random.default_rng(2).standard_normal((3, 40)) * 4).astype(np.float32)
    r = run_graph(
        one_op((3, 40), lambda b, x: b.relu6(b.bn(b.fc(x, 21, name="fc"), name="bn"), name="act")), {"input": x}
    )
    assert [(k.kernel, k.ops) for k in r.runner.plan] == [("fully_connected", ("fc", "bn", "act"))]
    w = r.weights["fc"]
    y = ref.batch_norm(x.astype(np.float64) @ w["weight"].T + w["bias"], r.weights["bn"], 1e-5)
    assert (y > 6).any()
    assert_close(r.out, np.clip(y, 0, 6))


@pytest.mark.parametrize(
    "a,b", [((4, 7), (7, 5)), ((2, 3, 6, 5), (2, 3, 5, 9)), ((2, 1, 6, 5), (3, 5, 4)), ((1, 5), (3, 5, 2))]
)
def test_matmul_broadcasts_batches(run_graph, a, b) -> None:
    gb = GraphBuilder("mm", a)
    other = gb.add_input("other", b)
    graph = gb.build(gb.op("matmul", [gb.input, other], name="mm"))
    rng = np.random.default_rng(1)
    feeds = {"input": rng.standard_normal(a).astype(np.float32), "other": rng.standard_normal(b).astype(np.float32)}
    r = run_graph(graph, feeds)
    assert [k.kernel for k in r.runner.plan] == ["matmul"]
    assert_close(r.out, np.matmul(feeds["input"].astype(np.float64), feeds["other"]))
