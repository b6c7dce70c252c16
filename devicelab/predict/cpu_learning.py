"""Learning the host CPU runtime's rules from what it recorded: the training side of ``deduce_cpu``.

``learn_cpu_deducer`` reads recorded runs (``cpu_anatomy``: which kernel computed each
operator, in which layout, which reorders ran) and learns the three rules ``CpuDeducer``
applies: a layout tree per IR operator type (scikit-learn, imported only here and only when
learning), fusion counts per ``cpu_rules.fusion_key``, and the channel block and direct reads of
the layout changes. Records of the probe graphs (``cpu_probes``) show fusions a NAS training set
lacks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from devicelab.predict.cpu_anatomy import Anatomy, anatomy, effective_layouts, measured_reorders, producer_anchors
from devicelab.predict.cpu_rules import (
    PLAIN,
    LayoutRule,
    earlier_claim,
    fusion_key,
    layout_row,
    others_layout,
    reader_counts,
)
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.records import ProfileRecord
from devicelab.predict.trees import from_sklearn


def learn_cpu_deducer(records: Sequence[ProfileRecord], seed: int = 0) -> CpuDeducer:
    """Learn layout, fusion and reorder rules from recorded runs (scikit-learn fits the layout trees)."""
    from sklearn.tree import DecisionTreeClassifier

    if not records:
        raise PredictorError("no records to learn the CPU runtime's rules from")
    anatomies = [anatomy(r) for r in records]
    follows_counts: Counter[str] = Counter()
    needs_reorder: Counter[str] = Counter()
    for rec, an in zip(records, anatomies):
        for t, (direct, reordered) in effective_layouts(rec, an).items():
            follows_counts[t] += direct
            needs_reorder[t] += reordered
    follows = {t: (follows_counts[t], needs_reorder[t]) for t in sorted(set(follows_counts) | set(needs_reorder))}

    rows: dict[str, list[list[float]]] = {}
    labels: dict[str, list[str]] = {}
    fusion: Counter[str] = Counter()
    unfused: Counter[str] = Counter()
    reorder_channels: list[int] = []
    for rec, an in zip(records, anatomies):
        g = rec.graph
        producer = {t: i for i, o in enumerate(g.operators) for t in o.outputs}
        consumers = g.consumers()
        n_readers = reader_counts(g)
        outputs = set(g.outputs)
        index = {o.name: i for i, o in enumerate(g.operators)}
        for i in sorted(an.effective):
            op = g.operators[i]
            pl = [an.effective[p] for p in producer_anchors(g, an.anchor, i, producer)]
            rows.setdefault(op.type, []).append(layout_row(g, i, pl, any(t in g.inputs for t in op.inputs)))
            labels.setdefault(op.type, []).append(an.effective[i])
            # Walk the anchor's epilogue: each sole reader was fused, or the chain stopped there.
            cur = op
            while len(cur.outputs) == 1 and cur.outputs[0] not in outputs:
                readers = consumers.get(cur.outputs[0], [])
                if len(readers) != 1:
                    break
                nxt = readers[0]
                earlier = earlier_claim(g, nxt.inputs, cur.outputs[0], op.type, producer, n_readers)
                others = others_layout(
                    [
                        an.effective.get(an.anchor.get(producer[t], producer[t]), PLAIN) if t in producer else PLAIN
                        for t in nxt.inputs
                        if t != cur.outputs[0]
                    ]
                )
                key = fusion_key(op.type, an.effective[i], nxt.type, len(nxt.inputs), earlier, others)
                if an.anchor.get(index[nxt.name]) == i and index[nxt.name] != i:
                    fusion[key] += 1
                    cur = nxt
                    continue
                unfused[key] += 1
                break
        for r in rec.ops:
            if r.index is None and r.kernel == "ReorderInput" and r.output_shapes:
                reorder_channels.append(int(r.output_shapes[0][1]))
    layouts: dict[str, LayoutRule] = {}
    for op_type, ys in labels.items():
        classes = sorted(set(ys))
        if len(classes) == 1:
            layouts[op_type] = LayoutRule(classes[0])
            continue
        clf = DecisionTreeClassifier(max_depth=8, random_state=seed)
        clf.fit(np.asarray(rows[op_type]), ys)
        cls_index = [float(np.argmax(v[0])) for v in clf.tree_.value]
        layouts[op_type] = LayoutRule(
            None, from_sklearn([clf], [np.asarray(cls_index)]), tuple(str(c) for c in clf.classes_)
        )
    block = 0
    for b in (64, 32, 16, 8, 4):
        if reorder_channels and all(c % b == 0 for c in reorder_channels):
            block = b
            break
    keys = sorted(set(fusion) | set(unfused))
    deducer = CpuDeducer(layouts, follows, {k: (fusion[k], unfused[k]) for k in keys}, block, {}, records[0].runtime)
    deducer.direct_input = _learn_direct_input(deducer, records, anatomies)
    return deducer


def _learn_direct_input(
    deducer: CpuDeducer, records: Sequence[ProfileRecord], anatomies: Sequence[Anatomy]
) -> dict[str, tuple[int, int]]:
    """Per reader type: how often a plain tensor with fewer channels than the block, read by
    a blocked kernel, had no reorder of its own (read directly) vs one."""
    counts: dict[str, list[int]] = {}
    for rec, an in zip(records, anatomies):
        measured = measured_reorders(rec, "ReorderInput")
        for tensor, reader, kind in deducer.boundaries(rec.graph, an.anchor, an.effective, apply_direct=False):
            shape = rec.graph.tensors[tensor].shape
            if kind != "reorder_input" or reader is None or not deducer.below_block(shape):
                continue
            key = tuple(int(v) for v in shape[1:])
            c = counts.setdefault(rec.graph.operators[reader].type, [0, 0])
            if measured[key] > 0:
                measured[key] -= 1
                c[1] += 1
            else:
                c[0] += 1
    return {k: (v[0], v[1]) for k, v in sorted(counts.items())}


__all__ = ["learn_cpu_deducer"]
