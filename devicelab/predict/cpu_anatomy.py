"""What a recorded run of the host CPU runtime says about its kernels.

The CPU backend records, per IR operator, the kernel that ran it (``OpTiming.kernel``, e.g.
``NchwcConv``, ``FusedConv``, ``Relu``) or the kernel node it was fused into (``fused_into``),
plus the kernels the runtime inserted on its own (``ReorderInput`` / ``ReorderOutput`` around
its blocked NCHWc layout). ``anatomy`` maps each operator onto the kernel that computed it and
``effective_layouts`` the layout each kernel wrote: the facts ``cpu_learning`` learns its rules
from and ``CpuDeducer.measured`` types measured kernels by.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from devicelab.graph.ir import Graph
from devicelab.predict.cpu_rules import BLOCKED, PLAIN, layout_of
from devicelab.predict.records import ProfileRecord


@dataclass
class Anatomy:
    """How a record's operators map onto the kernels that ran them."""

    anchor: dict[int, int]  # op index -> index of the op whose kernel computes it
    layout: dict[int, str]  # anchor op index -> layout of its kernel (by its name)
    kernel: dict[int, str]  # anchor op index -> recorded kernel name
    effective: dict[int, str] = field(default_factory=dict)  # anchor -> layout of the tensor it writes


def measured_reorders(record: ProfileRecord, name: str) -> Counter[tuple[int, ...]]:
    """Plain (C, H, W) shapes of the recorded reorders of one direction."""
    out: Counter[tuple[int, ...]] = Counter()
    for r in record.ops:
        if r.index is None and r.kernel == name:
            plain = r.input_shapes[0] if name == "ReorderInput" else r.output_shapes[0]
            out[tuple(int(v) for v in plain[1:])] += 1
    return out


def producer_anchors(graph: Graph, anchor: dict[int, int], i: int, producer: dict[str, int]) -> list[int]:
    """The anchors of the kernels that wrote operator ``i``'s inputs (graph inputs left out)."""
    return [anchor.get(producer[t], producer[t]) for t in graph.operators[i].inputs if t in producer]


def effective_layouts(record: ProfileRecord, an: Anatomy) -> dict[str, tuple[int, int]]:
    """Fill ``an.effective`` for a record: a plain-named kernel reading only blocked tensors
    writes a blocked tensor unless a reorder ran on its input. Returns, per operator type, how
    often such a kernel ran without / with that reorder."""
    g = record.graph
    producer = {t: i for i, o in enumerate(g.operators) for t in o.outputs}
    reorders = measured_reorders(record, "ReorderOutput")
    reordered: set[str] = set()
    counts: dict[str, list[int]] = {}
    for i in sorted(an.layout):
        if an.anchor.get(i, i) != i:
            continue
        if an.layout[i] == BLOCKED:
            an.effective[i] = BLOCKED
            continue
        op = g.operators[i]
        prods = producer_anchors(g, an.anchor, i, producer)
        if not prods or any(an.effective.get(p, PLAIN) != BLOCKED for p in prods):
            an.effective[i] = PLAIN
            continue
        had = False
        for t in op.inputs:
            if t not in producer:
                continue
            if t in reordered:
                had = True
                continue
            key = tuple(int(v) for v in g.tensors[t].shape[1:])
            if reorders[key] > 0:
                reorders[key] -= 1
                reordered.add(t)
                had = True
        c = counts.setdefault(op.type, [0, 0])
        c[1 if had else 0] += 1
        an.effective[i] = PLAIN if had else BLOCKED
    return {k: (v[0], v[1]) for k, v in counts.items()}


def anatomy(record: ProfileRecord) -> Anatomy:
    """Anchors, fused operators and layouts of a recorded run."""
    graph = record.graph
    index = {o.name: i for i, o in enumerate(graph.operators)}
    rows = {r.index: r for r in record.ops if r.index is not None}
    anchor: dict[int, int] = {}
    layout: dict[int, str] = {}
    kernel: dict[int, str] = {}
    for i, r in rows.items():
        if r.fused_into is None:
            anchor[i] = i
            layout[i] = layout_of(r.kernel)
            kernel[i] = r.kernel
    producers = graph.producers()
    for i, r in rows.items():
        if r.fused_into is None:
            continue
        owner = record.kernel_owner.get(r.fused_into)
        if owner in index and index[owner] in anchor:
            anchor[i] = index[owner]
            continue
        # Without the owner map: the nearest upstream operator with a kernel of the same name.
        seen, queue, found = set(), [i], None
        while queue and found is None:
            j = queue.pop(0)
            for t in graph.operators[j].inputs:
                p = producers.get(t)
                if p is None or p.name in seen:
                    continue
                seen.add(p.name)
                k = index[p.name]
                if k in kernel and kernel[k] == r.kernel:
                    found = k
                    break
                queue.append(k)
        anchor[i] = found if found is not None else i
        if found is None:
            layout[i], kernel[i] = layout_of(r.kernel), r.kernel
    return Anatomy(anchor, layout, kernel)


__all__ = ["Anatomy", "anatomy", "effective_layouts", "measured_reorders", "producer_anchors"]
