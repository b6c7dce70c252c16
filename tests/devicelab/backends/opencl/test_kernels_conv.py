"""Convolution kernels (conv2d, conv2d_flat, conv2d_1x1, depthwise_conv2d, depthwise_conv2d_flat)
against numpy, on awkward shapes: channel counts off the vector and block sizes, odd spatial
sizes, one-column and one-pixel inputs, stride 2 and 3, asymmetric padding, groups, dilation,
channel multipliers, batches of two; with the device's tiling and with fixed other tilings (vector
widths 4/8/16, 1-4 vectors per work-item, odd channel blocks); and with batch norm and every
activation fused. Each case's first tile starts in the padding before the tensor, so the
lane-by-lane load path is exercised too."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from devicelab.backends.opencl.tiling import KernelConfig
from tests.devicelab.backends.opencl import reference as ref
from tests.devicelab.backends.opencl.conftest import assert_close, one_op

CONV_CASES: list[tuple[str, tuple[int, ...], dict[str, Any], str]] = [
    # stride 1, output rows as wide as the input's: the flat kernel
    ("odd_sizes", (1, 5, 9, 11), dict(out_channels=7, kernel=3, pad="same"), "conv2d_flat"),
    ("wide_rows", (1, 4, 5, 41), dict(out_channels=9, kernel=3, pad="same", bias=True), "conv2d_flat"),
    ("one_pixel_input", (1, 3, 1, 1), dict(out_channels=5, kernel=3, pad=1), "conv2d_flat"),
    ("one_column", (1, 3, 9, 1), dict(out_channels=4, kernel=3, pad="same"), "conv2d_flat"),
    (
        "flat_asym_dilated_groups",
        (1, 8, 7, 10),
        dict(out_channels=12, kernel=(3, 5), dilation=(2, 1), pad=[2, 1, 2, 3], groups=2),
        "conv2d_flat",
    ),
    ("flat_k5_batch2", (2, 6, 6, 13), dict(out_channels=10, kernel=5, pad="same", bias=True), "conv2d_flat"),
    ("flat_1x7", (1, 5, 6, 9), dict(out_channels=6, kernel=(1, 7), pad=[0, 3, 0, 3]), "conv2d_flat"),
    ("flat_7x1_tall_pad", (1, 5, 4, 6), dict(out_channels=6, kernel=(7, 1), pad=[3, 0, 3, 0]), "conv2d_flat"),
    # everything else: row tiles (stride 1 with narrower outputs, stride 2, stride 3)
    (
        "stride2_asym_groups",
        (2, 6, 13, 10),
        dict(out_channels=10, kernel=3, stride=2, pad=[0, 1, 2, 1], groups=2),
        "conv2d",
    ),
    (
        "dilated_rect_groups4",
        (1, 8, 7, 9),
        dict(out_channels=12, kernel=(3, 5), stride=(1, 2), dilation=2, pad=[2, 4, 2, 4], groups=4),
        "conv2d",
    ),
    ("stem_same_tf", (1, 3, 37, 35), dict(out_channels=32, kernel=3, stride=2, pad="same_tf", bias=True), "conv2d"),
    ("k7_stride2", (1, 3, 30, 29), dict(out_channels=8, kernel=7, stride=2, pad=3), "conv2d"),
    ("1x1_strided", (1, 6, 9, 9), dict(out_channels=4, kernel=1, stride=2, pad=0), "conv2d"),
    ("valid_stride1", (1, 4, 9, 12), dict(out_channels=7, kernel=3, pad=0, bias=True), "conv2d"),
    ("stride3", (1, 3, 11, 20), dict(out_channels=5, kernel=3, stride=3, pad=1), "conv2d"),
    ("wide_stride2", (2, 3, 7, 75), dict(out_channels=6, kernel=3, stride=2, pad="same"), "conv2d"),
    # pointwise
    ("pw_odd", (1, 13, 5, 7), dict(out_channels=9, kernel=1), "conv2d_1x1"),
    ("pw_groups", (2, 12, 4, 4), dict(out_channels=20, kernel=1, groups=4, bias=True), "conv2d_1x1"),
    ("pw_one_pixel", (1, 7, 1, 1), dict(out_channels=5, kernel=1), "conv2d_1x1"),
    ("pw_wide", (1, 24, 17, 17), dict(out_channels=36, kernel=1, bias=True), "conv2d_1x1"),
    ("pw_channel_tail", (1, 40, 3, 5), dict(out_channels=53, kernel=1), "conv2d_1x1"),
    (
        "grouped_as_depthwise",
        (1, 6, 8, 9),
        dict(out_channels=12, kernel=3, groups=6, pad="same", bias=True),
        "depthwise_conv2d",  # 9-wide rows fill half of any vector up to 16: row-tiled
    ),
]


@pytest.mark.parametrize("case", CONV_CASES, ids=[c[0] for c in CONV_CASES])
def test_conv_matches_numpy(run_graph, case) -> None:
    _, shape, kwargs, kernel = case
    r = run_graph(one_op(shape, lambda b, x: b.conv(x, name="conv", **kwargs)))
    assert [k.kernel for k in r.runner.plan] == [kernel]
    _check_conv(r)


def _check_conv(r) -> None:
    a = r.graph.op("conv").attrs
    w = r.weights["conv"]
    want = ref.conv2d(r.x, w["weight"], w.get("bias"), a["stride"], a["pads"], a["dilation"], a["groups"])
    assert_close(r.out, want)


# the last field: the kernel that runs the case with vectors of 16 (stride-1 rows shorter than 8
# run flat, every other depthwise convolution row-tiled)
DW_CASES: list[tuple[str, tuple[int, ...], dict[str, Any], str]] = [
    ("odd_sizes", (1, 5, 9, 11), dict(kernel=3, pad="same"), "depthwise_conv2d"),
    (
        "multiplier_dilation",
        (1, 4, 7, 7),
        dict(kernel=3, multiplier=2, dilation=2, pad="same"),
        "depthwise_conv2d_flat",
    ),
    ("one_pixel_input", (1, 3, 1, 1), dict(kernel=3, pad=1), "depthwise_conv2d_flat"),
    ("wide_rows", (1, 3, 6, 45), dict(kernel=3, pad="same", bias=True), "depthwise_conv2d"),
    ("channel_tail_batch2", (2, 13, 6, 7), dict(kernel=5, pad="same", bias=True), "depthwise_conv2d_flat"),
    ("asym_pad", (1, 7, 5, 8), dict(kernel=(3, 5), pad=[0, 1, 2, 3]), "depthwise_conv2d"),
    ("asym_pad_narrow", (1, 7, 5, 6), dict(kernel=(3, 5), pad=[0, 1, 2, 3]), "depthwise_conv2d_flat"),
    ("k5_stride2_asym", (2, 6, 12, 13), dict(kernel=5, stride=2, pad=[1, 2, 2, 1], bias=True), "depthwise_conv2d"),
    ("stride2_even", (1, 16, 14, 14), dict(kernel=3, stride=2, pad="same_tf"), "depthwise_conv2d"),
    (
        "stride2_wide",
        (1, 3, 9, 70),
        dict(kernel=3, stride=2, pad=[1, 0, 1, 2]),
        "depthwise_conv2d",
    ),  # every lane stored
    ("stride3", (1, 2, 10, 40), dict(kernel=3, stride=3, pad=1), "depthwise_conv2d"),
    ("multiplier_stride2", (1, 3, 9, 10), dict(kernel=3, stride=2, multiplier=3, pad=1), "depthwise_conv2d"),
    ("valid_stride1_batch2", (2, 5, 8, 9), dict(kernel=3, pad=0), "depthwise_conv2d"),
    # stride 2 on odd widths: the last vector of a row overlaps its neighbour; rows off the block
    ("stride2_odd_width", (1, 5, 13, 61), dict(kernel=3, stride=2, pad=1, bias=True), "depthwise_conv2d"),
    ("stride2_no_left_pad", (2, 3, 11, 35), dict(kernel=3, stride=2, pad=[0, 0, 1, 1]), "depthwise_conv2d"),
    ("stride2_k5_odd_rows", (1, 4, 23, 37), dict(kernel=5, stride=2, pad=2), "depthwise_conv2d"),
    ("stride2_dilation3", (1, 3, 15, 41), dict(kernel=3, stride=2, dilation=3, pad=3), "depthwise_conv2d"),
    ("stride_2x1", (1, 3, 12, 21), dict(kernel=3, stride=(2, 1), pad=1), "depthwise_conv2d"),
    ("stride2_one_pixel", (1, 3, 1, 1), dict(kernel=3, stride=2, pad=1), "depthwise_conv2d"),
    ("stride1_tall_rows_off_block", (1, 6, 31, 17), dict(kernel=3, pad="same", bias=True), "depthwise_conv2d"),
]


@pytest.mark.parametrize("device_tiling", [False, True], ids=["vw16", "device"])
@pytest.mark.parametrize("case", DW_CASES, ids=[c[0] for c in DW_CASES])
def test_depthwise_matches_numpy(run_graph, case, device_tiling: bool) -> None:
    """With vectors of 16 (the kernel choice is asserted) and with the device's own tiling."""
    _, shape, kwargs, kernel = case
    config = None if device_tiling else KernelConfig(vector_width=16)
    r = run_graph(one_op(shape, lambda b, x: b.dwconv(x, name="dw", **kwargs)), config=config)
    if not device_tiling:
        assert [k.kernel for k in r.runner.plan] == [kernel]
    _check_depthwise(r, shape)


def _check_depthwise(r, shape) -> None:
    a = r.graph.op("dw").attrs
    w = r.weights["dw"]
    want = ref.conv2d(r.x, w["weight"], w.get("bias"), a["stride"], a["pads"], a["dilation"], shape[1])
    assert_close(r.out, want)


@pytest.mark.parametrize(
    "vector_width,nv,ocb,rb",
    [(4, 3, 5, 2), (8, 2, 3, 3), (16, 4, 7, 1)],
    ids=["vw4-nv3-ocb5-rb2", "vw8-nv2-ocb3-rb3", "vw16-nv4-ocb7-rb1"],
)
def test_other_tilings_compute_the_same(run_graph, vector_width: int, nv: int, ocb: int, rb: int) -> None:
    """The tiling follows the device (GPUs get narrower vectors and fewer accumulators) and the
    layer: every vector width, vector count, row block and channel block must be right, tails
    included."""
    config = KernelConfig(
        vector_width=vector_width,
        pixel_vectors=nv,
        out_channels_per_item=ocb,
        conv_out_channels_per_item=ocb,
        rows_per_item=rb,
    )
    for _, shape, kwargs, _kernel in CONV_CASES:
        r = run_graph(one_op(shape, lambda b, x, kw=kwargs: b.conv(x, name="conv", **kw)), config=config)
        assert r.runner.config == config
        assert {(k.attrs["pixel_vectors"], k.attrs["out_channels_per_item"]) for k in r.runner.plan} == {(nv, ocb)}
        _check_conv(r)
    for _, shape, kwargs, _kernel in DW_CASES:
        _check_depthwise(
            run_graph(one_op(shape, lambda b, x, kw=kwargs: b.dwconv(x, name="dw", **kw)), config=config), shape
        )


FUSED_ACTS: list[tuple[str, dict[str, Any]]] = [
    ("relu", {}),
    ("relu6", {}),
    ("hard_swish", {}),
    ("hard_sigmoid", {}),
    ("sigmoid", {}),
    ("swish", {}),
    ("tanh", {}),
    ("gelu", {}),
    ("leaky_relu", {"alpha": 0.2}),
    ("elu", {"alpha": 0.7}),
    ("clip", {"min": -0.5, "max": 0.25}),
    ("clip", {"min": None, "max": 0.1}),
]


@pytest.mark.parametrize("act", FUSED_ACTS, ids=[f"{a}-{i}" for i, (a, _) in enumerate(FUSED_ACTS)])
@pytest.mark.parametrize("conv", ["conv2d", "conv2d_flat", "conv2d_1x1", "depthwise_conv2d", "depthwise_conv2d_flat"])
def test_conv_bn_activation_fused(run_graph, conv: str, act: tuple[str, dict[str, Any]]) -> None:
    kind, attrs = act

    def build(b, x):
        if conv.startswith("depthwise"):
            y = b.dwconv(x, 3, stride=1 if conv.endswith("flat") else 2, pad="same", name="conv")
        else:
            k, stride = {"conv2d": (3, 2), "conv2d_flat": (3, 1), "conv2d_1x1": (1, 1)}[conv]
            y = b.conv(x, 10, k, stride=stride, pad="same", name="conv")
        return b.act(b.bn(y, name="bn"), kind, name="act", **attrs)

    # inputs spread wide enough that every activation's thresholds (0, +-3, 6, clip bounds) are crossed
    x = (np.random.default_rng(5).standard_normal((2, 6, 9, 7)) * 6).astype(np.float32)
    # vectors of 16: 7-wide stride-1 depthwise rows run flat (see plan.conv_kernel)
    r = run_graph(one_op((2, 6, 9, 7), build), {"input": x}, config=KernelConfig(vector_width=16))
    assert len(r.runner.plan) == 1
    k = r.runner.plan[0]
    assert (k.kernel, k.ops) == (conv, ("conv", "bn", "act"))
    a = r.graph.op("conv").attrs
    w = r.weights["conv"]
    groups = 6 if conv.startswith("depthwise") else 1
    y = ref.conv2d(r.x, w["weight"], w.get("bias"), a["stride"], a["pads"], a["dilation"], groups)
    y = ref.batch_norm(y, r.weights["bn"], r.graph.op("bn").attrs["epsilon"])
    assert (y > 6).any() and (y < -3).any()
    assert_close(r.out, ref.activation(kind, y, **r.graph.op("act").attrs))


def test_batch_of_two_gives_each_image_its_own_result(run_graph) -> None:
    graph = one_op((2, 5, 8, 8), lambda b, x: b.relu(b.conv(x, 7, 3, pad="same", name="conv")))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 5, 8, 8)).astype(np.float32)
    x[1] = -x[0]  # two different images
    r = run_graph(graph, {"input": x})
    a = r.graph.op("conv").attrs
    want = np.maximum(ref.conv2d(x, r.weights["conv"]["weight"], None, a["stride"], a["pads"], a["dilation"], 1), 0)
    assert_close(r.out, want)
    assert not np.allclose(r.out[0], r.out[1])
