"""The convolutions' register tiles: the budget a device gets from its queries, the per-layer
choice of vectors x output channels, and the read slack the runner allocates (checked against
every address the kernels can load, enumerated)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from devicelab.backends.opencl.plan import kernels_for_graph
from devicelab.backends.opencl.tiling import CONV_KERNELS, MAX_PIXEL_VECTORS, KernelConfig, balanced, pixel_tile
from devicelab.graph import zoo
from tests.devicelab.backends.opencl.conftest import one_op


def test_budget_follows_the_device(found) -> None:
    cpu = dataclasses.replace(found.limits, device_type="cpu", compute_units=2, wave_size=8)
    avx512 = KernelConfig.for_device(dataclasses.replace(cpu, preferred_vector_width_float=16))
    avx2 = KernelConfig.for_device(dataclasses.replace(cpu, preferred_vector_width_float=8))
    assert (avx512.vector_width, avx512.accumulators, avx512.min_items) == (16, 24, 16)
    assert (avx2.vector_width, avx2.accumulators) == (8, 12)
    gpu = KernelConfig.for_device(
        dataclasses.replace(
            found.limits, device_type="gpu", preferred_vector_width_float=1, compute_units=20, wave_size=32
        )
    )
    assert (gpu.vector_width, gpu.accumulators, gpu.min_items) == (4, 8, 640)


@pytest.mark.parametrize(
    "pixels,channels,want",
    [
        (56 * 56, 24, (4, 6)),  # big planes: four vectors of pixels, six channels
        (14 * 14, 576, (2, 12)),  # 196 pixels: two vectors waste 12.5 %, four would waste 23 %
        (7 * 7, 1280, (4, 6)),  # 49 pixels: one tile of four vectors per plane
        (1, 1000, (1, 24)),  # one pixel: all the budget goes to channels
        (56 * 56, 5, (4, 5)),  # few channels: the block is the channel count
    ],
)
def test_pointwise_tile_wastes_few_lanes(pixels: int, channels: int, want: tuple[int, int]) -> None:
    cfg = KernelConfig(vector_width=16, accumulators=24)
    assert pixel_tile(pixels, channels, 1, cfg, 16) == want


def test_pointwise_tile_keeps_a_device_busy() -> None:
    """With thousands of work-items wanted (a GPU), a small layer gets smaller tiles."""
    small = KernelConfig(vector_width=4, accumulators=24, min_items=1)
    wide = dataclasses.replace(small, min_items=4096)
    nv_s, ocb_s = pixel_tile(14 * 14, 96, 1, small, 4)
    nv_w, ocb_w = pixel_tile(14 * 14, 96, 1, wide, 4)
    assert nv_w * ocb_w < nv_s * ocb_s


@pytest.mark.parametrize(
    "count,cap,multiple,want",
    [(24, 16, 1, 12), (64, 16, 1, 16), (40, 16, 4, 16), (10, 16, 4, 12), (5, 16, 4, 5), (3, 16, 4, 3), (7, 4, 1, 4)],
)
def test_balanced_blocks(count: int, cap: int, multiple: int, want: int) -> None:
    assert balanced(count, cap, multiple) == want


@pytest.mark.parametrize("name", ["mobilenet_v2", "inception_v3", "deeplab_v3_mnv2", "resnet_v2_50"])
def test_zoo_tiles_stay_within_the_budget(found, name: str) -> None:
    cfg = KernelConfig.for_device(found.limits)
    for k in kernels_for_graph(zoo.build(name), found.limits):
        if k.kernel in CONV_KERNELS or k.kernel == "pool2d":
            nv, ocb = k.attrs["pixel_vectors"], k.attrs["out_channels_per_item"]
            assert 1 <= nv <= MAX_PIXEL_VECTORS and ocb >= 1
            # depthwise and pooling run their channels one after the other: NV accumulators
            # live, or RB for the row-tiled ones (their vectors run one after the other too)
            if k.kernel.startswith(("depthwise", "pool")):
                live = k.attrs.get("rows_per_item", nv)
            else:
                live = nv * ocb
            assert live <= cfg.accumulators, (k.name, nv, ocb)


# ---------------------------------------------------------------------------------------------
# Read slack: every element a kernel's vector loads can touch, enumerated on small shapes


def _flat_reads(n: int, cin: int, ih: int, iw: int, oh: int, a: dict, t: dict, nblk_groups: int) -> int:
    """The largest input index a ``_flat`` / ``1x1`` kernel loads (lanes included)."""
    vw, nv = t["vector_width"], t["pixel_vectors"]
    kh, kw = a.get("kernel", [1, 1])
    pt, pl = (a["pads"][0], a["pads"][1]) if "pads" in a else (0, 0)
    dh, dw = a.get("dilation", [1, 1])
    plane, hw = ih * iw, oh * iw
    tiles = -(-hw // (nv * vw))
    p0 = np.arange(tiles)[:, None] * nv * vw + np.arange(nv * vw)[None, :]
    taps = np.array([ky * dh * iw + kx * dw for ky in range(kh) for kx in range(kw)])
    last_plane = (n * cin - 1) * plane  # the group / channel whose plane comes last
    return int(last_plane + (p0[..., None] - pt * iw - pl + taps).max())


def _row_reads(n: int, cin: int, ih: int, iw: int, ow: int, a: dict, t: dict) -> int:
    """The largest input index a row-tiled kernel loads (a stride-2 load reads two vectors)."""
    vw, nv, sw = t["vector_width"], t["pixel_vectors"], t["stride_w"]
    kw = a["kernel"][1]
    pl = a["pads"][1]
    dw = a.get("dilation", [1, 1])[1]
    xtiles = -(-ow // (nv * vw))
    ox0 = (xtiles - 1) * nv * vw
    off = (n * cin - 1) * ih * iw + (ih - 1) * iw + ox0 * sw - pl + (kw - 1) * dw + (nv - 1) * vw * sw
    return off + (2 * vw - 1 if sw == 2 else (vw - 1) * sw)


SLACK_CASES = [
    ("flat", (1, 5, 9, 11), lambda b, x: b.conv(x, 7, 3, pad="same")),
    ("flat_dilated", (2, 4, 7, 10), lambda b, x: b.conv(x, 6, (3, 5), dilation=(2, 1), pad=[2, 1, 2, 3])),
    ("flat_tall", (1, 3, 4, 6), lambda b, x: b.conv(x, 6, (7, 1), pad=[3, 0, 3, 0])),
    ("pointwise", (1, 13, 5, 7), lambda b, x: b.conv(x, 9, 1)),
    ("dw_flat", (2, 13, 6, 7), lambda b, x: b.dwconv(x, 5, pad="same")),
    ("rows_s2", (1, 3, 37, 35), lambda b, x: b.conv(x, 8, 3, stride=2, pad="same_tf")),
    ("rows_s3", (1, 3, 11, 20), lambda b, x: b.conv(x, 5, 3, stride=3, pad=1)),
    ("rows_valid", (2, 4, 9, 12), lambda b, x: b.conv(x, 7, 3, pad=0)),
    ("dw_rows_s2", (1, 3, 9, 70), lambda b, x: b.dwconv(x, 3, stride=2, pad=[1, 0, 1, 2])),
    ("pool_s2", (1, 5, 11, 9), lambda b, x: b.max_pool(x, 3, stride=2, pad=1)),
]


@pytest.mark.parametrize("case", SLACK_CASES, ids=[c[0] for c in SLACK_CASES])
@pytest.mark.parametrize("vw,nv", [(16, 0), (4, 3), (8, 4)])
def test_overread_covers_every_load(found, case, vw: int, nv: int) -> None:
    _, shape, build = case
    graph = one_op(shape, build)
    cfg = dataclasses.replace(KernelConfig.for_device(found.limits), vector_width=vw, pixel_vectors=nv)
    (k,) = kernels_for_graph(graph, found.limits, cfg)
    op = graph.op(k.anchor)
    n, cin, ih, iw = shape
    ys = graph.tensors[op.outputs[0]].shape
    if k.kernel in ("conv2d_flat", "conv2d_1x1", "depthwise_conv2d_flat"):
        last = _flat_reads(n, cin, ih, iw, ys[2], op.attrs, k.attrs, 1)
    else:
        last = _row_reads(n, cin, ih, iw, ys[3], op.attrs, k.attrs)
    numel = n * cin * ih * iw
    assert last - (numel - 1) <= k.attrs["overread"], (k.kernel, k.attrs)


def test_runner_buffers_carry_the_plans_slack(run_graph) -> None:
    r = run_graph(one_op((1, 5, 9, 11), lambda b, x: b.relu(b.conv(x, 7, 3, pad="same", name="conv"))))
    assert r.runner.slack == max(k.attrs.get("overread", 0) for k in r.runner.plan) > 0
