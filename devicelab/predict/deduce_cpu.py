"""Kernel deduction for the host CPU runtime (ONNX Runtime), learned from what it recorded.

The CPU backend records, per IR operator, the kernel that ran it (``OpTiming.kernel``, e.g.
``NchwcConv``, ``FusedConv``, ``Relu``) or the kernel node it was fused into (``fused_into``),
plus the kernels the runtime inserted on its own (``ReorderInput`` / ``ReorderOutput`` around
its blocked NCHWc layout). ``CpuDeducer.learn`` reads those records and learns three rules, so
no runtime internals are written down here:

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
``reorder_output/nchwc``): kinds as ``features.op_kind``; its features are the anchor's.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devicelab.graph.ir import Graph
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import RAW_NAMES, op_kind, op_raw_features, raw_features
from devicelab.predict.kernels import Kernel, register_deducer
from devicelab.predict.records import ProfileRecord, stat
from devicelab.predict.samples import Sample
from devicelab.predict.trees import TreeArrays, from_sklearn

KIND = "cpu"
BLOCKED, PLAIN = "nchwc", "nchw"
_BLOCKED_PREFIX = "Nchwc"
_REORDERS = {"ReorderInput": "reorder_input", "ReorderOutput": "reorder_output"}
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

    A blocked kernel works on whole blocks of ``block`` channels: a convolution from 24 to
    40 channels computes 32 x 48. Its time follows that work, not the operator's. Measured
    here with GBDT on 871 synthetic networks:
    convolutions whose channels are whole blocks ran 3 % faster, and the rest 3 % slower, than
    models fed the unpadded FLOPs predicted. The zoo networks' channels are mostly whole
    blocks, so their convolutions came out 10 % high.
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


def _layout_key(graph: Graph, op_index: int, producer_layouts: Sequence[str], reads_input: bool) -> tuple[Any, ...]:
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


def _layout_row_of_key(key: tuple[Any, ...]) -> list[float]:
    """``LAYOUT_FEATURES`` values from a ``_layout_key``."""
    _, cin, cout, cin_g, cout_g, cin_cap, g1, dw, k1, s1, rank4, all_b, any_b, reads_input, same = key
    row: list[float] = [g1, dw, k1, s1, rank4]
    for b in _ALIGN:
        row += [cin % b == 0, cout % b == 0, cin_g % b == 0, cout_g % b == 0]
    row += [cin_cap < b for b in _ALIGN]
    row += [all_b, any_b, reads_input, same]
    return [float(v) for v in row]


def _layout_row(graph: Graph, op_index: int, producer_layouts: Sequence[str], reads_input: bool) -> list[float]:
    return _layout_row_of_key(_layout_key(graph, op_index, producer_layouts, reads_input))


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


def _fusion_key(anchor_type: str, layout: str, next_type: str, arity: int, earlier: bool, others: str) -> str:
    """A fusion rule's key. ``earlier``: an earlier input of the next operator could be claimed
    by another anchor of the same type (a runtime fuses a residual ``add`` into one of the two
    convolutions feeding it, the first that qualifies); ``others``: the layout of the next
    operator's other inputs (``-`` for none, else ``nchwc`` or ``nchw`` if any is plain)."""
    return f"{anchor_type}|{layout}|{next_type}|{arity}|{int(earlier)}|{others}"


def _others(layouts: Sequence[str]) -> str:
    if not layouts:
        return "-"
    return BLOCKED if all(v == BLOCKED for v in layouts) else PLAIN


def _earlier_claim(
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


def _reader_counts(graph: Graph) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in graph.operators:
        for t in o.inputs:
            out[t] = out.get(t, 0) + 1
    return out


@dataclass
class _Anatomy:
    """How a record's operators map onto the kernels that ran them."""

    anchor: dict[int, int]  # op index -> index of the op whose kernel computes it
    layout: dict[int, str]  # anchor op index -> layout of its kernel (by its name)
    kernel: dict[int, str]  # anchor op index -> recorded kernel name
    effective: dict[int, str] = field(default_factory=dict)  # anchor -> layout of the tensor it writes


def _measured_reorders(record: ProfileRecord, name: str) -> Counter[tuple[int, ...]]:
    """Plain (C, H, W) shapes of the recorded reorders of one direction."""
    out: Counter[tuple[int, ...]] = Counter()
    for r in record.ops:
        if r.index is None and r.kernel == name:
            plain = r.input_shapes[0] if name == "ReorderInput" else r.output_shapes[0]
            out[tuple(int(v) for v in plain[1:])] += 1
    return out


def _producer_anchors(graph: Graph, anchor: dict[int, int], i: int, producer: dict[str, int]) -> list[int]:
    return [anchor.get(producer[t], producer[t]) for t in graph.operators[i].inputs if t in producer]


def effective_layouts(record: ProfileRecord, an: _Anatomy) -> dict[str, tuple[int, int]]:
    """Fill ``an.effective`` for a record: a plain-named kernel reading only blocked tensors
    writes a blocked tensor unless a reorder ran on its input. Returns, per operator type, how
    often such a kernel ran without / with that reorder."""
    g = record.graph
    producer = {t: i for i, o in enumerate(g.operators) for t in o.outputs}
    reorders = _measured_reorders(record, "ReorderOutput")
    reordered: set[str] = set()
    counts: dict[str, list[int]] = {}
    for i in sorted(an.layout):
        if an.anchor.get(i, i) != i:
            continue
        if an.layout[i] == BLOCKED:
            an.effective[i] = BLOCKED
            continue
        op = g.operators[i]
        prods = _producer_anchors(g, an.anchor, i, producer)
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


def anatomy(record: ProfileRecord) -> _Anatomy:
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
    return _Anatomy(anchor, layout, kernel)


@dataclass
class CpuDeducer:
    """Deduces the host CPU runtime's kernels with rules learned from its records."""

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

    # -- learning ------------------------------------------------------------------------------

    @classmethod
    def learn(cls, records: Sequence[ProfileRecord], seed: int = 0) -> CpuDeducer:
        """Learn layout, fusion and reorder rules from recorded runs."""
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
            n_readers = _reader_counts(g)
            outputs = set(g.outputs)
            index = {o.name: i for i, o in enumerate(g.operators)}
            for i in sorted(an.effective):
                op = g.operators[i]
                pl = [an.effective[p] for p in _producer_anchors(g, an.anchor, i, producer)]
                rows.setdefault(op.type, []).append(_layout_row(g, i, pl, any(t in g.inputs for t in op.inputs)))
                labels.setdefault(op.type, []).append(an.effective[i])
                # Walk the anchor's epilogue: each sole reader was fused, or the chain stopped there.
                cur = op
                while len(cur.outputs) == 1 and cur.outputs[0] not in outputs:
                    readers = consumers.get(cur.outputs[0], [])
                    if len(readers) != 1:
                        break
                    nxt = readers[0]
                    earlier = _earlier_claim(g, nxt.inputs, cur.outputs[0], op.type, producer, n_readers)
                    others = _others(
                        [
                            an.effective.get(an.anchor.get(producer[t], producer[t]), PLAIN) if t in producer else PLAIN
                            for t in nxt.inputs
                            if t != cur.outputs[0]
                        ]
                    )
                    key = _fusion_key(op.type, an.effective[i], nxt.type, len(nxt.inputs), earlier, others)
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
        deducer = cls(layouts, follows, {k: (fusion[k], unfused[k]) for k in keys}, block, {}, records[0].runtime)
        deducer.direct_input = deducer._learn_direct_input(records, anatomies)
        return deducer

    def _learn_direct_input(
        self, records: Sequence[ProfileRecord], anatomies: Sequence[_Anatomy]
    ) -> dict[str, tuple[int, int]]:
        """Per reader type: how often a plain tensor with fewer channels than the block, read by
        a blocked kernel, had no reorder of its own (read directly) vs one."""
        counts: dict[str, list[int]] = {}
        for rec, an in zip(records, anatomies):
            measured = _measured_reorders(rec, "ReorderInput")
            for tensor, reader, kind in self._boundaries(rec.graph, an.anchor, an.effective, apply_direct=False):
                shape = rec.graph.tensors[tensor].shape
                if kind != "reorder_input" or reader is None or not self._small_input(shape):
                    continue
                key = tuple(int(v) for v in shape[1:])
                c = counts.setdefault(rec.graph.operators[reader].type, [0, 0])
                if measured[key] > 0:
                    measured[key] -= 1
                    c[1] += 1
                else:
                    c[0] += 1
        return {k: (v[0], v[1]) for k, v in sorted(counts.items())}

    def _work(self, kind: str, layout: str, raw: tuple[float, ...]) -> tuple[float, ...]:
        if not self.padded_work or layout != BLOCKED or kind not in _BLOCKED_CONV_KINDS or self.block <= 0:
            return raw
        return blocked_raw(raw, kind, self.block)

    def _small_input(self, shape: Sequence[int]) -> bool:
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
        key = _layout_key(graph, op_index, producer_layouts, reads_input)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = rule.predict(_layout_row_of_key(key))
        return hit

    def fuses(
        self, anchor_type: str, layout: str, next_type: str, arity: int, earlier: bool = False, others: str = "-"
    ) -> bool:
        """Whether the learned rules fuse ``next_type`` into an anchor's kernel."""
        key = _fusion_key(anchor_type, layout, next_type, arity, earlier, others)
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
                earlier = len(op.inputs) > 1 and _earlier_claim(graph, op.inputs, t, ops[a].type, producers, n_readers)
                others = _others([v for j, v in enumerate(pl) if j != k])
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

    def _boundaries(
        self, graph: Graph, anchor: dict[int, int], layout: dict[int, str], apply_direct: bool = True
    ) -> list[tuple[str, int | None, str]]:
        """Tensors that change layout: (tensor, reading op or None for a graph output, reorder kind)."""
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
        if not self._small_input(shape):
            return False
        direct, reordered = self.direct_input.get(reader_type, (0, 0))
        return direct > reordered

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels the runtime runs for ``graph``: fused anchors, then the reorders."""
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
            out.append(Kernel(f"{kind}/{layout[a]}", tuple(m), raw, op.name))
        for tensor, _, kind in self._boundaries(graph, anchor, layout):
            out.append(Kernel(f"{kind}/{BLOCKED}", (), move_raw(t[tensor].shape), f"{kind}:{tensor}"))
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
            if r.index is None and r.kernel in _REORDERS and r.stats is not None:
                plain = r.input_shapes[0] if r.kernel == "ReorderInput" else r.output_shapes[0]
                out.append(
                    Kernel(f"{_REORDERS[r.kernel]}/{BLOCKED}", (), move_raw(plain), r.name, stat(r.stats, statistic))
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
            for tensor, _, kind in self._boundaries(rec.graph, anchor, layout):
                deduced[(kind, *[int(v) for v in t[tensor].shape[1:]])] += 1
                deduced_reorders += 1
            for name, kind in _REORDERS.items():
                for shape, n in _measured_reorders(rec, name).items():
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
        pairs = lambda m: {str(k): (int(v[0]), int(v[1])) for k, v in m.items()}  # noqa: E731
        return cls(
            {str(k): LayoutRule.from_dict(v) for k, v in d["layouts"].items()},
            pairs(d.get("follows", {})),
            pairs(d["fusion"]),
            int(d["block"]),
            pairs(d.get("direct_input", {})),
            str(d.get("runtime", "")),
            bool(d.get("padded_work", False)),
        )


PROBE_FOLLOWERS = (
    "relu",
    "relu6",
    "hard_swish",
    "hard_sigmoid",
    "sigmoid",
    "swish",
    "tanh",
    "gelu",
    "leaky_relu",
    "elu",
    "batch_norm",
    "add",
    "mul",
    "bn_relu",
    "add_relu",
)
PROBE_CHANNELS = (32, 36)  # one count aligned to every block size, one that is not


def probe_graphs(size: int = 14) -> list[Graph]:
    """Small graphs that show the runtime's fusions (nn-Meter's idea of test cases for fusion
    rules): for each anchor type, one branch per follower type, and behind each follower a 1x1
    convolution (a fully-connected layer for 2-D tensors) whose output is the graph output.

    The consumer matters: ONNX Runtime fuses a tensor into the kernel before it only when the
    tensor is not a graph output. A HardSwish that is a graph output runs as HardSigmoid + Mul
    in NCHW; inside a network it is the activation of the convolution before it, as in
    MobileNet-V3 (a probe without the consumer taught the opposite: 28 deduced element-wise
    kernels and reorders in MobileNet-V3-Small where ONNX Runtime runs none).

    Profiling them once per scenario lets ``CpuDeducer.learn`` see operator pairs a training set
    of NAS samples lacks (an ``add`` after a convolution, a ReLU after an ``add``); they teach
    rules only and are never latency training data.
    """
    from devicelab.graph.builder import GraphBuilder

    graphs = []
    anchors = (
        "conv3x3",
        "conv1x1",
        "grouped_conv",
        "dwconv",
        "avg_pool",
        "max_pool",
        "add",
        "mul",
        "concat",
        "batch_norm",
        "global_avg_pool",
        "fc",
    )
    for c in PROBE_CHANNELS:
        for anchor_type in anchors:
            b = GraphBuilder(f"probe-{anchor_type}-{c}", (1, c, size, size))
            x = b.input
            outs = []
            for f in PROBE_FOLLOWERS:
                with b.scope(f):
                    if anchor_type == "conv3x3":
                        y = b.conv(x, c, 3)
                    elif anchor_type == "conv1x1":
                        y = b.conv(x, c, 1)
                    elif anchor_type == "grouped_conv":
                        y = b.conv(x, c, 3, groups=2 if c % 32 == 0 else 4)  # 16 or 9 channels a group
                    elif anchor_type == "dwconv":
                        y = b.dwconv(x, 3)
                    elif anchor_type == "avg_pool":
                        y = b.avg_pool(x, 3, 1, pad=1)
                    elif anchor_type == "max_pool":
                        y = b.max_pool(x, 3, 1, pad=1)
                    elif anchor_type in ("add", "mul"):
                        y = b.op(anchor_type, [b.conv(x, c, 1), b.conv(x, c, 1)])
                    elif anchor_type == "concat":
                        y = b.concat([b.conv(x, c // 2, 1), b.conv(x, c - c // 2, 1)])
                    elif anchor_type == "batch_norm":
                        y = b.bn(b.add(b.conv(x, c, 1), x))
                    elif anchor_type == "global_avg_pool":
                        y = b.global_avg_pool(b.conv(x, c, 1))
                    else:
                        y = b.fc(b.flatten(b.global_avg_pool(x)), c)
                    other = b.conv(x, c, 1) if b.shape(y) == b.shape(x) else y
                    if f == "bn_relu":
                        y = b.relu(b.bn(y))
                    elif f == "add_relu":
                        y = b.relu(b.add(y, other))
                    elif f in ("add", "mul"):
                        y = b.op(f, [y, other])
                    elif f == "batch_norm":
                        y = b.bn(y)
                    else:
                        y = b.act(y, f)
                    outs.append(b.conv(y, c, 1) if len(b.shape(y)) == 4 else b.fc(y, c))
            graphs.append(b.build(outs))
    return graphs


register_deducer(KIND, CpuDeducer.from_dict)

__all__ = [
    "BLOCKED",
    "LAYOUT_FEATURES",
    "PLAIN",
    "CpuDeducer",
    "LayoutRule",
    "anatomy",
    "blocked_raw",
    "effective_layouts",
    "layout_of",
    "move_raw",
    "probe_graphs",
]
