"""Network tenants: each strategy gives every tenant its exclusive outputs (bitwise where the
backend's kernels run, within the network tolerance where space-time's batched GEMMs do), and
the plan says exactly which steps are batched."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.programs import PROGRAMS
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.graph.ir import Graph
from devicelab.tenancy.checks import NETWORK_TOLERANCE, compare_bitwise, compare_within
from devicelab.tenancy.network_layers import plan_layers, step_flops
from devicelab.tenancy.network_strategies import (
    NETWORK_STRATEGIES,
    NetTimeOnly,
    NetworkTenants,
    batched_references,
    build_network_strategy,
    rebatched,
    runner_bytes,
)

TENANTS = 2


def test_plan_batches_gemm_steps_as_gemms_and_every_other_step_with_a_tenant_axis(
    found: FoundDevice, tiny: Graph
) -> None:
    runner = GraphRunner(found, tiny)
    try:
        plan = plan_layers(runner)
        gemm_only = plan_layers(runner, tenant_axis=False)
        report = plan.as_dict(step_flops(runner))
        gemm_report = gemm_only.as_dict(step_flops(runner))
    finally:
        runner.release()
    kernels = [s["kernel"] for s in plan.steps]
    how = {s["kernel"]: s["how"] for s in plan.steps}
    assert "depthwise_conv2d" in kernels and "binary" in kernels and "global_pool" in kernels
    assert all(s["batched"] for s in plan.steps)
    assert {k for k, h in how.items() if h == "gemm"} == {
        "conv2d",
        "conv2d_flat",
        "conv2d_1x1",
        "fully_connected",
    } & set(kernels)
    assert {k for k, h in how.items() if h == "tenant_axis"} == {"depthwise_conv2d", "binary", "global_pool"}
    im2col = [s for s in plan.steps if s["how"] == "gemm" and s["im2col"]]
    assert len(im2col) == 2  # the strided and the dilated 3x3 convolutions
    assert report["per_tenant_steps"] == 0 and report["batched_flops_fraction"] == 1.0
    assert report["gemm_steps"] + report["axis_steps"] == report["steps"]
    # turned off, the tenant axis leaves those steps per tenant, and says why
    assert gemm_report["axis_steps"] == 0 and gemm_report["per_tenant_steps"] == report["axis_steps"]
    assert all("turned off" in s["why"] for s in gemm_only.steps if not s["batched"])
    assert 0.5 < gemm_report["batched_flops_fraction"] < 1.0


def test_rebatched_graph_keeps_everything_but_the_batch(tiny: Graph) -> None:
    g = rebatched(tiny, 3)
    assert g.tensors[g.inputs[0]].shape[0] == 3 and g.tensors[g.outputs[0]].shape == (3, 10)
    assert [o.type for o in g.operators] == [o.type for o in tiny.operators]


def test_every_strategy_keeps_each_tenants_outputs(found: FoundDevice, tiny: Graph) -> None:
    first = GraphRunner(found, tiny, weight_seed=5)
    plan = plan_layers(first)
    tenants = NetworkTenants(found, first, TENANTS, seed=5)
    strategies = {}
    try:
        for name in NETWORK_STRATEGIES:
            strategies[name] = build_network_strategy(name, tenants, plan)
        references = tenants.exclusive_results()
        assert not np.array_equal(references[0], references[1]), "the tenants have their own weights"
        batched_refs = batched_references(tenants)
        for name, strategy in strategies.items():
            strategy.step(1)
            got = strategy.outputs()
            if name == "exclusive_batched":
                check = compare_within(got, batched_refs, NETWORK_TOLERANCE, "tenant 0 alone")
            elif name == "space_time":
                check = compare_within(got, references, NETWORK_TOLERANCE, "exclusive")
                assert strategy.launches_per_step < TENANTS * len(first.launches)
            elif name == "space_time_native":  # one launch per step, and each tenant's own bits
                check = compare_bitwise(got, references)
                assert strategy.launches_per_step == len(first.launches)
            else:
                check = compare_bitwise(got, references[: len(got)])
            assert check["correct"], f"{name}: {check}"
        # the other strategies still give the same bits after space-time re-bound the activations
        assert compare_bitwise(strategies["time_only"].outputs(), references)["correct"]
    finally:
        for s in strategies.values():
            s.release()
        tenants.release()


def test_unknown_strategy_is_refused(found: FoundDevice, tiny: Graph) -> None:
    first = GraphRunner(found, tiny)
    tenants = NetworkTenants(found, first, 1, seed=0)
    try:
        with pytest.raises(ValueError, match="no network strategy"):
            build_network_strategy("space_time_clblast", tenants, plan_layers(first))
    finally:
        tenants.release()


def test_time_only_gives_every_tenant_its_own_context(found: FoundDevice, tiny: Graph) -> None:
    first = GraphRunner(found, tiny, weight_seed=7)
    tenants = NetworkTenants(found, first, 3, seed=7)
    strategy = build_network_strategy("time_only", tenants, plan_layers(first))
    try:
        assert isinstance(strategy, NetTimeOnly)
        contexts = [r.ctx for r in strategy.runners]
        shared = context_for(found)
        assert all(c != shared for c in contexts)
        assert all(contexts[i] != contexts[j] for i in range(3) for j in range(i + 1, 3))
        assert all(r.ctx == shared for r in tenants.runners)  # the references stay in the shared one
        assert strategy.footprint.per_tenant == runner_bytes(first)
        references = tenants.exclusive_results()
        for first_tenant in range(3):
            strategy.step(first_tenant)
            assert compare_bitwise(strategy.outputs(), references)["correct"]
    finally:
        strategy.release()
        tenants.release()
    assert strategy.runners == []  # released, and their contexts' programs forgotten
    assert all(PROGRAMS.forget(c) == 0 for c in contexts)
