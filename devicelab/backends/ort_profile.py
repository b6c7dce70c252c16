"""ONNX Runtime's per-node profile and the optimized graph it ran: reading both.

``kernel_nodes`` reads the optimized model ORT saved (the kernels it really runs, uniquely named
by ``name_nodes_uniquely``), ``parse_profile`` its profiler's per-run kernel times.
``ort_mapping`` maps those kernels back to the IR operators.
"""

from __future__ import annotations

import bisect
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from devicelab.backends.base import BackendError

_NCHWC_DOMAIN = "com.microsoft.nchwc"


@dataclass
class KernelNode:
    """One node of the optimized model ONNX Runtime really executes."""

    name: str
    op_type: str
    domain: str
    inputs: list[str]
    outputs: list[str]
    activation: str | None = None  # a fused kernel's activation attribute (FusedConv, NCHWc Conv)
    position: int = 0  # index in execution (topological) order

    @property
    def kernel(self) -> str:
        """The kernel's name: its op type, with NCHWc layout kernels marked (``NchwcConv``)."""
        if self.domain == _NCHWC_DOMAIN and not self.op_type.startswith("Reorder"):
            return "Nchwc" + self.op_type
        return self.op_type


@dataclass
class NodeProfile:
    """Per-run kernel durations (ms) of one node, plus the shapes the profiler saw."""

    op_type: str
    per_run_ms: list[float]
    input_shapes: list[list[int]] = field(default_factory=list)
    output_shapes: list[list[int]] = field(default_factory=list)


def name_nodes_uniquely(model: onnx.ModelProto) -> onnx.ModelProto:
    """Give every node a unique name, in place: ORT leaves the nodes it creates by inlining a
    function (HardSwish -> HardSigmoid + Mul) unnamed, and its profiler would then report them
    as ``<OpType>_<internal index>``, which the saved model cannot be matched against."""
    seen: set[str] = set()
    for i, node in enumerate(model.graph.node):
        if not node.name or node.name in seen:
            node.name = f"{node.name or node.op_type}#{i}"
        seen.add(node.name)
    return model


def kernel_nodes(model: onnx.ModelProto) -> list[KernelNode]:
    """Nodes of an optimized model (uniquely named), in a topological order."""
    nodes = []
    for n in model.graph.node:
        act = next((a.s.decode() for a in n.attribute if a.name == "activation" and a.s), None)
        nodes.append(KernelNode(n.name, n.op_type, n.domain, list(n.input), list(n.output), act))
    return topological(nodes)


def topological(nodes: list[KernelNode]) -> list[KernelNode]:
    """Nodes ordered producers first (stable Kahn); ``position`` set to the order."""
    writer = {v: i for i, n in enumerate(nodes) for v in n.outputs if v}
    deps = [{writer[v] for v in n.inputs if v in writer and writer[v] != i} for i, n in enumerate(nodes)]
    users: list[list[int]] = [[] for _ in nodes]
    for i, d in enumerate(deps):
        for j in d:
            users[j].append(i)
    indeg = [len(d) for d in deps]
    ready = deque(i for i, d in enumerate(indeg) if d == 0)
    order: list[int] = []
    while ready:
        i = ready.popleft()
        order.append(i)
        for u in users[i]:
            indeg[u] -= 1
            if indeg[u] == 0:
                ready.append(u)
    order += [i for i in range(len(nodes)) if i not in set(order)]  # a cycle cannot happen; keep every node
    out = [nodes[i] for i in order]
    for pos, n in enumerate(out):
        n.position = pos
    return out


def _shapes(arg: Any) -> list[list[int]]:
    """ORT's ``input_type_shape`` ([{"float": [1, 3, 8, 8]}, ...]) as plain shapes."""
    shapes: list[list[int]] = []
    if isinstance(arg, list):
        for item in arg:
            if isinstance(item, dict):
                for dims in item.values():
                    shapes.append([int(d) for d in dims])
    return shapes


def parse_profile(
    path: Path, skip_runs: int = 1, keep: Sequence[int] | None = None
) -> tuple[dict[str, NodeProfile], list[float]]:
    """Per-node kernel times of each run after the first ``skip_runs`` (or of the runs whose
    0-based indices ``keep`` lists, in that order), and each such run's duration (ms).

    ONNX Runtime writes Chrome-trace events: one ``model_run`` (cat ``Session``) per inference and
    one ``<node>_kernel_time`` (cat ``Node``) per executed kernel, times in microseconds. Kernel
    events are assigned to the run whose time span holds them; a node that did not show up in a
    run counts 0 there.
    """
    raw = json.loads(path.read_text())
    events = raw.get("traceEvents", []) if isinstance(raw, dict) else raw
    runs = sorted(
        (e for e in events if e.get("cat") == "Session" and e.get("name") == "model_run"), key=lambda e: e["ts"]
    )
    starts = [e["ts"] for e in runs]
    wanted = list(range(skip_runs, len(runs))) if keep is None else list(keep)
    if not wanted:
        raise BackendError(f"the onnxruntime profile holds {len(runs)} runs, expected more than {skip_runs}")
    if max(wanted) >= len(runs) or min(wanted) < 0:
        raise BackendError(f"the onnxruntime profile holds {len(runs)} runs, expected run {max(wanted)} in it")
    slot = {run: i for i, run in enumerate(wanted)}
    measured = len(wanted)
    profiles: dict[str, NodeProfile] = {}
    for e in events:
        name = e.get("name", "")
        if e.get("cat") != "Node" or not name.endswith("_kernel_time"):
            continue
        run = slot.get(bisect.bisect_right(starts, e["ts"]) - 1, -1)
        if run < 0:
            continue
        node = name[: -len("_kernel_time")]
        args = e.get("args", {})
        p = profiles.get(node)
        if p is None:
            p = profiles[node] = NodeProfile(
                str(args.get("op_name", "")),
                [0.0] * measured,
                _shapes(args.get("input_type_shape")),
                _shapes(args.get("output_type_shape")),
            )
        p.per_run_ms[run] += float(e.get("dur", 0)) / 1000.0
    run_ms = [float(runs[i]["dur"]) / 1000.0 for i in wanted]
    return profiles, run_ms


__all__ = ["KernelNode", "NodeProfile", "kernel_nodes", "name_nodes_uniquely", "parse_profile", "topological"]
