"""The memory model: footprints, the budget (the device's or a cap), the largest R that fits, and
OpenCL's out-of-memory codes recognized."""

from __future__ import annotations

import pyopencl as cl
import pytest

from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import gemm_footprint
from devicelab.tenancy.memory import Footprint, MemoryBound, MemoryBudget, align_up, is_memory_error


def test_budget_and_largest_tenants() -> None:
    budget = MemoryBudget(device_bytes=1000, max_alloc_bytes=600, cap_bytes=None)
    fp = Footprint(fixed=100, per_tenant=200, largest_buffer=50)
    assert budget.largest_tenants(fp) == 4
    budget.check(fp, 4, "x")
    with pytest.raises(MemoryBound, match="device's memory"):
        budget.check(fp, 5, "x")
    capped = MemoryBudget(1000, 600, cap_bytes=500)
    assert capped.bytes == 500 and capped.largest_tenants(fp) == 2
    with pytest.raises(MemoryBound, match="cap"):
        capped.check(fp, 3, "x")
    with pytest.raises(MemoryBound, match="largest allocation"):
        budget.check(Footprint(0, 1, 700), 1, "x")
    assert budget.largest_tenants(Footprint(10, 0, 0)) is None
    assert budget.as_dict(fp, 3)["bytes"] == 700


def test_gemm_footprints_grow_as_the_strategies_allocate() -> None:
    s = GemmShape(10, 2, 3)
    assert gemm_footprint("exclusive", s, 50).bytes(50) == s.tenant_bytes
    assert gemm_footprint("space_time", s, 5).bytes(5) == 5 * s.tenant_bytes
    batched = gemm_footprint("exclusive_batched", s, 5)
    assert batched.bytes(5) == 4 * (s.a_elems + 5 * (s.b_elems + s.c_elems))
    assert align_up(129, 128) == 256 and align_up(128, 128) == 128


def test_out_of_memory_codes() -> None:
    assert is_memory_error(cl.MemoryError("clCreateBuffer", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE, "x"))
    assert not is_memory_error(ValueError("x"))
