"""What a phone's ``benchmark_model`` record says ran: which row covers each graph operator.

A record measured on a phone (``devicelab.backends.android``) has one row per graph operator
(``op_mapping``): the operator a row times carries the row's statistics and, as ``kernel``, the
tool's node type (``CONV_2D`` for a builtin kernel, ``Convolution (NHWC, F32) IGEMM`` for an
XNNPACK operator, ``TfLiteGpuDelegateV2`` for a delegate partition); the operators the same row
also covers (a fused activation, a folded batch norm, every other operator of a partition) have
no statistics and name the timing operator's row in ``fused_into``. Rows no graph operator owns
(``index=None``) are the runtime's own.

``tflite_anatomy`` reads that back: the *owner* of each operator (the operator whose row times
it), which owners are delegate partitions, and which operators no row covers. Both TFLite record
deducers (``deduce_tflite_cpu``, ``tflite_gpu_records``) read records through it, so they agree
on what was measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from devicelab.backends.base import OpTiming
from devicelab.predict.records import ProfileRecord


def is_partition(label: str) -> bool:
    """Whether a node type is a delegate partition (``TfLiteGpuDelegateV2``, the NNAPI delegate,
    an old tool's ``TfLiteXNNPackDelegate``): one row for a whole run of operators."""
    return "delegate" in label.lower()


def label_variant(label: str) -> str:
    """A kernel label as a kernel-type suffix: the words, without the layout and data type in
    parentheses (``Convolution (NHWC, F32) IGEMM`` -> ``convolution_igemm``, ``CONV_2D`` ->
    ``conv_2d``); ``unknown`` for an empty label."""
    words = re.sub(r"\([^)]*\)", " ", label).lower()
    slug = re.sub(r"[^a-z0-9]+", "_", words).strip("_")
    return slug or "unknown"


@dataclass
class TfliteAnatomy:
    """The rows of one record, operator by operator."""

    owner: dict[int, int] = field(default_factory=dict)  # graph operator -> the operator whose row times it
    rows: dict[int, OpTiming] = field(default_factory=dict)  # owner -> its (timed) row
    partitions: set[int] = field(default_factory=set)  # owners whose row is a delegate partition
    uncovered: set[int] = field(default_factory=set)  # operators no row ran (folded away)
    unresolved: set[int] = field(default_factory=set)  # fused into a row no timed operator holds

    def members(self, owner: int) -> list[int]:
        """The operators one row covers, in graph order (the owner first)."""
        return sorted(i for i, o in self.owner.items() if o == owner)


def anatomy(record: ProfileRecord) -> TfliteAnatomy:
    """The owner of each graph operator of a phone's record.

    A fused operator names its row, not an operator: rows of one name (XNNPACK's row shared by
    several operators, or partitions named alike) are told apart by taking the nearest timed
    operator of that name before the fused one (a row times the first operator it covers)."""
    out = TfliteAnatomy()
    by_index = {o.index: o for o in record.ops if o.index is not None}
    timed_by_name: dict[str, list[int]] = {}
    for i, timed in sorted(by_index.items()):
        if timed.stats is not None:
            timed_by_name.setdefault(timed.name, []).append(i)
    for i in range(len(record.graph.operators)):
        row = by_index.get(i)
        if row is None:
            out.uncovered.add(i)
        elif row.stats is not None:
            out.owner[i] = i
            out.rows[i] = row
            if is_partition(row.kernel):
                out.partitions.add(i)
        elif row.fused_into:
            candidates = timed_by_name.get(row.fused_into, [])
            before = [c for c in candidates if c < i]
            if before:
                out.owner[i] = before[-1]
            elif candidates:
                out.owner[i] = candidates[0]
            else:
                out.unresolved.add(i)
        else:
            out.uncovered.add(i)
    return out


__all__ = ["TfliteAnatomy", "anatomy", "is_partition", "label_variant"]
