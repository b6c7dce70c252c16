"""Graphs loaded for the fusion planner: their kernels as ``PlanKernel``s with dependencies, their
launches as ``SubKernel``s, the buffers the kernels write, and the fuser as the planner's gate.

Each graph gets its own ``GraphRunner`` (two copies of one model too), so graphs share no buffer
and are independent. The runner gives every tensor a kernel writes its own buffer (a reshape that
runs no kernel shares its input's), but a concat's parts all write one buffer, so the
dependencies come from the buffers each launch binds, not from the graph's edges: a kernel
follows every earlier kernel of its graph that writes a buffer it reads or writes, or reads one it
writes (``plan.buffer_dependencies``; a pointer parameter to non-const memory counts as written,
as ``fuse`` counts it). Two ready kernels therefore never write the same buffer nor read what the
other writes. Each runner runs once on fixed inputs (``make_inputs``, seeded per copy), so every
buffer a kernel reads holds real activations. Release the loaded graphs to free the buffers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.backends.opencl.plan import PlannedKernel, numel
from devicelab.backends.opencl.runner import HOST_DTYPES, GraphRunner
from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import FusedKernel, SubKernel, fuse
from devicelab.fusion.graph_launches import subkernels_for_graph_ops
from devicelab.fusion.kinds import classify_kernels
from devicelab.fusion.parse import parse_kernel
from devicelab.fusion.plan import PlanKernel, buffer_dependencies, interleave
from devicelab.graph.ir import Graph, Operator
from devicelab.graph.ops import Shape
from devicelab.measure.harness import Progress
from devicelab.measure.inputs import INPUT_SEED, make_inputs


@dataclass(frozen=True)
class WrittenBuffer:
    """A buffer some kernel writes: which graph, which tensors it holds, how many bytes they fill."""

    graph: str
    tensors: tuple[str, ...]
    buffer: cl.Buffer
    nbytes: int  # the tensor's bytes (the zeroed slack after them is left alone)
    is_output: bool  # it holds one of the graph's outputs

    @property
    def label(self) -> str:
        """``graph/tensor``, for reports."""
        return f"{self.graph}/{'='.join(self.tensors)}"


@dataclass(frozen=True)
class GraphInfo:
    """One graph of the run, for reports."""

    graph: str  # its name in this run
    model: str
    kernels: int
    input_shapes: dict[str, list[int]]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"graph": self.graph, "model": self.model, "kernels": self.kernels, "input_shapes": self.input_shapes}


class LoadedGraphs:
    """Graphs loaded on one device for planning (see the module docstring); ``release`` frees them."""

    def __init__(self, found: FoundDevice, precision: str) -> None:
        self.found = found
        self.precision = precision
        self.runners: list[GraphRunner] = []
        self.infos: list[GraphInfo] = []
        self.kernels: list[PlanKernel] = []
        self.subs: list[SubKernel] = []  # in the kernels' order
        self.written: list[WrittenBuffer] = []

    @property
    def dtype(self) -> np.dtype[Any]:
        """The host type of the tensors."""
        return HOST_DTYPES[self.precision]

    def release(self) -> None:
        """Free every runner's buffers (the programs stay cached)."""
        for runner in self.runners:
            runner.release()
        self.runners.clear()
        self.subs.clear()
        self.written.clear()


def graph_names(graphs: Sequence[Graph]) -> list[str]:
    """Each graph's name in the run: its own, with ``#2``, ``#3``... on further copies of a name."""
    seen: Counter[str] = Counter()
    out = []
    for g in graphs:
        seen[g.name] += 1
        out.append(g.name if seen[g.name] == 1 else f"{g.name}#{seen[g.name]}")
    return out


def kernel_mbytes(graph: Graph, ops: dict[str, Operator], pk: PlannedKernel, itemsize: int) -> float:
    """MB a planned kernel reads and writes: the activations it reads from outside its own
    operators, the tensor it writes and its operators' weights (a concat or split part: its part,
    read and written)."""
    chain = [ops[name] for name in pk.ops]
    anchor = chain[0]

    def shape(tensor: str) -> Shape:
        return graph.tensors[tensor].shape

    if pk.kernel == "copy_slice":
        if anchor.type == "concat":
            moved = numel(shape(anchor.inputs[pk.part]))
        elif anchor.type == "split":
            moved = numel(shape(anchor.outputs[pk.part]))
        else:
            moved = numel(shape(anchor.inputs[0]))
        return 2 * moved * itemsize / 1e6
    produced = {t for op in chain for t in op.outputs}
    reads = {t for op in chain for t in op.inputs if t not in produced}
    elements = sum(numel(shape(t)) for t in reads) + numel(shape(chain[-1].outputs[0]))
    elements += sum(graph.op_cost(op).params for op in chain)
    return elements * itemsize / 1e6


def _accesses(sub: SubKernel) -> tuple[set[int], set[int]]:
    """The buffers (by handle) a launch reads and writes."""
    reads: set[int] = set()
    writes: set[int] = set()
    for param, value in zip(parse_kernel(sub.source, sub.options, sub.name).params, sub.args, strict=True):
        if isinstance(value, cl.Buffer):
            (writes if param.writes else reads).add(int(value.int_ptr))
    return reads, writes


def load_graphs(
    found: FoundDevice,
    graphs: Sequence[Graph],
    precision: str = "fp32",
    progress: Progress | None = None,
    at: tuple[float, float] = (0.0, 1.0),
) -> LoadedGraphs:
    """Load and run each graph once, and list their kernels in interleaved order with their
    dependencies (see the module docstring)."""
    if not graphs:
        raise ValueError("no graphs to plan")
    names = graph_names(graphs)
    loaded = LoadedGraphs(found, precision)
    per_graph: list[tuple[list[SubKernel], list[PlanKernel], list[tuple[set[int], set[int]]]]] = []
    try:
        for g, (graph, name) in enumerate(zip(graphs, names, strict=True)):
            if progress is not None:
                progress(at[0] + (at[1] - at[0]) * g / len(graphs), f"loading {name}")
            runner = GraphRunner(found, graph, precision=precision)
            loaded.runners.append(runner)
            copy = [gr.name for gr in graphs[: g + 1]].count(graph.name) - 1
            runner.run(make_inputs(runner.graph, seed=INPUT_SEED + copy))  # a second copy sees other inputs
            subs = subkernels_for_graph_ops(runner)
            kinded = classify_kernels(runner.graph, runner.plan)
            ops = {o.name: o for o in runner.graph.operators}
            accesses = [_accesses(s) for s in subs]
            kernels = [
                PlanKernel(
                    index=-1,
                    graph=name,
                    model=graph.name,
                    name=k.name,
                    kernel=k.kernel,
                    kind=k.kind,
                    mflops=k.mflops,
                    mbytes=kernel_mbytes(runner.graph, ops, pk, runner.dtype.itemsize),
                    global_size=s.global_size,
                    local_size=s.local_size,
                )
                for k, pk, s in zip(kinded, runner.plan, subs, strict=True)
            ]
            per_graph.append((subs, kernels, accesses))
            loaded.infos.append(
                GraphInfo(
                    name,
                    graph.name,
                    len(subs),
                    {t: list(runner.graph.tensors[t].shape) for t in runner.graph.inputs},
                )
            )
            loaded.written.extend(_written_buffers(name, runner, accesses))
        _check_disjoint(per_graph, names)
        order = interleave([len(subs) for subs, _, _ in per_graph])
        index = {pos: i for i, pos in enumerate(order)}
        for i, (g, p) in enumerate(order):
            subs, kernels, accesses = per_graph[g]
            deps = buffer_dependencies(accesses)[p]
            k = kernels[p]
            loaded.kernels.append(replace(k, index=i, after=tuple(sorted(index[(g, d)] for d in deps))))
            loaded.subs.append(subs[p])
        if progress is not None:
            progress(at[1], f"{len(loaded.kernels)} kernels of {len(graphs)} graphs loaded")
    except BaseException:
        loaded.release()
        raise
    return loaded


def _written_buffers(
    name: str, runner: GraphRunner, accesses: Sequence[tuple[set[int], set[int]]]
) -> list[WrittenBuffer]:
    """Every buffer a kernel of the runner writes, with the tensors it holds."""
    written = {b for _, writes in accesses for b in writes}
    tensors: dict[int, list[str]] = {}
    buffers: dict[int, cl.Buffer] = {}
    for tensor, buf in runner.buffers.items():
        handle = int(buf.int_ptr)
        if handle in written:
            tensors.setdefault(handle, []).append(tensor)
            buffers[handle] = buf
    missing = written - set(buffers)
    if missing:
        raise FusionError(f"{name}: {len(missing)} buffers written by kernels hold no tensor of the graph")
    outputs = set(runner.graph.outputs)
    out = []
    for handle in sorted(buffers, key=lambda h: tensors[h][0]):
        names = tuple(tensors[handle])
        nbytes = max(numel(runner.graph.tensors[t].shape) for t in names) * runner.dtype.itemsize
        out.append(WrittenBuffer(name, names, buffers[handle], nbytes, bool(outputs.intersection(names))))
    return out


def _check_disjoint(
    per_graph: Sequence[tuple[Any, Any, Sequence[tuple[set[int], set[int]]]]], names: Sequence[str]
) -> None:
    """Graphs must share no buffer a kernel writes (separate runners never do)."""
    touched = [set().union(*(r | w for r, w in acc)) if acc else set() for _, _, acc in per_graph]
    for g, (_, _, acc) in enumerate(per_graph):
        writes = set().union(*(w for _, w in acc)) if acc else set()
        for h, other in enumerate(touched):
            if h != g and writes & other:
                raise FusionError(f"graphs {names[g]} and {names[h]} share buffers: they are not independent")


class FuserGate:
    """The planner's ``accept``: whether ``fuse`` takes a group of kernels (by index) and its
    arguments fit the device's parameter size. Fused kernels and refusals are remembered."""

    def __init__(self, found: FoundDevice, subs: Sequence[SubKernel], wave_size: int, round_to_wave: bool) -> None:
        self.found = found
        self.subs = subs
        self.wave_size = wave_size
        self.round_to_wave = round_to_wave
        self._fused: dict[tuple[int, ...], FusedKernel] = {}
        self.refused: dict[tuple[int, ...], str] = {}

    def __call__(self, group: tuple[int, ...]) -> bool:
        if group in self._fused:
            return True
        if group in self.refused:
            return False
        try:
            fused = fuse([self.subs[i] for i in group], self.wave_size, round_to_wave=self.round_to_wave)
        except FusionError as e:
            self.refused[group] = str(e).strip().splitlines()[0][:300]
            return False
        need, limit = self.argument_bytes(fused), self.found.limits.max_parameter_size
        if need > limit:
            self.refused[group] = f"arguments take {need} bytes, more than the device's {limit}"
            return False
        self._fused[group] = fused
        return True

    def padding(self, group: tuple[int, ...]) -> tuple[int, int] | None:
        """The fused launch's padding and all its work-items (None: the fuser refuses the group)."""
        if not self(group):
            return None
        fused = self._fused[group]
        total = 1
        for g in fused.global_size:
            total *= int(g)
        return fused.padding, total

    def layout(self, group: tuple[int, ...]) -> str | None:
        """The layout the fuser gave an accepted group ("paper" or "packed"; None: not fused)."""
        fused = self._fused.get(group)
        return None if fused is None else str(getattr(fused, "layout", "paper"))

    def argument_bytes(self, fused: FusedKernel) -> int:
        """What the fused kernel's arguments take (CL_DEVICE_MAX_PARAMETER_SIZE bounds it)."""
        pointer = int(getattr(self.found.device, "address_bits", 64)) // 8
        return sum(int(a.nbytes) if isinstance(a, np.generic) else pointer for a in fused.args)

    def fused(self, group: tuple[int, ...]) -> FusedKernel:
        """The fused kernel of an accepted group."""
        if not self(group):
            raise FusionError(f"the fuser refused {group}: {self.refused[group]}")
        return self._fused[group]

    def refusal_reasons(self) -> dict[str, int]:
        """How often each kind of refusal happened (the reason's text before its first colon)."""
        return dict(Counter(reason.split(":")[0] for reason in self.refused.values()))


__all__ = [
    "FuserGate",
    "GraphInfo",
    "LoadedGraphs",
    "WrittenBuffer",
    "graph_names",
    "kernel_mbytes",
    "load_graphs",
]
