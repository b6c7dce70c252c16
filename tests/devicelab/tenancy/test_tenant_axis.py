"""A kernel with a tenant axis: the source edits, what is refused, and on the device that one
launch computes every tenant's own result, strided and indexed, __local memory included; a
network of steps that are not GEMMs runs space-time bit for bit as each tenant alone."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.tenancy.checks import compare_bitwise
from devicelab.tenancy.network_layers import plan_layers, step_flops
from devicelab.tenancy.network_strategies import NetworkTenants, build_network_strategy
from devicelab.tenancy.programs import BUILDS
from devicelab.tenancy.tenant_axis import TenantAxisError, add_tenant_axis, element_bytes

# Per work-group sums of x * scale[0] through __local memory and a barrier, written by the group's
# first work-item; the group's id along dimension 2 and the number of dimensions are asked too.
GROUP_SUM = """
#define WG 8
__kernel void group_sum(__global const float* x, __constant float* scale, __global float* y, const int n)
{
    __local float part[WG];
    const int i = get_global_id(0);
    const int l = get_local_id(0);
    part[l] = i < n ? x[i] * scale[0] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        float s = 0.0f;
        for (int k = 0; k < WG; ++k) s += part[k];
        y[get_group_id(0)] = s + (float)get_group_id(2) + (float)(get_work_dim() - 2);
    }
}
"""


def test_edits_offset_every_global_pointer_and_pin_dimension_two() -> None:
    k = add_tenant_axis(GROUP_SUM, ("-DUNUSED=1", "-cl-mad-enable"), "group_sum")
    assert [(p.name, p.element_bytes) for p in k.pointers] == [("x", 4), ("scale", 4), ("y", 4)]
    assert k.params == 4 and k.options == ("-cl-mad-enable",)  # the -D went into the text
    assert "ll_ta_x + ll_ta_tenant * ll_ta_x_stride" in k.source
    assert "get_group_id(2)" not in k.source.split("ll_ta_tenant =")[1].split(";", 1)[1]
    assert "((uint)2)" in k.source and "__local float part" in k.source
    assert k.key.startswith("group_sum@tenant_axis#")


@pytest.mark.parametrize(
    ("declaration", "size"),
    [
        ("__global const float* x", 4),
        ("__global half* y", 2),
        ("global const float4* v", 16),
        ("__constant float3* c", 16),
        ("__global uchar* b", 1),
    ],
)
def test_element_sizes(declaration: str, size: int) -> None:
    assert element_bytes(declaration) == size


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("const int d = 1; y[0] = x[get_global_id(d)];", "no constant dimension"),
        ("y[get_global_linear_id()] = x[0];", "spans every tenant"),
    ],
)
def test_refuses_what_it_cannot_keep_per_tenant(body: str, why: str) -> None:
    source = f"__kernel void k(__global const float* x, __global float* y) {{ {body} }}"
    with pytest.raises(TenantAxisError, match=why):
        add_tenant_axis(source, (), "k")


def test_refuses_a_kernel_without_global_pointers() -> None:
    with pytest.raises(TenantAxisError, match="no __global pointer"):
        add_tenant_axis("__kernel void k(const int n, __local float* s) { s[0] = n; }", (), "k")


def test_one_launch_gives_every_tenant_its_own_result_strided_and_indexed(found: FoundDevice) -> None:
    ctx = context_for(found)
    queue = cl.CommandQueue(ctx, found.device)
    axis = add_tenant_axis(GROUP_SUM, (), "group_sum")
    kernel, info = BUILDS.kernel(found, ctx, axis.key, axis.kernel, axis.options, axis.source)
    assert info.max_work_group_size >= 8
    tenants, n, groups = 3, 29, 4  # 29 elements in 4 groups of 8, the last partly idle
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((tenants, 32)).astype(np.float32)
    scales = np.array([[2.0], [-1.0], [0.5]], np.float32)
    mf = cl.mem_flags
    x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=xs)
    scale = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=scales)
    expected = np.stack(
        [(np.where(np.arange(32) < n, xs[t], 0) * scales[t, 0]).reshape(groups, 8).sum(axis=1) for t in range(tenants)]
    )

    def run(index: list[int] | None) -> np.ndarray:
        y = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=np.full((tenants, groups), np.nan, np.float32))
        ids = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=np.array(index or [0], np.int32))
        kernel.set_args(
            x, scale, y, np.int32(n), np.int64(32), np.int64(1), np.int64(groups), ids, np.int32(index is not None)
        )
        count = len(index) if index is not None else tenants
        cl.enqueue_nd_range_kernel(queue, kernel, (32, 1, count), (8, 1, 1))
        out = np.empty((tenants, groups), np.float32)
        cl.enqueue_copy(queue, out, y)
        return out

    strided = run(None)
    np.testing.assert_allclose(strided, expected, rtol=1e-5)
    indexed = run([2, 0])  # tenant 1 is not in the batch: its region stays untouched
    np.testing.assert_allclose(indexed[[0, 2]], expected[[0, 2]], rtol=1e-5)
    assert np.isnan(indexed[1]).all()
    assert np.array_equal(indexed[[0, 2]], strided[[0, 2]])


def no_gemm_network() -> Graph:
    """Steps none of which is a GEMM: depthwise convolutions with batch norm and activations,
    max and average pooling, element-wise add and multiply, a global pool, on an odd-sized image."""
    b = GraphBuilder("no_gemm", (1, 6, 23, 21))
    x = b.relu6(b.bn(b.dwconv(b.input, 3, stride=2)))
    y = b.relu(b.bn(b.dwconv(x, 5, pad="same")))
    z = b.add(x, y)
    p = b.max_pool(z, 3, stride=2, pad=1)
    q = b.mul(p, b.sigmoid(b.avg_pool(p, 3, stride=1, pad=1)))
    return b.build(b.flatten(b.global_avg_pool(q)))


def test_space_time_over_steps_that_are_not_gemms_gives_each_tenants_bits(found: FoundDevice) -> None:
    tenant_count = 3
    first = GraphRunner(found, no_gemm_network(), weight_seed=11)
    plan = plan_layers(first)
    report = plan.as_dict(step_flops(first))
    tenants = NetworkTenants(found, first, tenant_count, seed=11)
    strategy = None
    try:
        assert report["gemm_steps"] == 0 and report["per_tenant_steps"] == 0, plan.steps
        strategy = build_network_strategy("space_time", tenants, plan)
        assert strategy.launches_per_step == len(first.launches)  # one launch per step for all tenants
        references = tenants.exclusive_results()
        assert not np.array_equal(references[0], references[1]), "the tenants have their own weights"
        for first_tenant in (0, 2):
            strategy.step(first_tenant)
            check = compare_bitwise(strategy.outputs(), references)
            assert check["correct"], check
    finally:
        if strategy is not None:
            strategy.release()
        tenants.release()
