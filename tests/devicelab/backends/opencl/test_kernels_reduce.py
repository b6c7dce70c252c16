"""Reduction kernels against numpy: mean / max / sum over any axes with and without kept axes,
and softmax along every axis."""

from __future__ import annotations

import numpy as np
import pytest

from tests.devicelab.backends.opencl.conftest import assert_close, one_op

REDUCE = {"reduce_mean": np.mean, "reduce_max": np.max, "reduce_sum": np.sum}


@pytest.mark.parametrize("op", list(REDUCE))
@pytest.mark.parametrize(
    "shape,axes,keepdims",
    [
        ((2, 5, 7, 3), [2, 3], True),
        ((2, 5, 7, 3), [1], False),
        ((3, 4, 5), [0, 2], True),
        ((6, 9), [1], False),
        ((2, 3, 4, 5), [0, 1, 2, 3], False),
    ],
)
def test_reduce_matches_numpy(run_graph, op, shape, axes, keepdims) -> None:
    r = run_graph(one_op(shape, lambda b, x: b.op(op, [x], name="red", axes=axes, keepdims=keepdims)))
    assert [k.kernel for k in r.runner.plan] == ["reduce"]
    assert_close(r.out, REDUCE[op](r.x.astype(np.float64), axis=tuple(axes), keepdims=keepdims).reshape(r.out.shape))


@pytest.mark.parametrize("shape,axis", [((2, 1000), -1), ((2, 5, 3, 4), 1), ((3, 4, 6), 0), ((1, 3, 7), 2)])
def test_softmax_matches_numpy(run_graph, shape, axis) -> None:
    x = (np.random.default_rng(8).standard_normal(shape) * 5).astype(np.float32)
    r = run_graph(one_op(shape, lambda b, t: b.softmax(t, axis=axis)), {"input": x})
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    assert_close(r.out, e / e.sum(axis=axis, keepdims=True))
