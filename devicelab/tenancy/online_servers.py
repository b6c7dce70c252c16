"""What serves a request for each online policy, on the sharing core's tenants and kernels.

A server's ``serve(tenants)`` runs one request of each listed tenant to completion and returns
their results on the host (a request is the kernels and the download of the result, so the
latency a tenant sees includes getting its answer back) with the span of the kernels on the
device clock. The policies (``online_policies``) decide when and with whom ``serve`` is called:

* ``time_only``: one tenant per call, one call at a time, in the tenant's own context. SGEMM:
  its queue and copies of its matrices (``gemm_strategies.TimeOnly``'s private tenants);
  networks: a runner of its own there (``private_runners``).
* ``space_only``: one tenant per call, calls from the tenants' own host threads at the same time.
  SGEMM: the tenant's own queue in the shared context and its own SGEMM (``tenant_launch``);
  networks: the tenant's runner on its own queue.
* ``space_time``: any subset of the tenants per call, one call at a time, on one in-order queue:
  SGEMM one ``sgemm_indexed`` super-kernel over the subset; networks step by step, each GEMM-able
  step one indexed super-kernel (im2col first where needed) over the subset, every other step
  the backend's kernel with a tenant axis reading the subset from the same index
  (``NetSpaceTime``'s arenas, weights and scratch, re-launched indexed).
* ``space_time_native`` (networks): the same with every step the backend's kernel with a tenant
  axis (``NetSpaceTimeNative``).

Every tenant has one result slot per server (a tenant has at most one request in service at a
time, see ``online_policies``), and each server's outputs are compared with the tenant's
exclusive run: bit for bit where the exclusive run's kernel computes them (``bitwise``), else
within the network tolerance.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.runner import GraphRunner
from devicelab.tenancy.gemm import FLOAT_BYTES, GemmLaunch, Strided
from devicelab.tenancy.gemm_strategies import SharedOperands, TimeOnly, tenant_launch
from devicelab.tenancy.memory import Allocations
from devicelab.tenancy.network_layers import LayerPlan
from devicelab.tenancy.network_strategies import (
    NetSpaceTime,
    NetSpaceTimeNative,
    NetworkTenants,
    flat_outputs,
    private_runners,
    release_private,
)
from devicelab.tenancy.online_kernels import IndexedLaunch, TenantIndex, indexed_gemm, indexed_im2col

PROFILING = cl.command_queue_properties.PROFILING_ENABLE


@dataclass
class Served:
    """One ``serve`` call's results (one per tenant served, in order) and its kernels' span on the
    device clock (ns; None where not observed)."""

    outputs: list[np.ndarray]
    device_start_ns: int | None = None
    device_end_ns: int | None = None


def served(outputs: list[np.ndarray], events: Sequence[cl.Event]) -> Served:
    """Results with the span of ``events`` (first start, last end)."""
    if not events:
        return Served(outputs)
    return Served(outputs, min(e.profile.start for e in events), max(e.profile.end for e in events))


class RequestServer(ABC):
    """Serves requests of a workload's tenants for one policy (see the module docstring)."""

    policy: str
    bitwise: bool  # outputs come from the exclusive run's kernels: equal bit for bit
    tenants: int

    @abstractmethod
    def serve(self, tenants: Sequence[int]) -> Served:
        """One request of each of ``tenants`` (distinct), run to completion, results on the host."""

    @abstractmethod
    def release(self) -> None:
        """Free what the server allocated."""


# -- SGEMM tenants ------------------------------------------------------------------------------


class GemmTimeOnlyServer(RequestServer):
    """Each tenant in its own context (the offline time-only strategy's private tenants)."""

    policy = "time_only"
    bitwise = True

    def __init__(self, shared: SharedOperands) -> None:
        self.tenants = shared.tenants
        self.strategy = TimeOnly(shared)

    def serve(self, tenants: Sequence[int]) -> Served:
        (t,) = tenants
        private = self.strategy.private[t]
        s = private.shape
        # the kernel and the download on the tenant's queue, one wait (as every server does)
        event = private.launch.enqueue(private.queue)
        out = np.empty((s.m, s.n), np.float32)
        cl.enqueue_copy(private.queue, out, private.c, is_blocking=True)
        return served([out], [event])

    def release(self) -> None:
        self.strategy.release()


class GemmSpaceOnlyServer(RequestServer):
    """Each tenant its own queue in the shared context; ``serve`` may be called from the tenants'
    threads at once (each touches only its tenant's queue, kernel and result slot)."""

    policy = "space_only"
    bitwise = True

    def __init__(self, shared: SharedOperands) -> None:
        self.shared = shared
        self.tenants = shared.tenants
        self.memory = Allocations(shared.ctx)
        try:
            self.c = shared.new_outputs(self.memory, self.tenants, "the space-only results")
            self.queues = [
                cl.CommandQueue(shared.ctx, shared.found.device, properties=PROFILING) for _ in range(self.tenants)
            ]
            self.launches: list[GemmLaunch] = [tenant_launch(shared, t, self.c, t) for t in range(self.tenants)]
        except BaseException:
            self.memory.release()
            raise

    def serve(self, tenants: Sequence[int]) -> Served:
        (t,) = tenants
        s = self.shared.shape
        queue = self.queues[t]
        event = self.launches[t].enqueue(queue)
        out = np.empty((s.m, s.n), np.float32)
        cl.enqueue_copy(queue, out, self.c, src_offset=t * s.c_elems * FLOAT_BYTES, is_blocking=True)
        return served([out], [event])

    def release(self) -> None:
        for q in self.queues:
            q.finish()
        self.memory.release()


class GemmSpaceTimeServer(RequestServer):
    """One ``sgemm_indexed`` super-kernel over the batch's tenants, on one in-order queue."""

    policy = "space_time"
    bitwise = True

    def __init__(self, shared: SharedOperands) -> None:
        s = shared.shape
        self.shared = shared
        self.tenants = shared.tenants
        self.queue = cl.CommandQueue(shared.ctx, shared.found.device, properties=PROFILING)
        self.memory = Allocations(shared.ctx)
        self.index = TenantIndex(shared.ctx, self.tenants)
        try:
            self.c = shared.new_outputs(self.memory, self.tenants, "the space-time results")
            self.launch = indexed_gemm(
                shared.found,
                shared.ctx,
                s,
                shared.a,
                shared.b,
                self.c,
                shared.a_at(),
                shared.b_at(),
                Strided(0, s.c_elems),
                self.index,
            )
        except BaseException:
            self.release()
            raise

    def serve(self, tenants: Sequence[int]) -> Served:
        s = self.shared.shape
        q = self.queue
        self.index.write(q, tenants)
        event = self.launch.enqueue(q, len(tenants))
        outs = [np.empty((s.m, s.n), np.float32) for _ in tenants]
        for t, out in zip(tenants, outs, strict=True):
            cl.enqueue_copy(q, out, self.c, src_offset=t * s.c_elems * FLOAT_BYTES, is_blocking=False)
        q.finish()
        return served(outs, [event])

    def release(self) -> None:
        self.queue.finish()
        self.memory.release()
        self.index.release()


def gemm_server(policy: str, shared: SharedOperands) -> RequestServer:
    """The server of ``policy`` on SGEMM tenants."""
    if policy == "time_only":
        return GemmTimeOnlyServer(shared)
    if policy == "space_only":
        return GemmSpaceOnlyServer(shared)
    if policy == "space_time":
        return GemmSpaceTimeServer(shared)
    raise ValueError(f"no online policy {policy!r}")


# -- network tenants ----------------------------------------------------------------------------


def host_inputs(tenants: NetworkTenants) -> list[dict[str, np.ndarray]]:
    """Every tenant's input as the fp32 host arrays a run uploads."""
    names = tenants.runners[0].graph.inputs
    return [{n: np.ascontiguousarray(feed[n], np.float32) for n in names} for feed in tenants.feeds]


def run_tenant(runner: GraphRunner, inputs: dict[str, np.ndarray]) -> Served:
    """One inference on the tenant's runner and its own queue (upload, the runner's kernels,
    download), keeping the kernels' events."""
    q = runner.queue
    outputs = {n: np.empty(runner.graph.tensors[n].shape, np.float32) for n in runner.graph.outputs}
    for name, arr in inputs.items():
        cl.enqueue_copy(q, runner.buffers[name], arr, is_blocking=False)
    events = [cl.enqueue_nd_range_kernel(q, ln.kernel, ln.global_size, ln.local_size) for ln in runner.launches]
    for name, arr in outputs.items():
        cl.enqueue_copy(q, arr, runner.buffers[name], is_blocking=False)
    q.finish()
    return served([flat_outputs(runner, outputs)], events)


class NetTenantServer(RequestServer):
    """Time-only and space-only for networks: a tenant's inference on its runner's own queue.
    Time-only tenants each have a runner in a context of their own, as offline; space-only
    tenants share the device's context (their queues must be in one context to run together)."""

    bitwise = True

    def __init__(self, policy: str, tenants: NetworkTenants) -> None:
        self.policy = policy
        self.tenants = len(tenants.runners)
        self.private = policy == "time_only"
        self.runners = private_runners(tenants) if self.private else tenants.runners
        self.inputs = host_inputs(tenants)

    def serve(self, tenants: Sequence[int]) -> Served:
        (t,) = tenants
        return run_tenant(self.runners[t], self.inputs[t])

    def release(self) -> None:
        if self.private:  # shared runners belong to the tenants
            release_private(self.runners)


class NetSpaceTimeServer(RequestServer):
    """The batch's inferences step by step on one queue, each step one indexed super-kernel over
    the batch: the batched SGEMM or the backend's kernel with a tenant axis (``native``: the
    latter for every step), per tenant only where neither applies."""

    def __init__(self, tenants: NetworkTenants, plan: LayerPlan, native: bool = False) -> None:
        self.owner = tenants
        self.tenants = len(tenants.runners)
        self.policy = "space_time_native" if native else "space_time"
        # batched GEMMs are not the backend's kernels (network tolerance); tenant axes are (bits)
        self.bitwise = native
        # the tenants' GEMM weights, im2col scratch, tenant-axis steps' gathered buffers
        self.base = NetSpaceTimeNative(tenants, plan) if native else NetSpaceTime(tenants, plan)
        self.index: TenantIndex | None = None
        try:
            found, ctx = tenants.found, self.base.ctx
            self.index = TenantIndex(ctx, self.tenants)
            self.steps: dict[int, list[IndexedLaunch]] = {}
            arenas = self.base.arenas
            for i, step in self.base.batched.items():
                layer = step.layer
                s = layer.shape
                x, x_stride = arenas.arena(layer.input_tensor)
                y, y_stride = arenas.arena(layer.output_tensor)
                launches: list[IndexedLaunch] = []
                b, b_stride = x, x_stride
                if layer.im2col is not None:
                    assert self.base.col is not None
                    b, b_stride = self.base.col, self.base.col_stride
                    launches.append(indexed_im2col(found, ctx, layer.im2col, x, x_stride, b, b_stride, self.index))
                launches.append(
                    indexed_gemm(
                        found,
                        ctx,
                        s,
                        step.w,
                        b,
                        y,
                        Strided(0, s.m * s.k),
                        Strided(0, b_stride),
                        Strided(0, y_stride),
                        self.index,
                        bias=step.bias,
                        bias_at=Strided(0, s.m),
                        activation=layer.activation,
                    )
                )
                self.steps[i] = launches
            self.axis = {i: step.launch(self.index.buffer) for i, step in self.base.axis.items()}
        except BaseException:
            self.release()
            raise
        self.inputs = host_inputs(tenants)

    def serve(self, tenants: Sequence[int]) -> Served:
        assert self.index is not None
        q = self.base.queue
        runners = [self.owner.runners[t] for t in tenants]
        self.index.write(q, tenants)
        for t, runner in zip(tenants, runners, strict=True):
            for name, arr in self.inputs[t].items():
                cl.enqueue_copy(q, runner.buffers[name], arr, is_blocking=False)
        events: list[cl.Event] = []
        for k in range(len(runners[0].launches)):
            batched = self.steps.get(k)
            if batched is not None:
                events.extend(launch.enqueue(q, len(tenants)) for launch in batched)
                continue
            axis = self.axis.get(k)
            if axis is not None:
                events.append(axis.enqueue(q, len(tenants)))
                continue
            for runner in runners:
                ln = runner.launches[k]
                events.append(cl.enqueue_nd_range_kernel(q, ln.kernel, ln.global_size, ln.local_size))
        outputs = [{n: np.empty(r.graph.tensors[n].shape, np.float32) for n in r.graph.outputs} for r in runners]
        for runner, out in zip(runners, outputs, strict=True):
            for name, arr in out.items():
                cl.enqueue_copy(q, arr, runner.buffers[name], is_blocking=False)
        q.finish()
        return served([flat_outputs(r, o) for r, o in zip(runners, outputs, strict=True)], events)

    def release(self) -> None:
        self.base.release()
        if self.index is not None:
            self.index.release()
            self.index = None


def network_server(policy: str, tenants: NetworkTenants, plan: LayerPlan) -> RequestServer:
    """The server of ``policy`` on network tenants (build ``space_time`` first: it re-binds the
    runners' activations to the shared arenas, which the others then use too)."""
    if policy in ("time_only", "space_only"):
        return NetTenantServer(policy, tenants)
    if policy in ("space_time", "space_time_native"):
        return NetSpaceTimeServer(tenants, plan, native=policy == "space_time_native")
    raise ValueError(f"no online policy {policy!r}")


__all__ = [
    "GemmSpaceOnlyServer",
    "GemmSpaceTimeServer",
    "GemmTimeOnlyServer",
    "NetSpaceTimeServer",
    "NetTenantServer",
    "RequestServer",
    "Served",
    "gemm_server",
    "host_inputs",
    "network_server",
    "run_tenant",
    "served",
]
