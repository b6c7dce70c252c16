"""Space-time's steps that run the backend's own kernel once for every tenant (``tenant_axis``).

A step that is not a GEMM (a depthwise convolution, a pooling, an element-wise add...) is batched
by launching the backend's kernel with a tenant axis: the tenant's own 2-D launch, plus a third
axis over the tenants. Its pointer arguments are buffers holding every tenant's data at a fixed
stride: the activation arenas for activations (``ActivationArenas``), and for the rest (the
tenant's depthwise weights, biases, scales) one buffer per argument into which every tenant's own
buffer is copied on the device when the step is set up. Scalar arguments are the same for every
tenant (they all run the same plan), which the set-up checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.backends.opencl.programs import program_source
from devicelab.backends.opencl.runner import GraphRunner, Launch
from devicelab.tenancy.arenas import ActivationArenas, distinct_buffers
from devicelab.tenancy.memory import Allocations, align_up, base_alignment
from devicelab.tenancy.programs import BUILDS
from devicelab.tenancy.tenant_axis import TenantAxisError, TenantAxisKernel, add_tenant_axis


@dataclass(frozen=True)
class AxisLayer:
    """One step of the plan run as the backend's kernel with a tenant axis."""

    index: int  # the step (launch) index in every tenant's plan
    kernel: str
    axis: TenantAxisKernel
    gathered_bytes: int  # per tenant: the step's own buffers (weights...) copied per tenant, aligned


def axis_layer(runner: GraphRunner, index: int) -> AxisLayer | str:
    """The step ``index`` of the runner's plan with a tenant axis, or why it cannot have one."""
    launch = runner.launches[index]
    pk = launch.planned
    try:
        axis = add_tenant_axis(
            program_source(pk.kernel, runner.precision), runner.options[(pk.kernel, pk.attrs["variant"])], pk.kernel
        )
    except TenantAxisError as e:
        return f"no tenant axis: {e}"
    if len(launch.args) != axis.params:
        return f"the launch sets {len(launch.args)} arguments of the kernel's {axis.params}"
    activations = {id(b) for b in distinct_buffers(runner)}
    align = base_alignment(runner.found.device)
    gathered = 0
    for ptr in axis.pointers:
        value = launch.args[ptr.index]
        if isinstance(value, cl.Buffer) and id(value) not in activations:
            gathered += align_up(value.size, align)
    return AxisLayer(index, pk.kernel, axis, gathered)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, cl.LocalMemory) and isinstance(b, cl.LocalMemory):
        return bool(a.size == b.size)
    if isinstance(a, cl.MemoryObjectHolder) or isinstance(b, cl.MemoryObjectHolder):
        return a is b
    return bool(np.array_equal(np.asarray(a), np.asarray(b))) and np.asarray(a).dtype == np.asarray(b).dtype


@dataclass
class AxisLaunch:
    """The step's kernel with its arguments set: the tenant's own (g0, g1) and work-group, and a
    third axis as long as the batch."""

    kernel: cl.Kernel
    global01: tuple[int, int]
    local01: tuple[int, int]

    def enqueue(self, queue: cl.CommandQueue, tenants: int) -> cl.Event:
        """Enqueue over ``tenants`` tenants (all of them, or the first entries of the index)."""
        return cl.enqueue_nd_range_kernel(queue, self.kernel, (*self.global01, tenants), (*self.local01, 1))


class AxisStep:
    """One step's arguments for every tenant: arenas for activations, gathered copies of the
    tenants' other buffers; ``launch`` makes a kernel object that runs it."""

    def __init__(
        self,
        found: FoundDevice,
        ctx: cl.Context,
        queue: cl.CommandQueue,
        layer: AxisLayer,
        runners: Sequence[GraphRunner],
        arenas: ActivationArenas,
        memory: Allocations,
    ) -> None:
        self.found, self.ctx, self.layer = found, ctx, layer
        launches: list[Launch] = [r.launches[layer.index] for r in runners]
        first = launches[0]
        self.global01 = (int(first.global_size[0]), int(first.global_size[1]))
        self.local01 = (int(first.local_size[0]), int(first.local_size[1]))
        self.values: list[Any] = list(first.args)
        self.strides: list[np.int64] = []
        pointer_at = {p.index: p for p in layer.axis.pointers}
        for i in range(len(self.values)):
            if i in pointer_at:
                continue
            for r, launch in enumerate(launches[1:], start=1):
                if not _same(first.args[i], launch.args[i]):
                    raise TenantAxisError(
                        f"step {layer.index} ({layer.kernel}): tenant {r} sets argument {i} to another value"
                    )
        align = base_alignment(found.device)
        for ptr in layer.axis.pointers:
            per = [launch.args[ptr.index] for launch in launches]
            buffer, stride_bytes = self._bind(queue, ptr.name, per, arenas, memory, align)
            if stride_bytes % ptr.element_bytes:
                raise TenantAxisError(
                    f"step {layer.index} ({layer.kernel}): a stride of {stride_bytes} bytes is not a whole "
                    f"number of {ptr.name!r}'s {ptr.element_bytes}-byte elements"
                )
            self.values[ptr.index] = buffer
            self.strides.append(np.int64(stride_bytes // ptr.element_bytes))

    def _bind(
        self,
        queue: cl.CommandQueue,
        name: str,
        per: list[Any],
        arenas: ActivationArenas,
        memory: Allocations,
        align: int,
    ) -> tuple[Any, int]:
        """The buffer a pointer argument reads every tenant's data from, and its stride in bytes."""
        regions = [arenas.region(b) for b in per]
        first = regions[0]
        if first is not None:
            arena = first[0]
            if regions != [(arena, t) for t in range(len(per))]:
                raise TenantAxisError(f"step {self.layer.index}: {name!r} is not one tensor of every tenant")
            return arenas.arenas[arena], arenas.strides[arena]
        if all(b is per[0] for b in per):
            return per[0], 0  # one buffer every tenant reads (or None for all)
        if not all(isinstance(b, cl.Buffer) and b.size == per[0].size for b in per):
            raise TenantAxisError(f"step {self.layer.index}: the tenants' {name!r} arguments differ in kind or size")
        stride = align_up(per[0].size, align)
        gathered = memory.new(stride * len(per), f"{name} of step {self.layer.index} for every tenant")
        for t, buf in enumerate(per):
            cl.enqueue_copy(queue, gathered, buf, byte_count=buf.size, dst_offset=t * stride)
        queue.finish()
        return gathered, stride

    def launch(self, index: cl.Buffer | None = None) -> AxisLaunch:
        """A kernel object running the step over tenants 0 .. n-1 (``index`` None), or over the
        tenants an index buffer lists (one int32 each)."""
        axis = self.layer.axis
        kernel, info = BUILDS.kernel(self.found, self.ctx, axis.key, axis.kernel, axis.options, axis.source)
        if self.local01[0] * self.local01[1] > info.max_work_group_size:
            raise TenantAxisError(
                f"step {self.layer.index} ({axis.kernel}): its work-group {self.local01} is larger than the "
                f"{info.max_work_group_size} work-items the kernel with a tenant axis allows on this device"
            )
        tenants = index if index is not None else self.values[axis.pointers[0].index]
        kernel.set_args(*self.values, *self.strides, tenants, np.int32(index is not None))
        return AxisLaunch(kernel, self.global01, self.local01)


__all__ = ["AxisLaunch", "AxisLayer", "AxisStep", "axis_layer"]
