"""The sharing strategies for R tenants that each run one SGEMM of the same shape (figure 7, table 1).

Tenant r owns its weights A[r] (m x k) and input B[r] (k x n), generated from ``(seed, r)`` so
a tenant has the same data at every R, preallocated on the device before any step (section
4.1: "data is preallocated on the device"). In the device's one context the tenants' matrices
are regions of one buffer per operand (``SharedOperands``): OpenCL 1.2 has no arrays of device
pointers, so a super-kernel can reach every tenant's data only through offsets into a buffer it
is given; each tenant's region is still its own and nobody else writes it. Every strategy
writes its results into a C of its own, so their outputs can be compared.

* ``exclusive``: tenant 0 alone, one SGEMM (the single-tenant lower bound on latency).
* ``exclusive_batched``: one tenant with a batch of R: tenant 0's weights (stride 0) over the R
  inputs in one launch (figure 3's batched exclusive access).
* ``time_only``: every tenant has its own context, queue and copies of its matrices; the
  software scheduler runs one tenant's SGEMM at a time to completion, round robin.
* ``space_only``: every tenant has its own command queue in the shared context; R host threads
  submit concurrently and the device schedules.
* ``space_time``: the R same-shaped SGEMMs merged into one strided-batch super-kernel.
* ``space_time_vbatched``: the same, through the variable-sized batch kernel (sizes and offsets
  read per problem), to show what that generality costs.
* ``space_time_clblast``: the peer super-kernel, CLBlast's ``GemmStridedBatched`` through pyclblast
  (only where pyclblast is installed).

Each tenant's SGEMM in exclusive, time-only and space-only is the strided kernel with one
problem; space-time runs that kernel with R; so their outputs match bit for bit.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.tenancy.gemm import (
    FLOAT_BYTES,
    GemmLaunch,
    GemmShape,
    Strided,
    VariableBatch,
    VariableProblem,
    strided_launch,
)
from devicelab.tenancy.memory import Allocations, Footprint
from devicelab.tenancy.operands import tenant_matrices
from devicelab.tenancy.programs import BUILDS
from devicelab.tenancy.scheduling import (
    SharingStrategy,
    StepSample,
    TenantThreads,
    device_span_ms,
    elapsed_ms,
    round_robin,
)

PROFILING = cl.command_queue_properties.PROFILING_ENABLE


class SharedOperands:
    """Every tenant's A and B in the device's context, one buffer per operand (see the module
    docstring), plus the host copies the checks use."""

    def __init__(self, found: FoundDevice, shape: GemmShape, tenants: int, seed: int) -> None:
        self.found = found
        self.shape = shape
        self.tenants = tenants
        self.ctx = context_for(found)
        self.queue = cl.CommandQueue(self.ctx, found.device, properties=PROFILING)
        self.host = [tenant_matrices(shape, seed, r) for r in range(tenants)]
        self.memory = Allocations(self.ctx)
        try:
            self.a = self.memory.new(tenants * shape.a_elems * FLOAT_BYTES, "the tenants' weights")
            self.b = self.memory.new(tenants * shape.b_elems * FLOAT_BYTES, "the tenants' inputs")
            for r, (a, b) in enumerate(self.host):
                cl.enqueue_copy(self.queue, self.a, a, dst_offset=r * a.nbytes, is_blocking=False)
                cl.enqueue_copy(self.queue, self.b, b, dst_offset=r * b.nbytes, is_blocking=False)
            self.queue.finish()
        except BaseException:
            self.memory.release()
            raise

    def a_at(self, tenant: int | None = None) -> Strided:
        """All tenants' A (``tenant`` None) or one tenant's."""
        n = self.shape.a_elems
        return Strided(0, n) if tenant is None else Strided(tenant * n, 0)

    def b_at(self, tenant: int | None = None) -> Strided:
        """All tenants' B (``tenant`` None) or one tenant's."""
        n = self.shape.b_elems
        return Strided(0, n) if tenant is None else Strided(tenant * n, 0)

    def new_outputs(self, memory: Allocations, count: int, what: str) -> cl.Buffer:
        """A C buffer for ``count`` tenants."""
        return memory.new(count * self.shape.c_elems * FLOAT_BYTES, what)

    def read(self, c: cl.Buffer, count: int) -> list[np.ndarray]:
        """``count`` results (m x n) from a C buffer."""
        host = np.empty((count, self.shape.m, self.shape.n), np.float32)
        cl.enqueue_copy(self.queue, host, c)
        self.queue.finish()
        return list(host)

    def release(self) -> None:
        """Free the operand buffers."""
        self.queue.finish()
        self.memory.release()


def tenant_launch(shared: SharedOperands, tenant: int, c: cl.Buffer, c_index: int) -> GemmLaunch:
    """Tenant ``tenant``'s own SGEMM (the strided kernel with one problem), writing result
    ``c_index`` of ``c``."""
    s = shared.shape
    return strided_launch(
        shared.found,
        shared.ctx,
        s,
        1,
        shared.a,
        shared.b,
        c,
        shared.a_at(tenant),
        shared.b_at(tenant),
        Strided(c_index * s.c_elems, 0),
    )


def exclusive_results(shared: SharedOperands) -> list[np.ndarray]:
    """Every tenant's result when it has the device to itself: its SGEMM alone, one tenant after
    another, each finished before the next starts (the reference sharing must not change)."""
    memory = Allocations(shared.ctx)
    try:
        c = shared.new_outputs(memory, shared.tenants, "the exclusive references")
        for r in range(shared.tenants):
            tenant_launch(shared, r, c, r).enqueue(shared.queue)
            shared.queue.finish()
        return shared.read(c, shared.tenants)
    finally:
        memory.release()


class _SharedContextStrategy(SharingStrategy):
    """A strategy in the device's context with a C of its own."""

    def __init__(self, shared: SharedOperands, count: int, launches: int) -> None:
        self.shared = shared
        self.tenants = count
        self.footprint = gemm_footprint(self.name, shared.shape, shared.tenants)
        self.launches_per_step = launches
        self.memory = Allocations(shared.ctx)
        self.c = shared.new_outputs(self.memory, count, f"the results of {self.name}")

    def outputs(self) -> list[np.ndarray]:
        return self.shared.read(self.c, self.tenants)

    def _one_launch(self, launch: Callable[[cl.CommandQueue], cl.Event]) -> StepSample:
        queue = self.shared.queue
        t0 = time.perf_counter_ns()
        event = launch(queue)
        queue.finish()
        t1 = time.perf_counter_ns()
        ms = elapsed_ms(t0, t1)
        return StepSample(ms, (ms,) * self.tenants, device_span_ms([event]))

    def release(self) -> None:
        self.shared.queue.finish()
        self.memory.release()


class Exclusive(_SharedContextStrategy):
    """Tenant 0 alone."""

    name = "exclusive"
    same_kernel_as_exclusive = True

    def __init__(self, shared: SharedOperands) -> None:
        super().__init__(shared, 1, 1)
        self.launch = tenant_launch(shared, 0, self.c, 0)

    def step(self, first: int) -> StepSample:
        return self._one_launch(self.launch.enqueue)


class ExclusiveBatched(_SharedContextStrategy):
    """Tenant 0 with a batch of R inputs: its weights broadcast over every tenant's B."""

    name = "exclusive_batched"
    same_kernel_as_exclusive = False  # other weights: checked against numpy, not against the tenants

    def __init__(self, shared: SharedOperands) -> None:
        s = shared.shape
        super().__init__(shared, shared.tenants, 1)
        self.launch = strided_launch(
            shared.found,
            shared.ctx,
            s,
            shared.tenants,
            shared.a,
            shared.b,
            self.c,
            shared.a_at(0),
            shared.b_at(),
            Strided(0, s.c_elems),
        )

    def step(self, first: int) -> StepSample:
        return self._one_launch(self.launch.enqueue)


class SpaceTime(_SharedContextStrategy):
    """The tenants' SGEMMs as one strided-batch super-kernel."""

    name = "space_time"
    same_kernel_as_exclusive = True

    def __init__(self, shared: SharedOperands) -> None:
        s = shared.shape
        super().__init__(shared, shared.tenants, 1)
        self.launch = strided_launch(
            shared.found,
            shared.ctx,
            s,
            shared.tenants,
            shared.a,
            shared.b,
            self.c,
            shared.a_at(),
            shared.b_at(),
            Strided(0, s.c_elems),
        )

    def step(self, first: int) -> StepSample:
        return self._one_launch(self.launch.enqueue)


class SpaceTimeVariable(_SharedContextStrategy):
    """The tenants' SGEMMs through the variable-sized batch kernel."""

    name = "space_time_vbatched"
    same_kernel_as_exclusive = True

    def __init__(self, shared: SharedOperands) -> None:
        s = shared.shape
        super().__init__(shared, shared.tenants, 1)
        problems = [VariableProblem(s, r * s.a_elems, r * s.b_elems, r * s.c_elems) for r in range(shared.tenants)]
        self.batch = VariableBatch(shared.found, shared.ctx, shared.queue, problems, shared.a, shared.b, self.c)

    def step(self, first: int) -> StepSample:
        return self._one_launch(self.batch.launch.enqueue)

    def release(self) -> None:
        super().release()
        self.batch.release()


class SpaceTimeClblast(_SharedContextStrategy):
    """The peer super-kernel: CLBlast's strided batched GEMM (pyclblast), on the same operands."""

    name = "space_time_clblast"
    same_kernel_as_exclusive = False

    def __init__(self, shared: SharedOperands) -> None:
        import pyclblast  # optional: ImportError says it is not installed
        import pyopencl.array as cla

        s = shared.shape
        super().__init__(shared, shared.tenants, 1)
        q, r = shared.queue, shared.tenants
        self._a = cla.Array(q, (r * s.m, s.k), np.float32, data=shared.a)
        self._b = cla.Array(q, (r * s.k, s.n), np.float32, data=shared.b)
        self._c = cla.Array(q, (r * s.m, s.n), np.float32, data=self.c)
        self._gemm = pyclblast.gemmStridedBatched

    def _enqueue(self, queue: cl.CommandQueue) -> cl.Event:
        s = self.shared.shape
        event: cl.Event = self._gemm(
            queue,
            s.m,
            s.n,
            s.k,
            self.tenants,
            self._a,
            self._b,
            self._c,
            a_ld=s.k,
            b_ld=s.n,
            c_ld=s.n,
            a_stride=s.a_elems,
            b_stride=s.b_elems,
            c_stride=s.c_elems,
        )
        return event

    def step(self, first: int) -> StepSample:
        return self._one_launch(self._enqueue)


class SpaceOnly(_SharedContextStrategy):
    """Every tenant its own queue in the shared context, submitted from its own host thread."""

    name = "space_only"
    same_kernel_as_exclusive = True

    def __init__(self, shared: SharedOperands) -> None:
        r = shared.tenants
        super().__init__(shared, r, r)
        self.queues = [cl.CommandQueue(shared.ctx, shared.found.device, properties=PROFILING) for _ in range(r)]
        self.launches = [tenant_launch(shared, i, self.c, i) for i in range(r)]
        self.events: list[cl.Event | None] = [None] * r
        self.threads = TenantThreads([self._work(i) for i in range(r)], "space-only")

    def _work(self, i: int) -> Callable[[], None]:
        def run() -> None:
            event = self.launches[i].enqueue(self.queues[i])
            event.wait()
            self.events[i] = event

        return run

    def step(self, first: int) -> StepSample:
        sample = self.threads.step()
        events = [e for e in self.events if e is not None]
        return StepSample(sample.makespan_ms, sample.latencies_ms, device_span_ms(events))

    def release(self) -> None:
        self.threads.close()
        for q in self.queues:
            q.finish()
        super().release()


class _PrivateTenant:
    """A time-only tenant: its own context, queue, copies of its matrices, C and kernel."""

    def __init__(self, found: FoundDevice, shape: GemmShape, a: np.ndarray, b: np.ndarray) -> None:
        self.ctx = cl.Context([found.device])
        self.queue = cl.CommandQueue(self.ctx, found.device, properties=PROFILING)
        self.memory = Allocations(self.ctx)
        self.shape = shape
        try:
            self.a = self.memory.upload(self.queue, a, "a tenant's weights")
            self.b = self.memory.upload(self.queue, b, "a tenant's input")
            self.c = self.memory.new(shape.c_elems * FLOAT_BYTES, "a tenant's result")
            self.launch = strided_launch(
                found, self.ctx, shape, 1, self.a, self.b, self.c, Strided(), Strided(), Strided()
            )
        except BaseException:
            self.release()
            raise
        self.event: cl.Event | None = None

    def run(self) -> None:
        self.event = self.launch.enqueue(self.queue)
        self.event.wait()

    def read(self) -> np.ndarray:
        host = np.empty((self.shape.m, self.shape.n), np.float32)
        cl.enqueue_copy(self.queue, host, self.c)
        self.queue.finish()
        return host

    def release(self) -> None:
        self.queue.finish()
        self.memory.release()
        BUILDS.forget_context(self.ctx)


class TimeOnly(SharingStrategy):
    """One context per tenant; the software scheduler runs one tenant at a time, round robin."""

    name = "time_only"
    same_kernel_as_exclusive = True

    def __init__(self, shared: SharedOperands) -> None:
        s, r = shared.shape, shared.tenants
        self.tenants = r
        self.launches_per_step = r
        self.footprint = gemm_footprint(self.name, s, r)
        self.private: list[_PrivateTenant] = []
        try:
            for a, b in shared.host:
                self.private.append(_PrivateTenant(shared.found, s, a, b))
        except BaseException:
            self.release()
            raise

    def step(self, first: int) -> StepSample:
        sample = round_robin(lambda i: self.private[i].run(), self.tenants, first)
        events = [p.event for p in self.private if p.event is not None]
        return StepSample(sample.makespan_ms, sample.latencies_ms, device_span_ms(events))

    def outputs(self) -> list[np.ndarray]:
        return [p.read() for p in self.private]

    def release(self) -> None:
        for p in self.private:
            p.release()
        self.private.clear()


GEMM_STRATEGIES: dict[str, Callable[[SharedOperands], SharingStrategy]] = {
    "exclusive": Exclusive,
    "exclusive_batched": ExclusiveBatched,
    "time_only": TimeOnly,
    "space_only": SpaceOnly,
    "space_time": SpaceTime,
    "space_time_vbatched": SpaceTimeVariable,
    "space_time_clblast": SpaceTimeClblast,
}


def gemm_footprint(strategy: str, shape: GemmShape, tenants: int) -> Footprint:
    """What ``strategy`` allocates for ``tenants`` tenants, known before anything is allocated."""
    a_bytes = shape.a_elems * FLOAT_BYTES
    if strategy == "exclusive":
        return Footprint(shape.tenant_bytes, 0, a_bytes)
    if strategy == "exclusive_batched":
        return Footprint(a_bytes, (shape.b_elems + shape.c_elems) * FLOAT_BYTES, tenants * shape.b_elems * FLOAT_BYTES)
    if strategy == "time_only":
        return Footprint(0, shape.tenant_bytes, a_bytes)
    extra = 36 if strategy == "space_time_vbatched" else 0  # the problem's 6 sizes and 3 offsets
    return Footprint(0, shape.tenant_bytes + extra, tenants * a_bytes)


__all__ = [
    "GEMM_STRATEGIES",
    "Exclusive",
    "ExclusiveBatched",
    "SharedOperands",
    "SpaceOnly",
    "SpaceTime",
    "SpaceTimeClblast",
    "SpaceTimeVariable",
    "TimeOnly",
    "exclusive_results",
    "gemm_footprint",
    "tenant_launch",
]
