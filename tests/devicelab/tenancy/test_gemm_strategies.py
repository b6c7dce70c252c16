"""Sharing does not change anyone's SGEMM: every strategy gives each tenant the bits of its
exclusive run (CLBlast, another kernel, within the accumulation bound)."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.tenancy.checks import compare_bitwise, compare_with_numpy
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import GEMM_STRATEGIES, SharedOperands, exclusive_results, tenant_matrices

SHAPE = GemmShape(37, 11, 45)
TENANTS = 3


@pytest.fixture(scope="module")
def shared(found: FoundDevice):
    operands = SharedOperands(found, SHAPE, TENANTS, seed=7)
    yield operands
    operands.release()


@pytest.mark.parametrize("name", ["exclusive", "time_only", "space_only", "space_time", "space_time_vbatched"])
def test_strategy_outputs_equal_exclusive_bit_for_bit(shared: SharedOperands, name: str) -> None:
    references = exclusive_results(shared)
    assert compare_with_numpy(references, shared.host, None)["correct"]
    strategy = GEMM_STRATEGIES[name](shared)
    try:
        for first in range(2):  # the rotation must not matter either
            sample = strategy.step(first)
            got = strategy.outputs()
            assert len(got) == strategy.tenants == len(sample.latencies_ms)
            assert sample.makespan_ms > 0 and max(sample.latencies_ms) <= sample.makespan_ms + 1e-9
            check = compare_bitwise(got, references[: len(got)])
            assert check["correct"], f"{name}: {check}"
    finally:
        strategy.release()


def test_exclusive_batched_is_tenant_zero_over_every_input(shared: SharedOperands) -> None:
    strategy = GEMM_STRATEGIES["exclusive_batched"](shared)
    try:
        strategy.step(0)
        got = strategy.outputs()
    finally:
        strategy.release()
    assert len(got) == TENANTS
    a0 = shared.host[0][0]
    assert compare_with_numpy(got, [(a0, b) for _, b in shared.host], None)["correct"]
    assert np.array_equal(got[0], exclusive_results(shared)[0])
    assert not np.allclose(got[1], exclusive_results(shared)[1]), "tenant 1's own weights were used"


def test_clblast_peer_within_the_bound(shared: SharedOperands) -> None:
    pytest.importorskip("pyclblast", reason="pyclblast is not installed (optional extra 'clblast')")
    strategy = GEMM_STRATEGIES["space_time_clblast"](shared)
    try:
        strategy.step(0)
        got = strategy.outputs()
    finally:
        strategy.release()
    check = compare_with_numpy(got, shared.host, exclusive_results(shared))
    assert check["correct"], check


def test_tenant_data_is_the_same_at_every_r() -> None:
    a1, b1 = tenant_matrices(SHAPE, 7, 2)
    a2, b2 = tenant_matrices(SHAPE, 7, 2)
    a3, _ = tenant_matrices(SHAPE, 7, 1)
    assert np.array_equal(a1, a2) and np.array_equal(b1, b2) and not np.array_equal(a1, a3)
