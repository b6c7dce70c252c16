"""Kernel deduction for the host CPU runtime (ONNX Runtime), with rules learned from what it recorded.

``CpuDeducer`` applies three rules that ``cpu_learning.learn_cpu_deducer`` learns from the CPU
backend's records (``cpu_anatomy`` reads them), so no runtime internals are written down here:

1. **Layout.** Whether an operator's kernel runs in the runtime's blocked layout (kernel name
   starting ``Nchwc``) or the plain one: a small decision tree per IR operator type over
   channel alignments (to 4 / 8 / 16 / 32), groups, window, and the layout of its producers.
   Some plain-named kernels (``Add``, ``Relu``, an aligned ``Concat``) work on blocked tensors
   as they are: when such a kernel read only blocked tensors and no reorder ran before it, its
   output is blocked too. The tree learns the layout each operator *writes*, so it learns both.
2. **Epilogue fusion.** For each (anchor type, anchor layout, next type, next arity): how often
   the next operator, sole reader of the anchor chain's output, was fused into the anchor and
   how often it was not. It is fused on deduction when fusion was seen more often than not.
3. **Layout changes.** A reorder kernel on every tensor that crosses from one layout to the
   other (graph inputs and outputs are plain), except where the records show the runtime
   reads a plain input directly (a convolution with fewer input channels than the block); the
   block (the channel padding of the reorders) is read from the reorders' shapes.

A kernel's type is ``<kind>/<layout>`` (``conv2d/nchwc``, ``elementwise/nchw``,
``reorder_output/nchwc``): kinds as ``features.op_kind``; its features are the anchor's. Applying
the rules needs neither scikit-learn nor a runtime: the trees are stored as arrays.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from devicelab.graph.ir import Graph
from devicelab.predict.cpu_anatomy import anatomy, effective_layouts, measured_reorders
from devicelab.predict.cpu_rules import (
    BLOCKED,
    KIND,
    PLAIN,
    REORDERS,
    LayoutRule,
    earlier_claim,
    fusion_key,
    layout_key,
    layout_row_of_key,
    others_layout,
)
from devicelab.predict.features import RAW_NAMES, op_kind, op_raw_features, raw_features
from devicelab.predict.kernels import Kernel
from devicelab.predict.records import ProfileRecord, stat
from devicelab.predict.samples import Sample


@functools.lru_cache(maxsize=4096)
def _move_raw(shape: tuple[int, ...]) -> tuple[float, ...]:
    return raw_features("relu", [shape], [shape], {})


_BLOCKED_CONV_KINDS = frozenset({"conv2d", "conv2d_1x1", "depthwise_conv2d", "grouped_conv2d"})
_CIN, _COUT = RAW_NAMES.index("input_channels"), RAW_NAMES.index("output_channels")
_FLOPS, _WEIGHTS = RAW_NAMES.index("flops"), RAW_NAMES.index("kernel_size")


@functools.lru_cache(maxsize=16384)
def blocked_raw(raw: tuple[float, ...], kind: str, block: int) -> tuple[float, ...]:
    """Features of a convolution as the blocked layout computes it: its FLOPs and weights
    counted on channels rounded up to the block.

    A blocked kernel works on whole blocks of ``block`` channels (a convolution from 24 to 40
    channels computes 32 x 48), and its time follows that work, not the operator's (see
    docs/predictors.md, "Why the predictor library is built as it is").
    Input channels fewer than one block are read from the plain layout directly, so they are
    not padded; a depthwise convolution pads its one channel count once."""
    cin, cout = raw[_CIN], raw[_COUT]
    if cin <= 0 or cout <= 0:
        return raw
    pad_in = math.ceil(cin / block) * block / cin if cin >= block else 1.0
    factor = pad_in if kind == "depthwise_conv2d" else pad_in * math.ceil(cout / block) * block / cout
    if factor == 1.0:
        return raw
    out = list(raw)
    out[_FLOPS] *= factor
    out[_WEIGHTS] *= factor
    return tuple(out)


def move_raw(shape: Sequence[int]) -> tuple[float, ...]:
    """Features of a kernel that moves one tensor (a reorder): an element-wise pass over it."""
    return _move_raw(tuple(int(v) for v in shape))


@dataclass
class CpuDeducer:
    """Deduces the host CPU runtime's kernels with rules learned from its records (``learn_cpu_deducer``)."""

    layouts: dict[str, LayoutRule]  # IR operator type -> the layout its kernel writes
    # type -> (ran on blocked inputs as they were, needed a reorder): the evidence behind the
    # layout-following the trees learned, kept for reports
    follows: dict[str, tuple[int, int]]
    fusion: dict[str, tuple[int, int]]  # fusion key -> (times fused, times not fused)
    block: int  # channel block of the blocked layout (0: the runtime never used it)
    direct_input: dict[str, tuple[int, int]]  # reader type -> (small plain input read directly, reordered)
    runtime: str = ""
    # features of a blocked convolution describe the padded problem it computes (see
    # ``blocked_raw``); False for a deducer stored before that (its models learned unpadded ones)
    padded_work: bool = True
    kind: str = KIND
    _memo: dict[tuple[Any, ...], str] = field(default_factory=dict, repr=False, compare=False)
    _fusable_types: set[str] | None = field(default=None, repr=False, compare=False)

    def _work(self, kind: str, layout: str, raw: tuple[float, ...]) -> tuple[float, ...]:
        if not self.padded_work or layout != BLOCKED or kind not in _BLOCKED_CONV_KINDS or self.block <= 0:
            return raw
        return blocked_raw(raw, kind, self.block)

    def below_block(self, shape: Sequence[int]) -> bool:
        """Whether a tensor has fewer channels than one block (the runtime may read it unreordered)."""
        return len(shape) == 4 and self.block > 0 and int(shape[1]) < self.block

    # -- deduction -----------------------------------------------------------------------------

    def kernel_layout(self, graph: Graph, op_index: int, producer_layouts: Sequence[str], reads_input: bool) -> str:
        """The learned layout one operator's kernel writes (unseen types run plain)."""
        op = graph.operators[op_index]
        rule = self.layouts.get(op.type)
        if rule is None:
            return PLAIN
        if rule.constant is not None:
            return rule.constant
        key = layout_key(graph, op_index, producer_layouts, reads_input)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = rule.predict(layout_row_of_key(key))
        return hit

    def fuses(
        self, anchor_type: str, layout: str, next_type: str, arity: int, earlier: bool = False, others: str = "-"
    ) -> bool:
        """Whether the learned rules fuse ``next_type`` into an anchor's kernel."""
        key = fusion_key(anchor_type, layout, next_type, arity, earlier, others)
        fused, not_fused = self.fusion.get(key, (0, 0))
        return fused > not_fused

    def _fusable(self) -> set[str]:
        """Operator types some rule fuses into an anchor (others never join a kernel)."""
        if self._fusable_types is None:
            self._fusable_types = {k.split("|")[2] for k, (f, nf) in self.fusion.items() if f > nf}
        return self._fusable_types

    def assign(self, graph: Graph) -> tuple[dict[int, int], dict[int, str]]:
        """Deduced anchors (op index -> anchor op index) and the layout each operator writes.

        Operators are visited in order; each either joins the kernel of the chain that feeds it
        (it is the sole reader of that chain's last output and the rules fuse it; the first
        input that qualifies wins) or starts a kernel of its own, whose layout the layout rule
        gives from its producers' layouts. Producers are settled before their readers, so the
        rule keys see the layouts of all inputs."""
        ops = graph.operators
        producers: dict[str, int] = {}
        n_readers: dict[str, int] = {}
        for i, o in enumerate(ops):
            for t in o.outputs:
                producers[t] = i
            for t in o.inputs:
                n_readers[t] = n_readers.get(t, 0) + 1
        inputs, outputs = set(graph.inputs), set(graph.outputs)
        anchor: dict[int, int] = {}
        layout: dict[int, str] = {}
        chain_end: dict[int, str] = {}  # anchor -> the tensor its kernel writes last
        fusable = self._fusable()
        for i, op in enumerate(ops):
            pl = [layout[producers[t]] if t in producers else PLAIN for t in op.inputs]
            joined = False
            for k, t in enumerate(op.inputs if op.type in fusable else ()):
                p = producers.get(t)
                if p is None or n_readers.get(t) != 1 or t in outputs:
                    continue
                a = anchor[p]
                if chain_end.get(a) != t or len(ops[p].outputs) != 1:
                    continue
                earlier = len(op.inputs) > 1 and earlier_claim(graph, op.inputs, t, ops[a].type, producers, n_readers)
                others = others_layout([v for j, v in enumerate(pl) if j != k])
                if self.fuses(ops[a].type, layout[a], op.type, len(op.inputs), earlier, others):
                    anchor[i], layout[i], chain_end[a] = a, layout[a], op.outputs[0]
                    joined = True
                    break
            if joined:
                continue
            anchor[i] = i
            rule = self.layouts.get(op.type)
            if rule is None or rule.constant is not None:  # most types: no features needed
                layout[i] = rule.constant if rule is not None and rule.constant else PLAIN
            else:
                layout[i] = self.kernel_layout(
                    graph, i, [v for t, v in zip(op.inputs, pl) if t in producers], any(t in inputs for t in op.inputs)
                )
            if len(op.outputs) == 1:
                chain_end[i] = op.outputs[0]
        return anchor, layout

    def boundaries(
        self, graph: Graph, anchor: dict[int, int], layout: dict[int, str], apply_direct: bool = True
    ) -> list[tuple[str, int | None, str]]:
        """Tensors that change layout: (tensor, reading op or None for a graph output, reorder kind).

        ``apply_direct=False`` keeps the reorders of small inputs that the rules say the runtime
        reads directly (learning counts how often it did)."""
        ops = graph.operators
        producer = {t: i for i, o in enumerate(ops) for t in o.outputs}
        out: list[tuple[str, int | None, str]] = []
        seen: set[tuple[str, str]] = set()
        for i, o in enumerate(ops):
            a = anchor.get(i, i)
            if a != i:
                continue  # a fused operator reads through its anchor's kernel
            for t in o.inputs:
                p = producer.get(t)
                pa = anchor.get(p, p) if p is not None else None
                if pa == a:
                    continue
                src = layout.get(pa, PLAIN) if pa is not None else PLAIN
                if src == layout[a]:
                    continue
                kind = "reorder_input" if layout[a] == BLOCKED else "reorder_output"
                if kind == "reorder_input" and apply_direct and self._reads_directly(o.type, graph.tensors[t].shape):
                    continue
                if (t, kind) not in seen:
                    seen.add((t, kind))
                    out.append((t, i, kind))
        for t in graph.outputs:
            p = producer.get(t)
            if p is not None and layout.get(anchor.get(p, p)) == BLOCKED and (t, "reorder_output") not in seen:
                out.append((t, None, "reorder_output"))
        return out

    def _reads_directly(self, reader_type: str, shape: Sequence[int]) -> bool:
        if not self.below_block(shape):
            return False
        direct, reordered = self.direct_input.get(reader_type, (0, 0))
        return direct > reordered

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels the runtime runs for ``graph``: fused anchors, then the reorders."""
        return [k for k, _ in self.sited_kernels(graph)]

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        """``kernels``, each with the operator that places it in the list: its anchor, or the
        operator that reads a reordered tensor (the number of operators for a graph output)."""
        anchor, layout = self.assign(graph)
        members: dict[int, list[int]] = {}
        for i, a in anchor.items():
            members.setdefault(a, []).append(i)
        t = graph.tensors
        ops = graph.operators
        out = []
        for a, m in members.items():  # anchors in graph order: an anchor precedes what it absorbs
            op = ops[a]
            shapes_in = [t[n].shape for n in op.inputs]
            kind = op_kind(op.type, op.attrs, shapes_in)
            raw = self._work(kind, layout[a], op_raw_features(graph, op))
            out.append((Kernel(f"{kind}/{layout[a]}", tuple(m), raw, op.name), a))
        for tensor, reader, kind in self.boundaries(graph, anchor, layout):
            kernel = Kernel(f"{kind}/{BLOCKED}", (), move_raw(t[tensor].shape), f"{kind}:{tensor}")
            out.append((kernel, len(ops) if reader is None else reader))
        return out

    # -- measured kernels ------------------------------------------------------------------------

    def measured(self, record: ProfileRecord, statistic: str = "median") -> list[Kernel]:
        """The kernels a record measured, typed like ``kernels`` types them, with latencies (ms).

        Runtime kernels other than reorders (copies) are left out: the deduction never
        predicts them, so their time belongs to the overhead."""
        g = record.graph
        an = anatomy(record)
        effective_layouts(record, an)
        members: dict[int, list[int]] = {}
        for i, a in an.anchor.items():
            members.setdefault(a, []).append(i)
        rows = {r.index: r for r in record.ops if r.index is not None}
        t = g.tensors
        out = []
        for a in sorted(members):
            r = rows[a]
            if r.stats is None:
                continue
            op = g.operators[a]
            kind = op_kind(op.type, op.attrs, [t[n].shape for n in op.inputs])
            layout = an.effective.get(a, an.layout.get(a, PLAIN))
            out.append(
                Kernel(
                    f"{kind}/{layout}",
                    tuple(members[a]),
                    self._work(kind, layout, op_raw_features(g, op)),
                    r.kernel,
                    stat(r.stats, statistic),
                )
            )
        for r in record.ops:
            if r.index is None and r.kernel in REORDERS and r.stats is not None:
                plain = r.input_shapes[0] if r.kernel == "ReorderInput" else r.output_shapes[0]
                out.append(
                    Kernel(f"{REORDERS[r.kernel]}/{BLOCKED}", (), move_raw(plain), r.name, stat(r.stats, statistic))
                )
        return out

    def samples(self, records: Iterable[ProfileRecord], statistic: str = "median") -> list[Sample]:
        """Training / test samples: measured kernels, end-to-end latency, deduced kernels."""
        return [
            Sample(r.graph.name, tuple(self.measured(r, statistic)), r.e2e_ms(statistic), tuple(self.kernels(r.graph)))
            for r in records
        ]

    def agreement(self, records: Iterable[ProfileRecord]) -> dict[str, float]:
        """How well the rules reproduce records: share of operators deduced with their measured
        anchor and layout; share of measured reorders matched by a deduced one (kind and shape)."""
        ops_ok = ops_n = reorder_ok = reorder_n = deduced_reorders = 0
        for rec in records:
            an = anatomy(rec)
            effective_layouts(rec, an)
            anchor, layout = self.assign(rec.graph)
            for i in an.anchor:
                ops_n += 1
                a = anchor[i]
                ops_ok += an.anchor[i] == a and an.effective.get(a) == layout[a]
            t = rec.graph.tensors
            deduced: Counter[tuple[Any, ...]] = Counter()
            for tensor, _, kind in self.boundaries(rec.graph, anchor, layout):
                deduced[(kind, *[int(v) for v in t[tensor].shape[1:]])] += 1
                deduced_reorders += 1
            for name, kind in REORDERS.items():
                for shape, n in measured_reorders(rec, name).items():
                    reorder_n += n
                    hit = min(n, deduced[(kind, *shape)])
                    reorder_ok += hit
        return {
            "operators": ops_n,
            "operator_match": ops_ok / ops_n if ops_n else 1.0,
            "reorders_measured": reorder_n,
            "reorders_deduced": deduced_reorders,
            "reorder_match": reorder_ok / reorder_n if reorder_n else 1.0,
        }

    # -- storage -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the predictor artifact."""
        return {
            "kind": KIND,
            "runtime": self.runtime,
            "block": self.block,
            "layouts": {k: v.to_dict() for k, v in sorted(self.layouts.items())},
            "follows": {k: list(v) for k, v in self.follows.items()},
            "fusion": {k: list(v) for k, v in self.fusion.items()},
            "direct_input": {k: list(v) for k, v in self.direct_input.items()},
            "padded_work": self.padded_work,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CpuDeducer:
        """From ``to_dict`` data."""

        def pairs(m: dict[str, Any]) -> dict[str, tuple[int, int]]:
            return {str(k): (int(v[0]), int(v[1])) for k, v in m.items()}

        return cls(
            {str(k): LayoutRule.from_dict(v) for k, v in d["layouts"].items()},
            pairs(d.get("follows", {})),
            pairs(d["fusion"]),
            int(d["block"]),
            pairs(d.get("direct_input", {})),
            str(d.get("runtime", "")),
            bool(d.get("padded_work", False)),
        )


__all__ = ["CpuDeducer", "blocked_raw", "move_raw"]
