"""Which graph operators each row of ``benchmark_model``'s operator table covers.

The model's nodes are known (``ModelNode``: the TFLite operator index, its builtin, its output
tensor's name, and the graph operators it implements). A row of the run-phase table is one of:

* a builtin kernel, named ``[<output tensor>]:<node index>``: it covers that node (and so the
  graph operators the node implements, a fused activation among them);
* a per-operator delegate row, named ``Delegate/<kernel>:<i>`` (XNNPACK in LiteRT): it covers the
  next ``times called`` delegated nodes of its kind (a depthwise kernel covers depthwise
  convolutions, a GEMM covers convolutions or fully connected layers ...), in run order;
* a delegate partition (``TfLiteGpuDelegateV2``, the NNAPI delegate, an older tool's XNNPACK
  kernel): it covers one contiguous run of delegated nodes, in order.

Each covered graph operator gets one ``OpTiming`` with the row's name (a delegate keeps its
name) and ``kernel`` = the row's node type. A builtin or partition row times its first graph
operator and the others name it in ``fused_into``; a per-operator delegate row that ran several
operators gives each the row's per-call average (the tool does not tell them apart), which the
environment says. Rows no node explains stay as runtime rows (``index=None``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from devicelab.backends.android.benchmark_output import OperatorProfile, OperatorRow, gpu_dispatch_nodes
from devicelab.backends.base import OpTiming
from devicelab.graph.ir import Graph, Operator
from devicelab.measure.environment import OpRowNotes
from devicelab.measure.stats import from_aggregate

_BUILTIN_ROW = re.compile(r"^\[(?P<names>.*)\]:(?P<index>\d+)$")

# Words of a delegate kernel's name -> the operator categories it can run (first match wins).
_KERNEL_CATEGORIES: tuple[tuple[str, frozenset[str]], ...] = (
    ("dwconv", frozenset({"dwconv"})),
    ("depthwise", frozenset({"dwconv"})),
    ("fully connected", frozenset({"fc", "matmul"})),
    ("batch matrix", frozenset({"matmul"})),
    ("deconvolution", frozenset({"conv"})),
    ("convolution", frozenset({"conv"})),
    ("global average", frozenset({"mean", "pool"})),
    ("mean", frozenset({"mean", "pool"})),
    ("pooling", frozenset({"pool"})),
    ("concat", frozenset({"concat"})),
    ("split", frozenset({"split"})),
    ("pad", frozenset({"pad"})),
    ("copy", frozenset({"reshape"})),
    ("reshape", frozenset({"reshape"})),
    ("transpose", frozenset({"reshape"})),
)


@dataclass(frozen=True)
class ModelNode:
    """One TFLite operator of the model as run, and the graph operators it implements."""

    index: int
    builtin: str
    name: str
    ir_ops: tuple[int, ...]


def nodes_from_export(exported: Sequence[object], graph: Graph) -> list[ModelNode]:
    """Nodes of a model our writer wrote (its ``ExportedOp`` list names the graph operators)."""
    position = {o.name: i for i, o in enumerate(graph.operators)}
    out = []
    for op in exported:
        ir = tuple(position[n] for n in getattr(op, "ir_ops") if n in position)  # noqa: B009
        out.append(ModelNode(int(getattr(op, "index")), str(getattr(op, "builtin")), str(getattr(op, "name")), ir))  # noqa: B009
    return out


def nodes_from_upload(data: bytes, graph: Graph) -> list[ModelNode]:
    """Nodes of an uploaded ``.tflite``, matched to the graph the importer made of the same file:
    the importer names each operator after its TFLite node's output tensor (plus ``/act``,
    ``/flatten`` ... for what it split off), so names lead back to nodes."""
    from devicelab.graph.tflite.importer import _op_name  # the builtin names the importer uses
    from devicelab.graph.tflite.wire import CUSTOM, decode

    raw = decode(bytes(data))
    names = [t.name or f"tensor_{i}" for i, t in enumerate(raw.tensors)]
    taken: dict[int, int] = {}
    ops_by_name: dict[str, list[int]] = {}
    for i, o in enumerate(graph.operators):
        ops_by_name.setdefault(o.name, []).append(i)
    out = []
    for op in raw.ops:
        node = names[op.outputs[0]] if op.outputs else f"operator_{op.index}"
        mine = [
            i
            for i, o in enumerate(graph.operators)
            if i not in taken and (o.name == node or o.name.startswith(node + "/") or _suffixed(o.name, node))
        ]
        for i in mine:
            taken[i] = op.index
        # benchmark_model names a custom operator's rows by its custom code, as the importer names
        # the opaque operator it keeps for it
        builtin = op.custom if op.code == CUSTOM and op.custom is not None else _op_name(op.code)
        out.append(ModelNode(op.index, builtin, node, tuple(mine)))
    return out


def _suffixed(name: str, node: str) -> bool:
    """``node_1`` (the importer's de-duplicated name) or ``node_1/act``."""
    m = re.match(re.escape(node) + r"_\d+(?:/|$)", name)
    return m is not None


def _categories(kernel: str) -> frozenset[str] | None:
    low = kernel.lower().replace("_", " ")  # the GPU delegate's "fully_connected" as XNNPACK's words
    for word, cats in _KERNEL_CATEGORIES:
        if word in low:
            return cats
    return None


def op_timings(
    graph: Graph, nodes: Sequence[ModelNode], profile: OperatorProfile, runs: int
) -> tuple[list[OpTiming], OpRowNotes]:
    """One ``OpTiming`` per graph operator (timed, or fused into a row) plus one per unexplained
    row; and notes for the environment (how rows were matched)."""
    by_index = {n.index: n for n in nodes}
    covered: dict[int, list[tuple[OperatorRow, bool]]] = {}  # graph op -> rows that ran it (row, owns its time)
    executed: set[int] = set()
    per_op: list[OperatorRow] = []
    partitions: list[OperatorRow] = []
    runtime_rows: list[OperatorRow] = []
    for row in profile.rows:
        m = _BUILTIN_ROW.match(row.name)
        node = by_index.get(int(m.group("index"))) if m else None
        if m and node is not None and (row.node_type == node.builtin or not row.name.startswith("Delegate/")):
            if node.index in executed or row.node_type != node.builtin and _is_partition(row):
                partitions.append(row)
                continue
            executed.add(node.index)
            if node.ir_ops:
                _cover(covered, node.ir_ops, row)
            else:  # a node no graph operator owns (fp16 weights' DEQUANTIZE): its time is kept
                runtime_rows.append(row)
        elif row.name.startswith("Delegate/"):
            per_op.append(row)
        else:
            partitions.append(row)
    delegated = [n for n in nodes if n.index not in executed and n.ir_ops]
    shared = 0
    # A profile of GPU dispatches (LiteRT 2.x) may hold delegate rows that are no dispatch (the
    # accelerator's tensor uploads and downloads): they run no operator and must not take one.
    dispatches = any(gpu_dispatch_nodes(row.node_type) is not None for row in per_op)
    if per_op:
        pending = list(delegated)
        for row in per_op:
            chain = gpu_dispatch_nodes(row.node_type)
            cats = _categories(chain[0][0] if chain else row.node_type)
            if dispatches and chain is None and cats is None:
                runtime_rows.append(row)
                continue
            want = max(1, row.times_called)
            picked = [n for n in pending if cats is None or _node_category(n, graph) in cats][:want]
            if not picked and pending:
                picked = pending[:1]
            if not picked:
                runtime_rows.append(row)
                continue
            shared += len(picked) > 1
            for n in picked:
                pending.remove(n)
                _cover(covered, n.ir_ops, row)
            if chain and len(chain) > 1:
                # element-wise nodes the delegate linked into this dispatch ("convolution_2d 0 ->
                # add 1"): the next delegated nodes after it, fused into its row
                linked = [n for n in pending if n.index > picked[-1].index][: len(chain) - 1]
                for n in linked:
                    pending.remove(n)
                    for i in n.ir_ops:
                        covered.setdefault(i, []).append((row, False))
        if pending and per_op:  # nodes no row ran: absorbed by the delegate (its last kernel)
            for n in pending:
                for i in n.ir_ops:
                    covered.setdefault(i, [(per_op[-1], False)])
    elif partitions:
        groups = _contiguous(delegated, executed)
        for k, group in enumerate(groups):
            row = partitions[min(k, len(partitions) - 1)]
            ops = tuple(i for n in group for i in n.ir_ops)
            if k < len(partitions):
                _cover(covered, ops, row)
            else:
                for i in ops:
                    covered.setdefault(i, [(row, False)])
        runtime_rows += partitions[len(groups) :]
    else:
        runtime_rows += partitions
    rows = _timings(graph, covered, runs)
    for row in runtime_rows:
        rows.append(
            OpTiming(
                index=None,
                name=row.name,
                type="runtime",
                kernel=row.node_type,
                input_shapes=[],
                output_shapes=[],
                attrs={},
                stats=from_aggregate(runs * max(1, row.times_called), row.avg_ms),
            )
        )
    notes: OpRowNotes = {
        "op_rows": len(profile.rows),
        "op_rows_builtin": len(executed),
        "op_rows_delegate_per_op": len(per_op),
        "op_rows_delegate_partition": len(partitions),
        "op_rows_unmatched": len(runtime_rows),
        "op_rows_shared_by_several_operators": shared,
    }
    return rows, notes


# A helper node our writer adds to one graph operator (``conv::pad``, ``swish::sigmoid``) runs a
# kernel of its own kind, not the graph operator's.
_HELPER_CATEGORIES = {"PAD": "pad", "PADV2": "pad", "MIRROR_PAD": "pad", "RESHAPE": "reshape", "TRANSPOSE": "reshape"}


def _node_category(node: ModelNode, graph: Graph) -> str:
    if "::" in node.name:
        return _HELPER_CATEGORIES.get(node.builtin, "elementwise")
    return graph.operators[node.ir_ops[0]].category


def _is_partition(row: OperatorRow) -> bool:
    return "delegate" in row.node_type.lower()


def _cover(covered: dict[int, list[tuple[OperatorRow, bool]]], ops: Sequence[int], row: OperatorRow) -> None:
    """The row times the first of ``ops`` (with any other node's row that also ran it: a PAD
    written before its convolution); the others are fused into it."""
    for k, i in enumerate(ops):
        covered.setdefault(i, []).append((row, k == 0))


def _contiguous(nodes: Sequence[ModelNode], executed: set[int]) -> list[list[ModelNode]]:
    """Delegated nodes in runs broken by a node the CPU ran (each run is one partition)."""
    groups: list[list[ModelNode]] = []
    last = None
    for n in nodes:
        if last is None or any(last < e < n.index for e in executed):
            groups.append([])
        groups[-1].append(n)
        last = n.index
    return groups


def _keeps_delegate_name(row: OperatorRow) -> bool:
    return row.name.startswith("Delegate/") or _is_partition(row) or _BUILTIN_ROW.match(row.name) is None


def _timings(graph: Graph, covered: dict[int, list[tuple[OperatorRow, bool]]], runs: int) -> list[OpTiming]:
    # the name each row's owner goes by: the graph operator's for a builtin kernel, the
    # delegate's own for a delegate row (what fused operators name in fused_into)
    owner_name: dict[int, str] = {}
    for index, hits in sorted(covered.items()):
        for row, owns in hits:
            if owns and id(row) not in owner_name:
                owner_name[id(row)] = row.name if _keeps_delegate_name(row) else graph.operators[index].name
    out = []
    for index, op in enumerate(graph.operators):
        hits = covered.get(index, [])
        owning = [row for row, owns in hits if owns]
        shapes = (_shapes_in(graph, op), _shapes_out(graph, op), dict(op.attrs))
        if owning:
            # every kernel that ran this operator (a PAD and its CONV_2D): their times add up
            delegate = next((row for row in owning if _keeps_delegate_name(row)), None)
            kernel = "+".join(dict.fromkeys(row.node_type for row in owning))
            stats = from_aggregate(runs, sum(row.avg_ms for row in owning))
            name = delegate.name if delegate is not None else op.name
            out.append(OpTiming(index, name, op.type, kernel, *shapes, stats=stats))
        elif hits:
            row = hits[0][0]
            out.append(
                OpTiming(index, op.name, op.type, row.node_type, *shapes, None, owner_name.get(id(row), row.name))
            )
        else:  # no row ran it (a constant the runtime folded away)
            out.append(OpTiming(index, op.name, op.type, "", *shapes, None))
    return out


def _shapes_in(graph: Graph, op: Operator) -> list[list[int]]:
    return [list(s) for s in graph.input_shapes(op)]


def _shapes_out(graph: Graph, op: Operator) -> list[list[int]]:
    return [list(s) for s in graph.output_shapes(op)]


__all__ = ["ModelNode", "nodes_from_export", "nodes_from_upload", "op_timings"]
