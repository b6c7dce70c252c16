"""The vocabulary of the host CPU runtime's learned rules, shared by learning and deduction.

``CpuDeducer`` (``deduce_cpu``) applies three rules that ``cpu_learning`` learns from recorded
runs (``cpu_anatomy`` reads those): the layout an operator's kernel writes (a decision tree per
IR operator type over ``LAYOUT_FEATURES``), whether the next operator is fused into an anchor's
kernel (counts per ``fusion_key``), and where the runtime inserts layout changes. Both sides must
describe an operator the same way, so the features and keys live here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.graph.ir import Graph
from devicelab.predict.errors import PredictorError
from devicelab.predict.trees import TreeArrays

KIND = "cpu"
BLOCKED, PLAIN = "nchwc", "nchw"
_BLOCKED_PREFIX = "Nchwc"
REORDERS = {"ReorderInput": "reorder_input", "ReorderOutput": "reorder_output"}
_ALIGN = (4, 8, 16, 32)

LAYOUT_FEATURES: tuple[str, ...] = (
    "groups_is_1",
    "depthwise",
    "kernel_is_1",
    "stride_is_1",
    "rank_is_4",
    *(f"{what}_mod_{b}" for b in _ALIGN for what in ("cin", "cout", "cin_group", "cout_group")),
    *(f"cin_lt_{b}" for b in _ALIGN),
    "producers_all_blocked",
    "producers_any_blocked",
    "reads_graph_input",
    "inputs_same_shape",
)


def layout_of(kernel_name: str) -> str:
    """The layout a recorded kernel ran in: ``nchwc`` for the runtime's blocked kernels."""
    return BLOCKED if kernel_name.startswith(_BLOCKED_PREFIX) else PLAIN


def layout_key(graph: Graph, op_index: int, producer_layouts: Sequence[str], reads_input: bool) -> tuple[Any, ...]:
    """What the layout features of an operator depend on, compactly (channel counts modulo 32
    and capped at 32 decide every alignment test): the memo key of the layout rules."""
    op = graph.operators[op_index]
    t = graph.tensors
    x = t[op.inputs[0]].shape if op.inputs else ()
    y = t[op.outputs[0]].shape if op.outputs else ()
    cin = int(x[1]) if len(x) >= 2 else 1
    cout = int(y[1]) if len(y) >= 2 else 1
    a = op.attrs
    if op.type == "conv2d":
        groups = int(a["groups"])
    elif op.type == "depthwise_conv2d":
        groups = cin
    else:
        groups = 1
    blocked = [p == BLOCKED for p in producer_layouts]
    return (
        op.type,
        cin % 32,
        cout % 32,
        (cin // groups) % 32,
        (cout // groups) % 32,
        min(cin, 32),
        groups == 1,
        groups > 1 and groups == cin,
        list(a.get("kernel", [1, 1])) == [1, 1],
        list(a.get("stride", [1, 1])) == [1, 1],
        len(x) == 4,
        bool(blocked) and all(blocked),
        any(blocked),
        reads_input,
        all(t[n].shape == x for n in op.inputs),
    )


def layout_row_of_key(key: tuple[Any, ...]) -> list[float]:
    """``LAYOUT_FEATURES`` values from a ``layout_key``."""
    _, cin, cout, cin_g, cout_g, cin_cap, g1, dw, k1, s1, rank4, all_b, any_b, reads_input, same = key
    row: list[float] = [g1, dw, k1, s1, rank4]
    for b in _ALIGN:
        row += [cin % b == 0, cout % b == 0, cin_g % b == 0, cout_g % b == 0]
    row += [cin_cap < b for b in _ALIGN]
    row += [all_b, any_b, reads_input, same]
    return [float(v) for v in row]


def layout_row(graph: Graph, op_index: int, producer_layouts: Sequence[str], reads_input: bool) -> list[float]:
    """``LAYOUT_FEATURES`` values of one operator, given the layouts its producers write."""
    return layout_row_of_key(layout_key(graph, op_index, producer_layouts, reads_input))


@dataclass(frozen=True)
class LayoutRule:
    """The learned layout of one IR operator type: a constant, or a tree over ``LAYOUT_FEATURES``."""

    constant: str | None
    tree: TreeArrays | None = None
    classes: tuple[str, ...] = ()

    def predict(self, row: list[float]) -> str:
        """The layout for one feature row."""
        if self.constant is not None or self.tree is None:
            return self.constant or PLAIN
        value = self.tree.leaf_values(np.asarray([row]))[0, 0]
        return self.classes[int(value)]

    def to_dict(self) -> dict[str, Any]:
        """Plain data."""
        if self.constant is not None or self.tree is None:
            return {"constant": self.constant or PLAIN}
        return {"tree": self.tree.to_dict(), "classes": list(self.classes)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LayoutRule:
        """From ``to_dict`` data."""
        if "constant" in d:
            return cls(str(d["constant"]))
        tree = TreeArrays.from_dict(d["tree"])
        tree.validate(len(LAYOUT_FEATURES))
        classes = tuple(str(c) for c in d["classes"])
        if tree.value.size and (tree.value.min() < 0 or tree.value.max() >= len(classes)):
            raise PredictorError("a layout tree names a class it does not have")
        return cls(None, tree, classes)


def fusion_key(anchor_type: str, layout: str, next_type: str, arity: int, earlier: bool, others: str) -> str:
    """A fusion rule's key. ``earlier``: an earlier input of the next operator could be claimed
    by another anchor of the same type (a runtime fuses a residual ``add`` into one of the two
    convolutions feeding it, the first that qualifies); ``others``: the layout of the next
    operator's other inputs (``-`` for none, else ``nchwc`` or ``nchw`` if any is plain)."""
    return f"{anchor_type}|{layout}|{next_type}|{arity}|{int(earlier)}|{others}"


def others_layout(layouts: Sequence[str]) -> str:
    """The ``others`` part of a fusion key from the layouts of the next operator's other inputs."""
    if not layouts:
        return "-"
    return BLOCKED if all(v == BLOCKED for v in layouts) else PLAIN


def earlier_claim(
    graph: Graph,
    nxt_inputs: Sequence[str],
    tensor: str,
    anchor_type: str,
    producer: dict[str, int],
    n_readers: dict[str, int],
) -> bool:
    """Whether an input of the next operator before ``tensor`` comes, through sole-reader batch
    norms, from a single-reader operator of ``anchor_type``."""
    ops = graph.operators
    for t in nxt_inputs[: list(nxt_inputs).index(tensor)]:
        p = producer.get(t)
        if p is None or n_readers.get(t, 0) != 1:
            continue
        while ops[p].type == "batch_norm" and ops[p].inputs[0] in producer and n_readers.get(ops[p].inputs[0]) == 1:
            p = producer[ops[p].inputs[0]]
        if ops[p].type == anchor_type:
            return True
    return False


def reader_counts(graph: Graph) -> dict[str, int]:
    """How many operators read each tensor."""
    out: dict[str, int] = {}
    for o in graph.operators:
        for t in o.inputs:
            out[t] = out.get(t, 0) + 1
    return out


__all__ = [
    "BLOCKED",
    "KIND",
    "LAYOUT_FEATURES",
    "PLAIN",
    "REORDERS",
    "LayoutRule",
    "earlier_claim",
    "fusion_key",
    "layout_key",
    "layout_of",
    "layout_row",
    "layout_row_of_key",
    "others_layout",
    "reader_counts",
]
