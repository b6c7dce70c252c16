"""The OpenCL backend's fusion rule and kernel plan: which operators share a kernel, which kernel
runs each operator, work sizes, and work-group sizes chosen from device limits."""

from __future__ import annotations

import dataclasses
import json

import pytest

from devicelab.backends.opencl.plan import PlanError, broadcast_layout, kernels_for_graph, view_owner
from devicelab.backends.opencl.tiling import CONV_KERNELS, KernelConfig, choose_local_size
from devicelab.graph import zoo
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Operator
from tests.devicelab.backends.opencl.conftest import one_op


def _kernels(graph, **kw):
    return [(k.kernel, k.ops) for k in kernels_for_graph(graph, **kw)]


def test_mobilenet_v2_fuses_conv_bn_relu6_and_covers_every_operator_once() -> None:
    graph = zoo.build("mobilenet_v2")
    plan = kernels_for_graph(graph, config=KernelConfig(vector_width=16))  # 7-wide rows run flat
    assert len(plan) == 35 + 17 + 10 + 1 + 1  # convs, depthwise, adds, pool, classifier
    covered = [o for k in plan for o in k.ops]
    assert len(covered) == len(set(covered))
    views = view_owner(graph, plan)
    assert set(covered) | set(views) == {o.name for o in graph.operators}
    assert views == {"flatten_0": "global_avg_pool_0"}
    fused = [k.op_types for k in plan if k.kernel in CONV_KERNELS]
    assert fused.count(("conv2d", "batch_norm", "relu6")) == 18  # stem, expansions, head
    assert fused.count(("depthwise_conv2d", "batch_norm", "relu6")) == 17
    assert fused.count(("conv2d", "batch_norm")) == 17  # linear bottleneck projections
    assert {k.kernel for k in plan} == {
        "conv2d",  # the stride-2 stem
        "conv2d_1x1",
        "depthwise_conv2d",  # stride 2, and stride 1 on rows that fill half a vector
        "depthwise_conv2d_flat",  # stride 1 on 7-wide rows
        "binary",
        "global_pool",
        "fully_connected",
    }


def test_an_operator_is_absorbed_only_by_its_producers_sole_consumer() -> None:
    def shared(b, x):
        y = b.conv(x, 8, 3, pad="same", name="conv")
        return b.add(b.relu(b.bn(y, name="bn"), name="relu"), y, name="add")

    assert _kernels(one_op((1, 4, 8, 8), shared)) == [
        ("conv2d_flat", ("conv",)),
        ("scale_shift", ("bn", "relu")),
        ("binary", ("add",)),
    ]

    b = GraphBuilder("out", (1, 4, 8, 8))
    y = b.conv(b.input, 8, 1, name="conv")
    graph = b.build([y, b.relu(y, name="relu")])  # the conv output is a graph output
    assert _kernels(graph) == [("conv2d_1x1", ("conv",)), ("activation", ("relu",))]


def test_batch_norm_folds_into_fc_only_on_2d_outputs() -> None:
    two_d = one_op((2, 16), lambda b, x: b.relu(b.bn(b.fc(x, 8, name="fc"), name="bn"), name="relu"))
    assert _kernels(two_d) == [("fully_connected", ("fc", "bn", "relu"))]
    three_d = one_op((2, 8, 16), lambda b, x: b.relu(b.bn(b.fc(x, 8, name="fc"), name="bn"), name="relu"))
    assert _kernels(three_d) == [("fully_connected", ("fc",)), ("scale_shift", ("bn", "relu"))]


def test_pooling_absorbs_nothing_and_activations_follow_only_anchors() -> None:
    graph = one_op((1, 3, 8, 8), lambda b, x: b.relu(b.max_pool(x, 2, name="pool"), name="relu"))
    assert _kernels(graph) == [("pool2d", ("pool",)), ("activation", ("relu",))]


def test_kernel_choice_for_convolutions() -> None:
    def convs(b, x):
        y = b.conv(x, 12, 3, groups=6, pad="same", name="grouped_as_dw")
        y = b.conv(y, 12, 1, name="pointwise")
        y = b.conv(y, 12, 1, stride=2, name="strided_1x1")
        y = b.conv(y, 12, 3, groups=3, pad="same", name="grouped")
        return b.dwconv(y, 3, name="dw")

    wide = KernelConfig(vector_width=16)  # 9-wide rows fill half a vector of 16: row-tiled depthwise
    assert [k for k, _ in _kernels(one_op((1, 6, 9, 9), convs), config=wide)] == [
        "depthwise_conv2d",
        "conv2d_1x1",
        "conv2d",
        "conv2d_flat",
        "depthwise_conv2d_flat",  # after the stride-2 1x1: 5-wide rows
    ]
    narrow = one_op((1, 6, 7, 7), convs)  # 7-wide rows would fill 4 of 16 lanes: flat
    assert [k for k, _ in _kernels(narrow, config=wide)][::4] == ["depthwise_conv2d_flat"] * 2
    assert [k for k, _ in _kernels(narrow, config=KernelConfig(vector_width=8))][::4] == ["depthwise_conv2d"] * 2

    def rows(b, x):
        y = b.conv(x, 8, 3, pad=0, name="valid")  # stride 1, but 7 columns out of 9
        y = b.dwconv(y, 3, stride=2, name="dw_s2")
        return b.conv(y, 8, (1, 3), stride=(2, 1), pad=[0, 1, 0, 1], name="s2_rows")  # rows as wide, stride 2

    assert [k for k, _ in _kernels(one_op((1, 6, 9, 9), rows))] == ["conv2d", "depthwise_conv2d", "conv2d"]


def test_concat_and_split_run_one_copy_per_part() -> None:
    def build(b, x):
        parts = b.split(x, [2, 3, 1], name="split")
        return b.concat([parts[2], parts[0]], name="cat")

    plan = kernels_for_graph(one_op((1, 6, 4, 4), build))
    assert [(k.name, k.kernel, k.part) for k in plan] == [
        ("split#0", "copy_slice", 0),
        ("split#1", "copy_slice", 1),
        ("split#2", "copy_slice", 2),
        ("cat#0", "copy_slice", 0),
        ("cat#1", "copy_slice", 1),
    ]
    assert [k.global_size for k in plan] == [(8, 1), (12, 1), (4, 1), (4, 1), (8, 1)]  # ceil(part*16 / 4)


def test_global_sizes_follow_the_tiling(found) -> None:
    graph = one_op((1, 24, 56, 56), lambda b, x: b.conv(x, 144, 1, name="pw"))
    for vw, nv, ocb in [(4, 1, 8), (16, 3, 8), (8, 4, 5)]:
        config = KernelConfig(vector_width=vw, pixel_vectors=nv, out_channels_per_item=ocb)
        (k,) = kernels_for_graph(graph, config=config)
        assert k.global_size == (-(-56 * 56 // (nv * vw)), -(-144 // ocb))
        assert (k.attrs["pixel_vectors"], k.attrs["out_channels_per_item"]) == (nv, ocb)
        assert k.attrs["variant"] == f"{vw}-nv{nv}-ocb{ocb}"
        assert k.local_size is None and k.launch_size == k.global_size
    (k,) = kernels_for_graph(graph, found.limits)
    vw = KernelConfig.for_device(found.limits).vector_width
    assert k.global_size[0] == -(-56 * 56 // (vw * k.attrs["pixel_vectors"]))
    assert k.local_size is not None
    assert all(n % loc == 0 and n >= g for n, loc, g in zip(k.launch_size, k.local_size, k.global_size, strict=True))
    json.dumps(k.as_dict())


def test_vector_width_follows_the_device_preference(found) -> None:
    for preferred, want in [(1, 4), (4, 4), (8, 8), (16, 16), (32, 16), (6, 4)]:
        limits = dataclasses.replace(found.limits, preferred_vector_width_float=preferred)
        assert KernelConfig.for_device(limits).vector_width == want


@pytest.mark.parametrize("global_size", [(1, 1), (3, 7), (196, 18), (4, 160), (3136, 1), (1, 5000), (97, 3)])
@pytest.mark.parametrize("wave,max_group,units", [(8, 4096, 2), (32, 256, 16), (64, 1024, 2), (8, 4, 1)])
def test_local_size_respects_the_device(global_size, wave, max_group, units) -> None:
    l0, l1 = choose_local_size(global_size, wave, max_group, (max_group, max_group, 64), units)
    assert l0 >= 1 and l1 >= 1 and l0 * l1 <= max_group
    assert l0 & (l0 - 1) == 0 and l1 & (l1 - 1) == 0  # powers of two: few distinct work-group shapes
    assert l0 * l1 <= 4 * wave
    if global_size[0] * global_size[1] >= min(wave, max_group):
        assert l0 * l1 >= min(wave, max_group), "a work-group holds at least one wave when there is work for it"


def test_local_size_keeps_every_compute_unit_busy() -> None:
    l0, l1 = choose_local_size((4096, 1), 8, 4096, (4096, 4096), compute_units=8)
    assert -(-4096 // l0) >= 4 * 8


def test_broadcast_layout_merges_axes() -> None:
    op = Operator("x", "mul", [], [])
    assert broadcast_layout((2, 5, 7, 9), (2, 5, 7, 9), (2, 5, 7, 9), op) == (
        (1, 1, 1, 630),
        (0, 0, 0, 1),
        (0, 0, 0, 1),
    )
    assert broadcast_layout((1, 6, 5, 7), (1, 6, 5, 7), (1, 6, 1, 1), op) == (
        (1, 1, 6, 35),
        (0, 0, 35, 1),
        (0, 0, 1, 0),
    )
    assert broadcast_layout((2, 3, 4, 5), (2, 1, 4, 5), (1, 3, 1, 5), op) == ((2, 3, 4, 5), (20, 0, 5, 1), (0, 5, 0, 1))
    with pytest.raises(PlanError, match="axes"):
        broadcast_layout((2, 2, 2, 2, 2), (2, 1, 2, 1, 2), (1, 2, 1, 2, 1), op)


def test_non_float_graphs_are_refused_with_the_operator_named() -> None:
    b = GraphBuilder("ints", (1, 4), dtype="int32")
    graph = b.build(b.op("add", [b.input], name="plus", const_shape=[1], const_value=1))
    with pytest.raises(PlanError, match="int32"):
        kernels_for_graph(graph)


def test_planning_leaves_the_callers_graph_alone() -> None:
    graph = zoo.build("squeezenet_1_1")
    before = [(o.name, dict(o.attrs)) for o in graph.operators]
    kernels_for_graph(graph)
    assert [(o.name, dict(o.attrs)) for o in graph.operators] == before
