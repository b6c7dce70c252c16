"""Pooling kernels against numpy: max and average windows with stride 1, 2 and 3, asymmetric
padding, ceil mode and count_include_pad, odd sizes, rows wider than a tile, plane counts off the
block; global average and max pooling."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.backends.opencl.tiling import KernelConfig
from tests.devicelab.backends.opencl import reference as ref
from tests.devicelab.backends.opencl.conftest import assert_close, one_op

CASES = [
    ("max_3x3_s2", "max", (1, 5, 11, 9), dict(kernel=3, stride=2, pad=1)),
    ("max_ceil", "max", (2, 3, 10, 7), dict(kernel=3, stride=2, pad=0, ceil_mode=True)),
    ("max_asym", "max", (1, 4, 7, 8), dict(kernel=(2, 3), stride=(1, 2), pad=[0, 1, 1, 2])),
    ("avg_exclude_pad", "avg", (1, 6, 9, 9), dict(kernel=3, stride=1, pad=1)),
    ("avg_include_pad", "avg", (1, 6, 9, 9), dict(kernel=3, stride=1, pad=1, count_include_pad=True)),
    (
        "avg_ceil_include_pad",
        "avg",
        (1, 3, 10, 11),
        dict(kernel=3, stride=2, pad=1, ceil_mode=True, count_include_pad=True),
    ),
    ("avg_1x1_window", "avg", (1, 5, 6, 6), dict(kernel=1, stride=2)),
    ("one_pixel", "max", (1, 3, 1, 1), dict(kernel=1, stride=1)),
    ("max_s1_wide_rows", "max", (1, 7, 5, 40), dict(kernel=3, stride=1, pad=1)),
    ("avg_s3_batch2", "avg", (2, 5, 10, 31), dict(kernel=3, stride=3, pad=1)),
    ("max_k5_plane_tail", "max", (1, 13, 20, 37), dict(kernel=5, stride=2, pad=2)),
    (
        "avg_include_pad_wide",
        "avg",
        (1, 3, 6, 70),
        dict(kernel=(2, 3), stride=2, pad=[1, 1, 1, 1], count_include_pad=True),
    ),
    # stride 2 on odd widths and heights (the row's last vector overlaps its neighbour, the last
    # row block runs past the output), a window of two (odd columns of the same span)
    ("max_2x2_s2_odd", "max", (1, 5, 15, 31), dict(kernel=2, stride=2)),
    ("max_3x3_s2_wide_batch2", "max", (2, 3, 29, 67), dict(kernel=3, stride=2, pad=1)),
    ("avg_3x3_s2_tall", "avg", (2, 3, 29, 23), dict(kernel=3, stride=2, pad=1)),
    (
        "avg_s2_include_pad_asym",
        "avg",
        (1, 4, 17, 45),
        dict(kernel=3, stride=2, pad=[0, 1, 1, 0], count_include_pad=True),
    ),
]


@pytest.mark.parametrize(
    "config",
    [
        None,
        KernelConfig(vector_width=4, pixel_vectors=3, out_channels_per_item=5, rows_per_item=3),
        KernelConfig(vector_width=16, pixel_vectors=2, out_channels_per_item=2, rows_per_item=1),
    ],
    ids=["device", "vw4-nv3-ocb5-rb3", "vw16-nv2-ocb2-rb1"],
)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_pool_matches_numpy(run_graph, case, config) -> None:
    """With the device's tiling and with others (narrow vectors, three per row tile, planes in
    blocks of five, so a block runs past the last plane, row blocks of three; one row a tile)."""
    _, kind, shape, kwargs = case
    method = "max_pool" if kind == "max" else "avg_pool"
    r = run_graph(one_op(shape, lambda b, x: getattr(b, method)(x, name="pool", **kwargs)), config=config)
    assert [k.kernel for k in r.runner.plan] == ["pool2d"]
    a = r.graph.op("pool").attrs
    want = ref.pool2d(
        r.x, kind, a["kernel"], a["stride"], a["pads"], r.out.shape[2:], a.get("count_include_pad", False)
    )
    assert_close(r.out, want)


@pytest.mark.parametrize("op,reduce", [("global_avg_pool", np.mean), ("global_max_pool", np.max)])
@pytest.mark.parametrize("shape", [(2, 5, 7, 9), (1, 3, 1, 1), (1, 4, 16, 16), (1, 2, 33, 1)])
def test_global_pool_matches_numpy(run_graph, op, reduce, shape) -> None:
    r = run_graph(one_op(shape, lambda b, x: b.op(op, [x], name="gp")))
    assert [k.kernel for k in r.runner.plan] == ["global_pool"]
    assert_close(r.out, reduce(r.x.astype(np.float64), axis=(2, 3), keepdims=True))
