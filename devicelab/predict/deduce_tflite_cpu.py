"""Kernel deduction for TensorFlow Lite on a phone's CPU (builtin kernels or XNNPACK), learned
from what ``benchmark_model`` recorded.

On the CPU the tool times every kernel: a builtin kernel's row (``CONV_2D``) covers one TFLite
operator, which implements an IR operator and whatever the converter fused into it (a folded
batch norm, a fused activation); XNNPACK's rows (``Convolution (NHWC, F32) IGEMM``) cover one
delegated operator each. So, like the host CPU's deducer (``deduce_cpu``), this one learns from
the records which rows run what, and needs no runtime internals. It keeps three rules, all
counted over the training records (``learn_tflite_cpu_deducer``):

1. **Fusion.** For each (anchor type, next type): how often the next operator, sole reader of
   the anchor kernel's last output, was covered by the anchor's row, and how often it ran a row
   of its own. On deduction it joins when it did more often than not (``conv2d`` then ``relu``
   joins; ``conv2d`` then ``add`` does not).
2. **Elision.** Operator types that no row ran more often than not (a reshape the runtime
   folds into its reader's view) get no kernel.
3. **Kernel variant.** For each kernel kind and shape class (a convolution's 1x1 or larger
   window, stride 1 or more; another operator's IR type) the kernel the tool ran most often:
   XNNPACK runs a 1x1 stride-1 convolution as ``GEMM`` and a 3x3 one as ``IGEMM``, builtin
   kernels are ``CONV_2D`` for both. A kernel's type is ``<kind>/<variant>`` (``conv2d/convolution_igemm``,
   ``depthwise_conv2d/depthwise_conv_2d``); its features are its anchor operator's.

Runtime rows no operator owns are left out of the measured kernels: their time is part of the
overhead. A record timed as one delegate partition (an old tool's XNNPACK) has no per-operator
times and cannot teach this deducer (``PredictorError`` says so).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from devicelab.graph.ir import Graph
from devicelab.graph.ops import OPAQUE
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import op_kind, op_raw_features
from devicelab.predict.kernels import Kernel
from devicelab.predict.records import ProfileRecord, stat
from devicelab.predict.samples import Sample
from devicelab.predict.tflite_anatomy import TfliteAnatomy, anatomy, label_variant

KIND = "tflite_cpu"
_WINDOWED = frozenset({"conv2d", "conv2d_1x1", "grouped_conv2d", "depthwise_conv2d"})
UNKNOWN_VARIANT = "unknown"


def _kind(graph: Graph, index: int) -> str:
    op = graph.operators[index]
    return op_kind(op.type, op.attrs, [graph.tensors[t].shape for t in op.inputs])


def variant_key(graph: Graph, index: int) -> str:
    """What the kernel variant of an operator depends on: its kind and, for a convolution, its
    window (1x1 or larger) and stride (1 or more), else its IR type (an element-wise ``add`` and a
    ``relu`` are one kind, run by different kernels)."""
    kind = _kind(graph, index)
    op = graph.operators[index]
    if kind not in _WINDOWED:
        return f"{kind}|{op.type}"
    attrs = op.attrs
    window = "1x1" if list(attrs.get("kernel", [1, 1])) == [1, 1] else "kxk"
    stride = "s1" if list(attrs.get("stride", [1, 1])) == [1, 1] else "s2"
    return f"{kind}|{window}|{stride}"


def _kind_key(kind: str) -> str:
    return f"{kind}|*"


def fusion_key(anchor_type: str, next_type: str) -> str:
    """The key of a fusion rule: the anchor's IR type and the next operator's."""
    return f"{anchor_type}|{next_type}"


def _graph_maps(graph: Graph) -> tuple[dict[str, int], dict[str, int], set[str]]:
    producers: dict[str, int] = {}
    readers: dict[str, int] = {}
    for i, o in enumerate(graph.operators):
        for t in o.outputs:
            producers[t] = i
        for t in o.inputs:
            readers[t] = readers.get(t, 0) + 1
    return producers, readers, set(graph.outputs)


def _chain_input(
    graph: Graph,
    index: int,
    owner: dict[int, int],
    chain_end: dict[int, str | None],
    maps: tuple[dict[str, int], dict[str, int], set[str]],
) -> int | None:
    """The anchor whose kernel the operator could join: the first input that is the sole-read,
    last output of an anchor's kernel (None if no input is)."""
    producers, readers, outputs = maps
    for t in graph.operators[index].inputs:
        p = producers.get(t)
        if p is None or readers.get(t) != 1 or t in outputs:
            continue
        a = owner.get(p)
        if a is not None and chain_end.get(a) == t:
            return a
    return None


def _single_output(graph: Graph, index: int) -> str | None:
    outs = graph.operators[index].outputs
    return outs[0] if len(outs) == 1 else None


def _no_partitions(record: ProfileRecord, an: TfliteAnatomy) -> None:
    if an.partitions:
        label = an.rows[min(an.partitions)].kernel
        raise PredictorError(
            f"the record of {record.graph.name!r} timed its CPU run as one delegate partition ({label}): no "
            "per-operator times to learn kernels from (an older benchmark_model's XNNPACK); profile with "
            "delegate cpu, or with a benchmark_model that times XNNPACK operators"
        )


@dataclass
class TfliteCpuDeducer:
    """Deduces the kernels TFLite runs on a phone's CPU, with rules learned from its records."""

    fusion: dict[str, tuple[int, int]]  # fusion key -> (times fused, times not fused)
    elided: dict[str, tuple[int, int]]  # IR type -> (times no row ran it, times a row did)
    variants: dict[str, str]  # variant key (or "<kind>|*") -> the variant the tool ran most
    runtime: str = ""
    kind: str = KIND
    kernels_measured: ClassVar[bool] = True  # every kernel's time is the tool's own

    # -- deduction -----------------------------------------------------------------------------

    def fuses(self, anchor_type: str, next_type: str) -> bool:
        """Whether the learned rules put ``next_type`` into an anchor's kernel."""
        fused, not_fused = self.fusion.get(fusion_key(anchor_type, next_type), (0, 0))
        return fused > not_fused

    def elides(self, op_type: str) -> bool:
        """Whether the runtime runs no kernel for operators of this type (learned)."""
        none, ran = self.elided.get(op_type, (0, 0))
        return none > ran

    def variant(self, graph: Graph, index: int) -> str:
        """The learned kernel variant of an anchor (its kind's most common one for an unseen shape)."""
        hit = self.variants.get(variant_key(graph, index))
        return hit or self.variants.get(_kind_key(_kind(graph, index)), UNKNOWN_VARIANT)

    def assign(self, graph: Graph) -> dict[int, int]:
        """Deduced anchors: operator -> the operator whose kernel runs it (elided ones absent)."""
        maps = _graph_maps(graph)
        owner: dict[int, int] = {}
        chain_end: dict[int, str | None] = {}
        ops = graph.operators
        for i, op in enumerate(ops):
            if self.elides(op.type) or op.type == OPAQUE:  # an opaque operator: no kernel predicted
                continue
            a = _chain_input(graph, i, owner, chain_end, maps)
            if a is not None and self.fuses(ops[a].type, op.type):
                owner[i] = a
            else:
                owner[i] = a = i
            chain_end[a] = _single_output(graph, i)
        return owner

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels TFLite runs for ``graph``, in graph order of their anchors."""
        return [k for k, _ in self.sited_kernels(graph)]

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        """``kernels``, each with its anchor operator (which places it in the list)."""
        members: dict[int, list[int]] = {}
        for i, a in self.assign(graph).items():
            members.setdefault(a, []).append(i)
        ops = graph.operators
        return [
            (
                Kernel(
                    f"{_kind(graph, a)}/{self.variant(graph, a)}",
                    tuple(m),
                    op_raw_features(graph, ops[a]),
                    ops[a].name,
                ),
                a,
            )
            for a, m in sorted(members.items())
        ]

    # -- measured kernels ------------------------------------------------------------------------

    def measured(self, record: ProfileRecord, statistic: str = "median") -> list[Kernel]:
        """The kernels a record timed, typed by the kernel the tool ran, with latencies (ms)."""
        an = anatomy(record)
        _no_partitions(record, an)
        g = record.graph
        out = []
        for a in sorted(an.rows):
            row = an.rows[a]
            assert row.stats is not None  # rows holds timed rows only
            if g.operators[a].type == OPAQUE:
                continue  # no kernel kind to learn (its time is left to the overhead)
            out.append(
                Kernel(
                    f"{_kind(g, a)}/{label_variant(row.kernel)}",
                    tuple(an.members(a)),
                    op_raw_features(g, g.operators[a]),
                    row.name,
                    stat(row.stats, statistic),
                )
            )
        return out

    def samples(self, records: Iterable[ProfileRecord], statistic: str = "median") -> list[Sample]:
        """Training / test samples: measured kernels, end-to-end latency, deduced kernels."""
        return [
            Sample(r.graph.name, tuple(self.measured(r, statistic)), r.e2e_ms(statistic), tuple(self.kernels(r.graph)))
            for r in records
        ]

    def agreement(self, records: Iterable[ProfileRecord]) -> dict[str, float]:
        """How well the rules reproduce records: the share of operators deduced into the kernel
        that measured them, and of measured kernels deduced with their measured type."""
        ops_ok = ops_n = types_ok = types_n = 0
        for rec in records:
            an = anatomy(rec)
            owner = self.assign(rec.graph)
            for i, a in an.owner.items():
                ops_n += 1
                ops_ok += owner.get(i) == a
            for a, row in an.rows.items():
                types_n += 1
                types_ok += owner.get(a) == a and self.variant(rec.graph, a) == label_variant(row.kernel)
        return {
            "operators": ops_n,
            "operator_match": ops_ok / ops_n if ops_n else 1.0,
            "kernels": types_n,
            "kernel_type_match": types_ok / types_n if types_n else 1.0,
        }

    # -- storage -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the predictor artifact."""
        return {
            "kind": KIND,
            "runtime": self.runtime,
            "fusion": {k: list(v) for k, v in sorted(self.fusion.items())},
            "elided": {k: list(v) for k, v in sorted(self.elided.items())},
            "variants": dict(sorted(self.variants.items())),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TfliteCpuDeducer:
        """From ``to_dict`` data."""

        def pairs(m: dict[str, Any]) -> dict[str, tuple[int, int]]:
            return {str(k): (int(v[0]), int(v[1])) for k, v in m.items()}

        return cls(
            pairs(d["fusion"]),
            pairs(d["elided"]),
            {str(k): str(v) for k, v in d["variants"].items()},
            str(d.get("runtime", "")),
        )


def learn_tflite_cpu_deducer(records: Sequence[ProfileRecord]) -> TfliteCpuDeducer:
    """The rules of ``TfliteCpuDeducer`` counted over phone records of one CPU scenario.

    The decisions are counted where the deduction makes them: an operator that reads, as its
    only reader, the last output of a kernel (as measured so far) either was covered by that
    kernel's row or was not. Operators fused into a row no timed operator holds say nothing."""
    if not records:
        raise PredictorError("no records to learn TFLite CPU kernels from")
    fusion: dict[str, list[int]] = {}
    elided: dict[str, list[int]] = {}
    labels: dict[str, Counter[str]] = {}
    for rec in records:
        an = anatomy(rec)
        _no_partitions(rec, an)
        g = rec.graph
        maps = _graph_maps(g)
        chain_end: dict[int, str | None] = {}
        for i, op in enumerate(g.operators):
            if i in an.unresolved or op.type == OPAQUE:  # an opaque operator teaches no rule
                continue
            counts = elided.setdefault(op.type, [0, 0])
            if i in an.uncovered:
                counts[0] += 1
                continue
            counts[1] += 1
            mine = an.owner[i]
            a = _chain_input(g, i, an.owner, chain_end, maps)
            if a is not None:
                fusion.setdefault(fusion_key(g.operators[a].type, op.type), [0, 0])[0 if mine == a != i else 1] += 1
            chain_end[mine] = _single_output(g, i)
        for a, row in an.rows.items():
            if g.operators[a].type == OPAQUE:
                continue
            v = label_variant(row.kernel)
            labels.setdefault(variant_key(g, a), Counter())[v] += 1
            labels.setdefault(_kind_key(_kind(g, a)), Counter())[v] += 1
    return TfliteCpuDeducer(
        {k: (v[0], v[1]) for k, v in fusion.items()},
        {k: (v[0], v[1]) for k, v in elided.items()},
        {k: c.most_common(1)[0][0] for k, c in labels.items()},
        records[-1].runtime,
    )


__all__ = ["KIND", "TfliteCpuDeducer", "fusion_key", "learn_tflite_cpu_deducer", "variant_key"]
