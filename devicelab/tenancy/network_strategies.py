"""The sharing strategies for R tenants that each run a whole network (figure 3).

Tenant r is a ``GraphRunner`` of the network with its own weights (seed ``seed + r``) and its own
input (``make_inputs`` with the same seed), all on the device before any step; a step is one
inference of every tenant: input upload, the kernels, output download.

* ``exclusive``: tenant 0 alone.
* ``exclusive_batched``: one tenant with a batch of R: the network rebuilt for a batch of R
  images (``rebatched``), tenant 0's weights, the R tenants' inputs.
* ``time_only``: the software scheduler runs one tenant's whole inference at a time, round robin.
  As for the SGEMM workload, every tenant has its own context (``cl.Context`` on the device), with
  a runner of its own in it (the tenant's weights and input, its queue, buffers and programs);
  the references stay the shared-context runners' exclusive runs.
* ``space_only``: R host threads each run their tenant's inference on its own queue, concurrently.
* ``space_time``: one in-order queue steps through the plan; each step is one batched
  super-kernel across the tenants: the batched SGEMM where ``network_layers`` says the step is a
  GEMM, else the backend's kernel with a tenant axis (``network_axis``); R launches of the
  backend's kernel only where neither applies. For the batched kernels to reach every tenant's
  activations, each tensor's buffers of all tenants are regions of one buffer
  (``arenas.ActivationArenas``: sub-buffers that the runners' kernels are re-bound to, made once
  per set of tenants), so every strategy runs on the same regions.
* ``space_time_native``: the same, but every step, GEMM-able ones too, runs the backend's own
  kernel with a tenant axis: the tuned convolution kernels batched across tenants, every
  tenant's outputs the bits of its exclusive run.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.programs import PROGRAMS
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.graph import ops
from devicelab.graph.ir import Graph, Tensor
from devicelab.graph.onnx import operator_weights
from devicelab.measure.inputs import make_inputs
from devicelab.tenancy.arenas import ActivationArenas, arena_bytes
from devicelab.tenancy.gemm import FLOAT_BYTES, GemmLaunch, Strided, launch_sizes, strided_launch
from devicelab.tenancy.memory import Allocations, Footprint, align_up, base_alignment
from devicelab.tenancy.network_axis import AxisLaunch, AxisStep
from devicelab.tenancy.network_layers import BatchedLayer, LayerPlan, plan_layers
from devicelab.tenancy.programs import BUILDS, IM2COL_SOURCE
from devicelab.tenancy.scheduling import (
    SharingStrategy,
    StepSample,
    TenantThreads,
    device_span_ms,
    elapsed_ms,
    round_robin,
)
from devicelab.tenancy.tenant_axis import TenantAxisError

PROFILING = cl.command_queue_properties.PROFILING_ENABLE


def rebatched(graph: Graph, batch: int) -> Graph:
    """A copy of ``graph`` whose inputs carry ``batch`` images, every shape inferred again (a
    ``GraphError`` where an operator fixes the batch, e.g. a reshape to a constant shape)."""
    g = copy.deepcopy(graph)
    for name in g.inputs:
        tensor = g.tensors[name]
        g.tensors[name] = Tensor(name, (batch, *tensor.shape[1:]), tensor.dtype)
    for op in g.topological_order():
        attrs, shapes = ops.normalize_and_infer(op.type, op.attrs, g.input_shapes(op), op.name)
        op.attrs = attrs
        for out, shape in zip(op.outputs, shapes, strict=True):
            g.tensors[out] = Tensor(out, tuple(shape), g.tensors[out].dtype)
    g.name = f"{graph.name}_batch{batch}"
    return g.check()


def runner_bytes(runner: GraphRunner) -> int:
    """What one tenant's runner allocated (activations with slack, and weights)."""
    return runner.load.buffer_bytes + runner.load.weight_bytes


def flat_outputs(runner: GraphRunner, outputs: dict[str, np.ndarray]) -> np.ndarray:
    """A run's outputs in graph order, as one flat array."""
    return np.concatenate([outputs[name].ravel() for name in runner.graph.outputs])


class NetworkTenants:
    """R tenants of one network: every tenant's input, and a runner with its own weights for the
    first ``runners`` of them (1 when only the exclusive strategies fit in memory)."""

    def __init__(
        self, found: FoundDevice, first: GraphRunner, tenants: int, seed: int, runners: int | None = None
    ) -> None:
        self.found = found
        self.seed = seed
        self.runners: list[GraphRunner] = [first]
        try:
            while len(self.runners) < (tenants if runners is None else runners):
                self.runners.append(GraphRunner(found, first.graph, weight_seed=seed + len(self.runners)))
        except BaseException:
            self.release()
            raise
        self.feeds = [make_inputs(first.graph, seed=seed + i) for i in range(tenants)]
        self._arenas: ActivationArenas | None = None
        self._arena_memory: Allocations | None = None

    def arenas(self) -> ActivationArenas:
        """The runners' activations as arena regions, made on first use and kept until
        ``release``: every strategy runs the runners on them from then on, and any number of
        space-time strategies share them."""
        if self._arenas is None:
            ctx = context_for(self.found)
            memory = Allocations(ctx)
            try:
                self._arenas = ActivationArenas(
                    self.found, self.runners, memory, cl.CommandQueue(ctx, self.found.device)
                )
            except BaseException:
                memory.release()
                raise
            self._arena_memory = memory
        return self._arenas

    @property
    def arena_memory_bytes(self) -> int:
        """What the arenas hold (0 before any space-time strategy made them)."""
        return 0 if self._arenas is None else sum(a.size for a in self._arenas.arenas)

    @property
    def tenants(self) -> int:
        """R: how many tenants have inputs (all of them have runners unless only exclusive fits)."""
        return len(self.feeds)

    def exclusive_results(self) -> list[np.ndarray]:
        """Every tenant's outputs (of those with runners) when it runs alone, one after another."""
        return [flat_outputs(r, r.run(f)) for r, f in zip(self.runners, self.feeds)]

    def release(self) -> None:
        """Free every runner's buffers, and the arenas."""
        if self._arenas is not None:
            self._arenas.release()
            self._arenas = None
        if self._arena_memory is not None:
            self._arena_memory.release()
            self._arena_memory = None
        for r in self.runners:
            r.release()
        self.runners.clear()


def space_time_extra_bytes(runner: GraphRunner, plan: LayerPlan, align: int) -> int:
    """What space-time allocates per tenant besides the runner: arenas, GEMM weights, scratch."""
    weights = sum(layer.weight_bytes for layer in plan.batched.values())
    return arena_bytes(runner, align) + weights + plan.col_elems * FLOAT_BYTES + plan.gathered_bytes


class _BatchedStep:
    """One batched layer's launches (im2col where needed, then the GEMM) over every tenant; its
    weights and bias buffers hold every tenant's, filled by ``upload_weights``."""

    def __init__(
        self,
        found: FoundDevice,
        ctx: cl.Context,
        layer: BatchedLayer,
        tenants: int,
        arenas: ActivationArenas,
        memory: Allocations,
        col: cl.Buffer | None,
        col_stride: int,
    ) -> None:
        s = layer.shape
        self.layer = layer
        self.w = memory.new(tenants * s.m * s.k * FLOAT_BYTES, f"weights of {layer.anchor} for every tenant")
        self.bias = memory.new(tenants * s.m * FLOAT_BYTES, f"bias of {layer.anchor} for every tenant")
        x, x_stride = arenas.arena(layer.input_tensor)
        y, y_stride = arenas.arena(layer.output_tensor)
        self.launches: list[GemmLaunch] = []
        if layer.im2col is not None:
            assert col is not None
            g = layer.im2col
            kernel, info = BUILDS.kernel(found, ctx, IM2COL_SOURCE, "im2col_batched", ())
            grid = (g.oh * g.ow, g.rows, tenants)
            glob, local = launch_sizes(found, info, grid)
            kernel.set_args(
                *[np.int32(v) for v in grid],
                x,
                col,
                np.int64(0),
                np.int64(x_stride),
                np.int64(0),
                np.int64(col_stride),
                *[np.int32(v) for v in (g.ih, g.iw, g.ow, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw)],
            )
            self.launches.append(GemmLaunch(kernel, glob, local, tenants))
            b, b_at = col, Strided(0, col_stride)
        else:
            b, b_at = x, Strided(0, x_stride)
        self.launches.append(
            strided_launch(
                found,
                ctx,
                s,
                tenants,
                self.w,
                b,
                y,
                Strided(0, s.m * s.k),
                b_at,
                Strided(0, y_stride),
                bias=self.bias,
                bias_at=Strided(0, s.m),
                activation=layer.activation,
            )
        )


def upload_weights(queue: cl.CommandQueue, steps: list[_BatchedStep], tenants: NetworkTenants) -> None:
    """Every tenant's folded GEMM weights into the batched layers' buffers, one tenant's weights
    on the host at a time (R copies of a network's weights would not fit the host at large R)."""
    for i, runner in enumerate(tenants.runners):
        weights = operator_weights(runner.graph, seed=tenants.seed + i)
        for step in steps:
            w, b = step.layer.weights(weights)
            cl.enqueue_copy(queue, step.w, w, dst_offset=i * w.nbytes, is_blocking=True)
            cl.enqueue_copy(queue, step.bias, b, dst_offset=i * b.nbytes, is_blocking=True)


class NetExclusive(SharingStrategy):
    """Tenant 0 alone."""

    name = "exclusive"
    same_kernel_as_exclusive = True

    def __init__(self, tenants: NetworkTenants) -> None:
        self.runner = tenants.runners[0]
        self.feeds = tenants.feeds[0]
        self.tenants = 1
        self.launches_per_step = len(self.runner.launches)
        self.footprint = Footprint(runner_bytes(self.runner), 0, 0)
        self._last: np.ndarray | None = None

    def step(self, first: int) -> StepSample:
        t0 = time.perf_counter_ns()
        out = self.runner.run(self.feeds)
        ms = elapsed_ms(t0, time.perf_counter_ns())
        self._last = flat_outputs(self.runner, out)
        return StepSample(ms, (ms,))

    def outputs(self) -> list[np.ndarray]:
        assert self._last is not None, "no step has run"
        return [self._last]

    def release(self) -> None:
        pass  # the runner belongs to the tenants


class NetExclusiveBatched(SharingStrategy):
    """Tenant 0's network on a batch of the R tenants' inputs."""

    name = "exclusive_batched"
    same_kernel_as_exclusive = False

    def __init__(self, tenants: NetworkTenants) -> None:
        self.tenants = tenants.tenants
        graph = rebatched(tenants.runners[0].graph, self.tenants)
        self.runner = GraphRunner(tenants.found, graph, weight_seed=tenants.seed)
        self.feeds = {
            name: np.concatenate([f[name] for f in tenants.feeds], axis=0) for name in self.runner.graph.inputs
        }
        self.launches_per_step = len(self.runner.launches)
        self.footprint = Footprint(runner_bytes(self.runner), 0, 0)
        self._last: dict[str, np.ndarray] | None = None

    def step(self, first: int) -> StepSample:
        t0 = time.perf_counter_ns()
        self._last = self.runner.run(self.feeds)
        ms = elapsed_ms(t0, time.perf_counter_ns())
        return StepSample(ms, (ms,) * self.tenants)

    def outputs(self) -> list[np.ndarray]:
        assert self._last is not None, "no step has run"
        out = self._last
        return [np.concatenate([out[n][i].ravel() for n in self.runner.graph.outputs]) for i in range(self.tenants)]

    def release(self) -> None:
        self.runner.release()


class _NetPerTenant(SharingStrategy):
    """Time-only and space-only: every tenant's inference on that tenant's runner (round robin
    here; space-only overrides ``step``)."""

    same_kernel_as_exclusive = True

    def __init__(self, tenants: NetworkTenants, runners: list[GraphRunner]) -> None:
        self.t = tenants
        self.runners = runners
        self.tenants = len(runners)
        self.launches_per_step = self.tenants * len(runners[0].launches)
        self.footprint = Footprint(0, runner_bytes(runners[0]), 0)
        self._last: list[np.ndarray | None] = [None] * self.tenants

    def _run(self, i: int) -> None:
        runner = self.runners[i]
        self._last[i] = flat_outputs(runner, runner.run(self.t.feeds[i]))

    def step(self, first: int) -> StepSample:
        return round_robin(self._run, self.tenants, first)

    def outputs(self) -> list[np.ndarray]:
        assert all(o is not None for o in self._last), "no step has run"
        return [o for o in self._last if o is not None]

    def release(self) -> None:
        pass  # the runners belong to the tenants


def private_runners(tenants: NetworkTenants) -> list[GraphRunner]:
    """A runner per tenant (its weights, as in ``tenants``), each in a context of its own; all
    released, contexts' programs forgotten too, if one fails."""
    first = tenants.runners[0]
    contexts: list[cl.Context] = []
    runners: list[GraphRunner] = []
    try:
        for i in range(len(tenants.runners)):
            contexts.append(cl.Context([tenants.found.device]))
            runners.append(
                GraphRunner(
                    tenants.found,
                    first.graph,
                    precision=first.precision,
                    weight_seed=tenants.seed + i,
                    config=first.config,
                    context=contexts[-1],
                )
            )
    except BaseException:
        for runner in runners:
            runner.release()
        for ctx in contexts:
            PROGRAMS.forget(ctx)
        raise
    return runners


def release_private(runners: list[GraphRunner]) -> None:
    """Free runners made by ``private_runners`` and drop their contexts' programs."""
    for runner in runners:
        runner.release()
        PROGRAMS.forget(runner.ctx)
    runners.clear()


class NetTimeOnly(_NetPerTenant):
    """One tenant's inference at a time, round robin, every tenant in its own context."""

    name = "time_only"

    def __init__(self, tenants: NetworkTenants) -> None:
        super().__init__(tenants, private_runners(tenants))

    def release(self) -> None:
        release_private(self.runners)


class NetSpaceOnly(_NetPerTenant):
    """Every tenant's inference on its own queue in the shared context, submitted concurrently
    from its own thread."""

    name = "space_only"

    def __init__(self, tenants: NetworkTenants) -> None:
        super().__init__(tenants, tenants.runners)
        self.threads = TenantThreads([self._work(i) for i in range(self.tenants)], "space-only")

    def _work(self, i: int) -> Callable[[], None]:
        return lambda: self._run(i)

    def step(self, first: int) -> StepSample:
        return self.threads.step()

    def release(self) -> None:
        self.threads.close()


class NetSpaceTime(SharingStrategy):
    """Layer by layer on one queue, each step one launch over every tenant: the batched GEMM, or
    the backend's kernel with a tenant axis (per tenant only where neither applies)."""

    name = "space_time"
    same_kernel_as_exclusive = False  # batched layers use the GEMM, not the backend's kernels

    def __init__(self, tenants: NetworkTenants, plan: LayerPlan) -> None:
        found = tenants.found
        self.t = tenants
        self.plan = plan
        self.tenants = len(tenants.runners)
        self.ctx = context_for(found)
        self.queue = cl.CommandQueue(self.ctx, found.device, properties=PROFILING)
        self.memory = Allocations(self.ctx)
        first = tenants.runners[0]
        align = base_alignment(found.device)
        self.footprint = Footprint(0, runner_bytes(first) + space_time_extra_bytes(first, plan, align), 0)
        try:
            self.arenas = tenants.arenas()
            col_stride = align_up(plan.col_elems * FLOAT_BYTES, align) // FLOAT_BYTES
            col = self.memory.new(col_stride * FLOAT_BYTES * self.tenants, "im2col scratch") if col_stride else None
            self.col, self.col_stride = col, col_stride  # the online scheduler's indexed im2col writes here too
            self.batched = {
                i: _BatchedStep(found, self.ctx, layer, self.tenants, self.arenas, self.memory, col, col_stride)
                for i, layer in plan.batched.items()
            }
            upload_weights(self.queue, list(self.batched.values()), tenants)
            self.axis: dict[int, AxisStep] = {}
            self.axis_launches: dict[int, AxisLaunch] = {}
            self.fallbacks: dict[int, str] = {}  # tenant-axis steps that run per tenant after all
            for i, layer in plan.axis.items():
                try:
                    step = AxisStep(found, self.ctx, self.queue, layer, tenants.runners, self.arenas, self.memory)
                    self.axis_launches[i] = step.launch()
                    self.axis[i] = step
                except TenantAxisError as e:
                    self.fallbacks[i] = str(e)
        except BaseException:
            self.release()
            raise
        steps = len(first.launches)
        self.launches_per_step = sum(
            len(self.batched[i].launches) if i in self.batched else 1 if i in self.axis else self.tenants
            for i in range(steps)
        )
        self.host_inputs = [
            {name: np.ascontiguousarray(f[name], np.float32) for name in first.graph.inputs} for f in tenants.feeds
        ]
        self._last: list[dict[str, np.ndarray]] = []

    def step(self, first: int) -> StepSample:
        q = self.queue
        runners = self.t.runners
        outputs = [{n: np.empty(r.graph.tensors[n].shape, np.float32) for n in r.graph.outputs} for r in runners]
        events: list[cl.Event] = []
        t0 = time.perf_counter_ns()
        for runner, host in zip(runners, self.host_inputs, strict=True):
            for name, arr in host.items():
                cl.enqueue_copy(q, runner.buffers[name], arr, is_blocking=False)
        for k in range(len(runners[0].launches)):
            batched = self.batched.get(k)
            if batched is not None:
                events.extend(launch.enqueue(q) for launch in batched.launches)
                continue
            axis = self.axis_launches.get(k)
            if axis is not None:
                events.append(axis.enqueue(q, self.tenants))
                continue
            for runner in runners:
                launch = runner.launches[k]
                events.append(cl.enqueue_nd_range_kernel(q, launch.kernel, launch.global_size, launch.local_size))
        for runner, out in zip(runners, outputs, strict=True):
            for name, arr in out.items():
                cl.enqueue_copy(q, arr, runner.buffers[name], is_blocking=False)
        q.finish()
        ms = elapsed_ms(t0, time.perf_counter_ns())
        self._last = outputs
        return StepSample(ms, (ms,) * self.tenants, device_span_ms(events))

    def outputs(self) -> list[np.ndarray]:
        return [flat_outputs(r, o) for r, o in zip(self.t.runners, self._last, strict=True)]

    def release(self) -> None:
        self.queue.finish()
        self.memory.release()  # the arenas belong to the tenants


class NetSpaceTimeNative(NetSpaceTime):
    """Space-time on the backend's own kernels: every step, convolutions too, one launch of the
    step's kernel with a tenant axis (so every tenant gets the bits of its exclusive run)."""

    name = "space_time_native"
    same_kernel_as_exclusive = True

    def __init__(self, tenants: NetworkTenants, plan: LayerPlan) -> None:
        super().__init__(tenants, plan.without_gemm())


def network_footprint(strategy: str, first: GraphRunner, plan: LayerPlan, align: int, tenants: int) -> Footprint:
    """What ``strategy`` allocates for ``tenants`` tenants, from the first tenant's runner."""
    one = runner_bytes(first)
    if strategy == "space_time_native":
        return Footprint(0, one + space_time_extra_bytes(first, plan.without_gemm(), align), 0)
    if strategy == "exclusive":
        return Footprint(one, 0, 0)
    if strategy == "exclusive_batched":  # the weights once, activations per image
        return Footprint(first.load.weight_bytes, first.load.buffer_bytes, 0)
    if strategy == "space_time":
        return Footprint(0, one + space_time_extra_bytes(first, plan, align), 0)
    return Footprint(0, one, 0)


NETWORK_STRATEGIES = ("exclusive", "exclusive_batched", "time_only", "space_only", "space_time", "space_time_native")


def build_network_strategy(name: str, tenants: NetworkTenants, plan: LayerPlan) -> SharingStrategy:
    """Set up one strategy on the tenants."""
    if name == "exclusive":
        return NetExclusive(tenants)
    if name == "exclusive_batched":
        return NetExclusiveBatched(tenants)
    if name == "time_only":
        return NetTimeOnly(tenants)
    if name == "space_only":
        return NetSpaceOnly(tenants)
    if name == "space_time":
        return NetSpaceTime(tenants, plan)
    if name == "space_time_native":
        return NetSpaceTimeNative(tenants, plan)
    raise ValueError(f"no network strategy {name!r}; known: {list(NETWORK_STRATEGIES)}")


def batched_references(tenants: NetworkTenants) -> list[np.ndarray]:
    """What exclusive_batched must give image r: tenant 0's network on tenant r's input."""
    first = tenants.runners[0]
    return [flat_outputs(first, first.run(f)) for f in tenants.feeds]


__all__ = [
    "NETWORK_STRATEGIES",
    "NetSpaceTime",
    "NetSpaceTimeNative",
    "NetworkTenants",
    "batched_references",
    "build_network_strategy",
    "flat_outputs",
    "network_footprint",
    "private_runners",
    "plan_layers",
    "rebatched",
    "release_private",
    "runner_bytes",
]
