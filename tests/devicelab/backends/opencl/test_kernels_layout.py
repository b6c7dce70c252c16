"""Data-movement kernels against numpy: concat and split on several axes with odd sizes, pad in
every mode, channel shuffle, transpose, views (reshape, flatten) and resize."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.graph.builder import GraphBuilder
from tests.devicelab.backends.opencl import reference as ref
from tests.devicelab.backends.opencl.conftest import assert_close, one_op


@pytest.mark.parametrize(
    "axis,shapes",
    [
        (1, [(2, 3, 5, 7), (2, 5, 5, 7), (2, 1, 5, 7)]),
        (2, [(1, 3, 4, 5), (1, 3, 9, 5)]),
        (3, [(1, 2, 3, 17), (1, 2, 3, 1)]),
        (0, [(1, 4), (3, 4)]),
    ],
)
def test_concat_matches_numpy(run_graph, axis, shapes) -> None:
    b = GraphBuilder("cat", shapes[0])
    names = [b.input] + [b.add_input(f"in{i}", s) for i, s in enumerate(shapes[1:])]
    graph = b.build(b.concat(names, axis=axis, name="cat"))
    rng = np.random.default_rng(0)
    feeds = {n: rng.standard_normal(s).astype(np.float32) for n, s in zip(names, shapes, strict=True)}
    r = run_graph(graph, feeds)
    assert [k.name for k in r.runner.plan] == [f"cat#{i}" for i in range(len(shapes))]
    np.testing.assert_array_equal(r.out, np.concatenate([feeds[n] for n in names], axis=axis))


@pytest.mark.parametrize(
    "shape,axis,sizes", [((2, 7, 3, 5), 1, [3, 4]), ((1, 6, 5, 9), 3, [2, 2, 5]), ((3, 10), 1, [1, 9])]
)
def test_split_matches_numpy(run_graph, shape, axis, sizes) -> None:
    graph = one_op(shape, lambda b, x: b.split(x, sizes, axis=axis, name="split"))
    r = run_graph(graph)
    assert [k.kernel for k in r.runner.plan] == ["copy_slice"] * len(sizes)
    pieces = np.split(r.x, np.cumsum(sizes)[:-1], axis=axis)
    for t, want in zip(graph.outputs, pieces, strict=True):
        np.testing.assert_array_equal(r.outputs[t], want)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize(
    "shape,pads",
    [((1, 3, 5, 6), [0, 0, 1, 2, 0, 1, 2, 1]), ((2, 4, 3, 3), [0, 1, 0, 2, 1, 0, 2, 0]), ((4, 5), [1, 2, 2, 1])],
)
def test_pad_matches_numpy(run_graph, mode, shape, pads) -> None:
    value = 1.5 if mode == "constant" else 0.0
    r = run_graph(one_op(shape, lambda b, x: b.op("pad", [x], name="pad", pads=pads, mode=mode, value=value)))
    rank = len(shape)
    widths = [(pads[i], pads[i + rank]) for i in range(rank)]
    kwargs = {"constant_values": value} if mode == "constant" else {}
    np.testing.assert_array_equal(r.out, np.pad(r.x, widths, mode=mode, **kwargs))


@pytest.mark.parametrize("shape,groups", [((1, 12, 5, 7), 3), ((2, 8, 4, 4), 2), ((1, 6, 1, 1), 6)])
def test_channel_shuffle_matches_numpy(run_graph, shape, groups) -> None:
    r = run_graph(one_op(shape, lambda b, x: b.shuffle(x, groups, name="shuffle")))
    assert [k.kernel for k in r.runner.plan] == ["channel_shuffle"]
    np.testing.assert_array_equal(r.out, ref.channel_shuffle(r.x, groups))


@pytest.mark.parametrize("shape,perm", [((2, 3, 4, 5), [0, 2, 3, 1]), ((3, 4, 5), [2, 0, 1]), ((6, 7), [1, 0])])
def test_transpose_matches_numpy(run_graph, shape, perm) -> None:
    r = run_graph(one_op(shape, lambda b, x: b.op("transpose", [x], name="t", perm=perm)))
    np.testing.assert_array_equal(r.out, np.transpose(r.x, perm))


def test_views_share_buffers_and_a_view_of_an_input_is_copied(run_graph) -> None:
    def build(b, x):
        v = b.reshape(x, [2, 15, 4], name="view_of_input")  # reads a graph input: one copy kernel
        y = b.relu(v, name="relu")
        return b.flatten(b.reshape(y, [2, 60], name="view1"), name="view2")  # aliases: no kernel

    r = run_graph(one_op((2, 3, 5, 4), build))
    assert [(k.kernel, k.ops) for k in r.runner.plan] == [("copy_slice", ("view_of_input",)), ("activation", ("relu",))]
    np.testing.assert_array_equal(r.out, np.maximum(r.x, 0).reshape(2, 60))


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize(
    "shape,size",
    [((1, 2, 5, 7), [11, 16]), ((2, 3, 9, 8), [4, 3]), ((1, 1, 1, 1), [3, 2]), ((1, 2, 17, 17), [129, 129])],
)
def test_resize_matches_numpy(run_graph, mode, align, shape, size) -> None:
    r = run_graph(one_op(shape, lambda b, x: b.resize(x, size, mode=mode, align_corners=align, name="resize")))
    assert [k.kernel for k in r.runner.plan] == ["resize"]
    assert_close(r.out, ref.resize(r.x, size, mode, align), rtol=1e-5)
