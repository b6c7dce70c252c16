"""Device memory of the sharing strategies: what each needs, whether it fits, and allocation.

A strategy's footprint is modelled as ``fixed + R * per_tenant`` bytes (the sum of the buffers it
allocates), and checked against the budget before anything is allocated: the device's global
memory (its own query) or a smaller cap the caller sets. Checking first matters on CPU drivers:
PoCL hands out far more than the global memory it declares (host memory, lazily committed), so
waiting for the driver to refuse would first drive the host into swapping or the OOM killer. A
driver that refuses anyway (``MEM_OBJECT_ALLOCATION_FAILURE``, ``OUT_OF_RESOURCES``,
``OUT_OF_HOST_MEMORY``) is reported the same way: the R is memory-bound, not a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.limits import DeviceLimits

MEMORY_STATUS_CODES = (
    cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
    cl.status_code.OUT_OF_RESOURCES,
    cl.status_code.OUT_OF_HOST_MEMORY,
)


class MemoryBound(Exception):
    """A strategy's buffers do not fit the device at this number of tenants."""


def is_memory_error(error: BaseException) -> bool:
    """Whether an OpenCL error says the device ran out of memory or resources."""
    if isinstance(error, cl.MemoryError):
        return True
    code = getattr(error, "code", None)
    if code is None and isinstance(error, cl.Error) and error.args:
        code = getattr(error.args[0], "code", None)
    return code in MEMORY_STATUS_CODES


@dataclass(frozen=True)
class Footprint:
    """Bytes a strategy allocates for R tenants: ``fixed + R * per_tenant``."""

    fixed: int
    per_tenant: int
    largest_buffer: int  # the largest single allocation (bounded by the device's max_mem_alloc_size)

    def bytes(self, tenants: int) -> int:
        """The footprint at ``tenants`` tenants."""
        return self.fixed + tenants * self.per_tenant


@dataclass(frozen=True)
class MemoryBudget:
    """How much a strategy may allocate: the device's global memory, or less with a cap."""

    device_bytes: int
    max_alloc_bytes: int
    cap_bytes: int | None = None

    @classmethod
    def for_device(cls, limits: DeviceLimits, cap_bytes: int | None = None) -> MemoryBudget:
        """The budget of a device (from its queries), capped at ``cap_bytes`` if given."""
        return cls(limits.global_mem_size, limits.max_mem_alloc_size, cap_bytes)

    @property
    def bytes(self) -> int:
        """What may be allocated in total."""
        return self.device_bytes if self.cap_bytes is None else min(self.device_bytes, self.cap_bytes)

    def largest_tenants(self, footprint: Footprint) -> int | None:
        """The most tenants whose footprint fits (None: it does not grow with R, so any R fits
        or none does)."""
        if footprint.per_tenant <= 0:
            return None
        return max(0, (self.bytes - footprint.fixed) // footprint.per_tenant)

    def check(self, footprint: Footprint, tenants: int, what: str) -> None:
        """Raise ``MemoryBound`` naming the numbers when ``what`` does not fit."""
        need = footprint.bytes(tenants)
        if need > self.bytes:
            source = f"the cap of {self.cap_bytes} bytes" if self.bytes == self.cap_bytes else "the device's memory"
            raise MemoryBound(
                f"{what} needs {need} bytes for {tenants} tenants, more than {source} ({self.bytes} bytes)"
            )
        if footprint.largest_buffer > self.max_alloc_bytes:
            raise MemoryBound(
                f"{what} needs one buffer of {footprint.largest_buffer} bytes, more than the device's largest "
                f"allocation ({self.max_alloc_bytes} bytes)"
            )

    def as_dict(self, footprint: Footprint, tenants: int) -> dict[str, Any]:
        """The memory part of a result row."""
        return {
            "bytes": footprint.bytes(tenants),
            "fixed_bytes": footprint.fixed,
            "per_tenant_bytes": footprint.per_tenant,
            "budget_bytes": self.bytes,
            "device_global_mem_bytes": self.device_bytes,
            "cap_bytes": self.cap_bytes,
            "largest_tenants_that_fit": self.largest_tenants(footprint),
        }


def align_up(nbytes: int, alignment: int) -> int:
    """``nbytes`` rounded up to a multiple of ``alignment``."""
    return -(-nbytes // alignment) * alignment


def base_alignment(device: cl.Device) -> int:
    """The alignment of a sub-buffer's origin in bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN is in bits)."""
    return max(4, int(device.mem_base_addr_align) // 8)


class Allocations:
    """Buffers allocated in one context, counted, and freed together (``release``)."""

    def __init__(self, ctx: cl.Context) -> None:
        self.ctx = ctx
        self.buffers: list[cl.Buffer] = []
        self.bytes = 0

    def new(self, nbytes: int, what: str) -> cl.Buffer:
        """A read-write buffer of ``nbytes``; ``MemoryBound`` when the driver refuses."""
        try:
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size=max(4, nbytes))
        except cl.Error as e:
            if is_memory_error(e):
                raise MemoryBound(f"allocating {nbytes} bytes for {what} failed: {e}") from e
            raise
        self.buffers.append(buf)
        self.bytes += max(4, nbytes)
        return buf

    def upload(self, queue: cl.CommandQueue, array: np.ndarray, what: str) -> cl.Buffer:
        """A buffer holding ``array`` (float32, contiguous)."""
        data = np.ascontiguousarray(array, dtype=np.float32)
        buf = self.new(data.nbytes, what)
        cl.enqueue_copy(queue, buf, data, is_blocking=True)
        return buf

    def release(self) -> None:
        """Free every buffer."""
        for buf in self.buffers:
            buf.release()
        self.buffers.clear()
        self.bytes = 0


__all__ = [
    "Allocations",
    "Footprint",
    "MemoryBound",
    "MemoryBudget",
    "align_up",
    "base_alignment",
    "is_memory_error",
]
