"""The operators a fusion sweep draws from: networks loaded on one device, their kernels classified.

``load_pool`` loads each network with a ``GraphRunner`` (one per network, kept alive: the
sub-kernels' arguments are its buffers and uploaded weights) and runs it once on the lab's fixed
inputs, so that every intermediate buffer holds the activations the operator really reads (an
unwritten buffer may hold anything, denormals included, which would skew a CPU's timing). Each
planned kernel with a sweep kind (``kinds``) becomes a ``PoolOperator``: its real shapes, launch
configuration and arguments as a ``SubKernel``, with its kind and MFLOPs.

Without graphs, the pool holds the six networks of ParallelFusion's Table 1 from the zoo
(``ZooEntry.table1``: DeepLab-V3 on MobileNet-V2, Inception-V3, ResNet-V2-50, SqueezeNet 1.0,
MobileNet-V1 and V2). Release the pool (or use it as a context manager) to free the buffers.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.backends.opencl.runner import HOST_DTYPES, GraphRunner
from devicelab.fusion.fuse import SubKernel
from devicelab.fusion.graph_launches import subkernels_for_graph_ops
from devicelab.fusion.kinds import KINDS, KindedKernel, classify_kernels
from devicelab.fusion.results import OperatorRef
from devicelab.graph.ir import Graph
from devicelab.measure.harness import Progress, ReportFn
from devicelab.measure.inputs import make_inputs


@dataclass(frozen=True)
class PoolOperator:
    """One kernel of a loaded network that a sweep may fuse: what it is and how to launch it."""

    ref: OperatorRef
    sub: SubKernel  # its arguments are the network runner's buffers

    @property
    def kind(self) -> str:
        """Its sweep kind."""
        return self.ref.kind


class OperatorPool:
    """Networks loaded on one device and their classified kernels (see the module docstring)."""

    def __init__(
        self,
        found: FoundDevice,
        precision: str,
        runners: dict[str, GraphRunner],
        operators: list[PoolOperator],
        unkinded: dict[str, int],
        load_ms: dict[str, float],
    ) -> None:
        self.found = found
        self.precision = precision
        self.runners = runners
        self.operators = operators
        self.unkinded = unkinded  # per model, kernels with no sweep kind (concat copies, resize...)
        self.load_ms = load_ms  # per model: loading and the first run

    @property
    def dtype(self) -> np.dtype[Any]:
        """The host type of the runners' tensors."""
        return HOST_DTYPES[self.precision]

    @property
    def models(self) -> tuple[str, ...]:
        """The networks, in the order they were loaded."""
        return tuple(self.runners)

    def by_kind(self) -> dict[str, list[PoolOperator]]:
        """The operators of each kind (every kind present, possibly with none), in load order."""
        out: dict[str, list[PoolOperator]] = {k: [] for k in KINDS}
        for op in self.operators:
            out[op.kind].append(op)
        return out

    def of_model(self, model: str) -> list[PoolOperator]:
        """The operators of one network, in launch order."""
        return [op for op in self.operators if op.ref.model == model]

    def release(self) -> None:
        """Free every runner's buffers (the programs stay cached)."""
        for runner in self.runners.values():
            runner.release()
        self.runners.clear()
        self.operators.clear()

    def __enter__(self) -> OperatorPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def table1_models() -> list[str]:
    """The zoo names of the six networks of ParallelFusion's Table 1."""
    from devicelab.graph import zoo

    return sorted(name for name, entry in zoo.entries().items() if entry.table1)


def table1_graphs() -> list[Graph]:
    """The six Table-1 networks, built from the zoo."""
    from devicelab.graph import zoo

    return [zoo.build(name) for name in table1_models()]


def _pool_operators(model: str, runner: GraphRunner) -> tuple[list[PoolOperator], int]:
    kinded: list[KindedKernel] = classify_kernels(runner.graph, runner.plan)
    subs = subkernels_for_graph_ops(runner)
    out = []
    for k, sub in zip(kinded, subs, strict=True):
        if k.kind is None:
            continue
        ref = OperatorRef(model, k.name, k.kernel, k.op_type, k.kind, k.mflops, sub.global_size, sub.local_size)
        out.append(PoolOperator(ref, sub))
    return out, len(kinded) - len(out)


def load_pool(
    found: FoundDevice,
    graphs: Sequence[Graph] | None = None,
    precision: str = "fp32",
    progress: ReportFn | None = None,
) -> OperatorPool:
    """Load networks (the six Table-1 networks by default) on a device, run each once, and classify
    their kernels. ``progress`` gets (fraction, message) after each network and may raise to stop."""
    report = Progress(progress)
    graphs = list(graphs) if graphs is not None else table1_graphs()
    names = [g.name for g in graphs]
    if len(set(names)) != len(names):
        raise ValueError(f"two graphs share a name: {names}")
    runners: dict[str, GraphRunner] = {}
    operators: list[PoolOperator] = []
    unkinded: dict[str, int] = {}
    load_ms: dict[str, float] = {}
    try:
        for i, graph in enumerate(graphs):
            report(i / len(graphs), f"loading {graph.name}")
            t0 = time.perf_counter_ns()
            runner = runners[graph.name] = GraphRunner(found, graph, precision=precision)
            runner.run(make_inputs(runner.graph))  # every buffer an operator reads now holds its activations
            load_ms[graph.name] = (time.perf_counter_ns() - t0) / 1e6
            ops, unkinded[graph.name] = _pool_operators(graph.name, runner)
            operators.extend(ops)
        report(1.0, f"{len(operators)} operators of {len(graphs)} networks loaded")
    except BaseException:
        for runner in runners.values():
            runner.release()
        raise
    return OperatorPool(found, precision, runners, operators, unkinded, load_ms)


__all__ = ["OperatorPool", "OperatorRef", "PoolOperator", "load_pool", "table1_graphs", "table1_models"]
