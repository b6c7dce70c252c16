"""ONNX Runtime's per-node profile: reading it, and mapping its kernels back to graph operators.

ONNX Runtime fuses nodes (Conv + Relu into FusedConv, BatchNormalization folded into Conv), runs
NCHWc layout kernels on x86 and inserts reorders. ``map_kernels`` decides, for each IR operator,
which optimized-graph kernel implements it; ``op_timings`` turns the per-run kernel durations
into one ``OpTiming`` per IR operator (fused operators name their kernel in ``fused_into``) plus
one per kernel the runtime added on its own.
"""

from __future__ import annotations

import bisect
import json
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx

from devicelab.backends.base import BackendError, OpTiming
from devicelab.graph import ops as ir_ops
from devicelab.graph.ir import Graph
from devicelab.measure.stats import summarize

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


# ---------------------------------------------------------------------------------------------
# Mapping kernel nodes back to IR operators

# Which IR categories a heavy kernel can implement: a conv kernel named after the ReLU it absorbed
# was renamed by a fusion (NCHWc names a Conv+BN+ReLU kernel after the BN or the ReLU).
_KERNEL_FAMILY = {
    "Conv": "conv",
    "FusedConv": "conv",
    "NhwcFusedConv": "conv",
    "NhwcConv": "conv",
    "ConvTranspose": "conv",
    "QLinearConv": "conv",
    "ConvInteger": "conv",
    "Gemm": "fc",
    "FusedGemm": "fc",
    "MatMul": "fc",
    "FusedMatMul": "fc",
    "QGemm": "fc",
    "MatMulInteger": "fc",
    "MaxPool": "pool",
    "AveragePool": "pool",
    "GlobalAveragePool": "global_pool",
    "GlobalMaxPool": "global_pool",
}
_IR_FAMILY = {"conv": "conv", "dwconv": "conv", "fc": "fc", "matmul": "fc", "pool": "pool", "mean": "global_pool"}
# Which IR types a light kernel ORT created without a usable name can belong to: the exporter's
# decompositions, and ORT's own (HardSwish inlined as HardSigmoid + Mul; Gelu re-fused).
_KERNEL_IR_TYPES = {
    "Relu": {"relu"},
    "Clip": {"relu6", "clip"},
    "HardSigmoid": {"hard_sigmoid", "hard_swish"},
    "HardSwish": {"hard_swish"},
    "Sigmoid": {"sigmoid", "swish"},
    "Tanh": {"tanh"},
    "Mul": {"mul", "swish", "hard_swish", "gelu"},
    "Add": {"add", "fully_connected", "gelu"},
    "Sub": {"sub"},
    "Div": {"div", "gelu"},
    "Erf": {"gelu"},
    "Gelu": {"gelu"},
    "FastGelu": {"gelu"},
    "BiasGelu": {"gelu"},
    "LeakyRelu": {"leaky_relu"},
    "Elu": {"elu"},
    "Softmax": {"softmax"},
    "Concat": {"concat"},
    "Split": {"split"},
    "Pad": {"pad"},
    "Reshape": {"reshape", "channel_shuffle", "flatten"},
    "Transpose": {"transpose", "channel_shuffle"},
    "Flatten": {"flatten"},
    "Resize": {"resize"},
    "ReduceMean": {"reduce_mean", "global_avg_pool"},
    "ReduceMax": {"reduce_max", "global_max_pool"},
    "ReduceSum": {"reduce_sum"},
    "BatchNormalization": {"batch_norm"},
}
# The IR types behind a fused kernel's ``activation`` attribute (FusedConv, NCHWc Conv).
_ACTIVATION_IR_TYPES = {
    "Relu": {"relu"},
    "Clip": {"relu6", "clip"},
    "HardSigmoid": {"hard_sigmoid"},
    "HardSwish": {"hard_swish"},
    "Sigmoid": {"sigmoid"},
    "Tanh": {"tanh"},
    "LeakyRelu": {"leaky_relu"},
}
# IR categories ORT folds into the kernel *before* them (epilogues: BN, activations, bias adds);
# other eliminated operators (pad, transpose, reshape) are folded into the kernel after them.
_EPILOGUE_CATEGORIES = {"elementwise"}
# Kernels that only move data between layouts or devices: never an IR operator's own work.
_PASS_THROUGH = {"ReorderInput", "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"}


def _family_compatible(kernel_op_type: str, ir_type: str) -> bool:
    """Can a (heavy) kernel type implement an IR operator type? Unknown kernel types can."""
    family = _KERNEL_FAMILY.get(kernel_op_type)
    if family is None:
        return True
    return _IR_FAMILY.get(ir_ops.spec(ir_type).category) == family


def _may_implement(kernel_op_type: str, ir_type: str) -> bool:
    """Family check, refined for light kernels by the decomposition table."""
    types = _KERNEL_IR_TYPES.get(kernel_op_type)
    if types is not None:
        return ir_type in types
    return _family_compatible(kernel_op_type, ir_type)


def _is_epilogue(ir_type: str) -> bool:
    return ir_ops.spec(ir_type).category in _EPILOGUE_CATEGORIES


_NAME_SEPARATORS = " /_:#"


def _name_origin(node_name: str, ir_names: list[str]) -> str | None:
    """The IR operator a kernel node is named after.

    The exporter names nodes ``X`` or ``X::suffix``; ORT keeps those names or decorates them
    (``X_nchwc``, ``X_bn_nchwc``, ``fused X``, ``fused X::matmul/MatMulAddFusion``). The longest IR
    name found in the node name, bounded by the start/end or by a separator, wins.
    """
    best: str | None = None
    for x in ir_names:  # longest first
        if best is not None and len(x) < len(best):
            break
        start = node_name.find(x)
        while start >= 0:
            end = start + len(x)
            left_ok = start == 0 or node_name[start - 1] in _NAME_SEPARATORS
            right_ok = end == len(node_name) or node_name[end] in _NAME_SEPARATORS
            if left_ok and right_ok:
                best = x
                break
            start = node_name.find(x, start + 1)
        if best is not None:
            break
    return best


def _nearest(
    start: str, step: Callable[[str], list[str]], passable: Callable[[str], bool], wanted: Callable[[str], bool]
) -> str | None:
    """Breadth-first from ``start`` along ``step`` through passable operators to the first wanted one."""
    seen, queue = {start}, deque([start])
    while queue:
        for nxt in step(queue.popleft()):
            if nxt in seen or not passable(nxt):
                continue
            if wanted(nxt):
                return nxt
            seen.add(nxt)
            queue.append(nxt)
    return None


def _reach(starts: list[str], step: Callable[[str], list[str]]) -> set[str]:
    """Everything reachable from ``starts`` along ``step`` (the starts excluded unless revisited)."""
    seen: set[str] = set()
    queue = deque(starts)
    while queue:
        for nxt in step(queue.popleft()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append(nxt)
    return seen


@dataclass
class KernelMap:
    """Which kernel nodes each IR operator owns, and which node covers each fused operator."""

    owner: dict[str, str | None]  # kernel node -> IR operator (None: inserted by the runtime)
    fused_into: dict[str, str]  # IR operator without a kernel of its own -> the kernel node covering it

    def nodes_of(self, op_name: str) -> list[str]:
        """Kernel nodes owned by an IR operator."""
        return [n for n, o in self.owner.items() if o == op_name]


def map_kernels(graph: Graph, nodes: list[KernelNode]) -> KernelMap:
    """Attribute every kernel node to the IR operator it implements, and every fused IR operator
    to the kernel that now covers it. ``nodes`` must be topologically ordered with unique names.

    Ownership of a kernel node (layout / copy nodes, ``_PASS_THROUGH``, are never owned):

    1. by name (``_name_origin``): ``X``, ``X::helper`` and ORT's decorations of them;
    2. by the tensors it writes: the IR operator that writes a tensor of the same name;
    3. if a heavy kernel (conv, gemm, pool) cannot implement the operator it is named after (an
       NCHWc ``Conv`` named after the ``relu`` it absorbed), the nearest operator of the right
       family reachable through operators without a kernel of their own takes it over: upstream
       only for epilogue types (activations, BN, element-wise), downstream then upstream for
       others (pad, transpose). If none fits, the named operator keeps it (NCHWc runs a lone BN
       as a 1x1 depthwise Conv, ``X_bn_nchwc``);
    4. by the tensors it reads, for a kernel ORT created without a name (an inlined HardSwish
       becomes an anonymous HardSigmoid + Mul): the IR operator of a matching type that consumes
       what it consumes;
    5. inside a region whose tensors were all renamed (NCHWc ``reorder_token_*``): the owner of
       a nearest upstream kernel if the kernel continues its decomposition (a Mul after that
       operator's HardSigmoid); else the first operator of a matching type, without a kernel,
       between the owners of its nearest owned upstream and downstream kernels, skipping the
       activation an upstream kernel absorbed (its ``activation`` attribute).

    A node left without an owner was inserted by the runtime (layout reorders, copies).

    An IR operator left without a kernel was fused; the node covering it is, in order:

    a. the node that writes the operator's output tensor (the end of a fused chain keeps its
       output name: FusedConv writes the ReLU's output), looking back through reorders;
    b. for epilogue types: the node covering the producers of its inputs, the latest of them
       when there are several (an ``add`` fused into the second conv of a residual block); for
       other types (pad, transpose, reshape), the node covering the consumers of its outputs,
       the earliest of them;
    c. the other direction of (b);
    d. the nearest IR operator, either direction, that has a kernel.
    """
    ir_names = sorted((o.name for o in graph.operators), key=len, reverse=True)
    op_by_name = {o.name: o for o in graph.operators}
    position = {o.name: i for i, o in enumerate(graph.operators)}
    producer = graph.producers()
    consumers = graph.consumers()
    by_name = {n.name: n for n in nodes}
    writer = {v: n for n in nodes for v in n.outputs if v}
    readers: dict[str, list[KernelNode]] = {}
    for n in nodes:
        for v in n.inputs:
            readers.setdefault(v, []).append(n)

    def ups(op_name: str) -> list[str]:
        return [producer[t].name for t in op_by_name[op_name].inputs if t in producer]

    def downs(op_name: str) -> list[str]:
        return [c.name for t in op_by_name[op_name].outputs for c in consumers.get(t, [])]

    def neighbours(op_name: str) -> list[str]:
        return ups(op_name) + downs(op_name)

    # 1 + 2: origins by name, then by written tensor.
    owner: dict[str, str | None] = {}
    for n in nodes:
        origin = None
        if n.op_type not in _PASS_THROUGH:
            origin = _name_origin(n.name, ir_names)
            if origin is None:
                origin = next((producer[v].name for v in n.outputs if v in producer), None)
        owner[n.name] = origin

    # 3: a heavy kernel of the wrong family hands itself over; topological order lets earlier
    # kernels claim their operators first.
    named = {o for o in owner.values() if o is not None}
    for n in nodes:
        origin = owner[n.name]
        if origin is None or _family_compatible(n.op_type, op_by_name[origin].type):
            continue

        def fits_kernel(op_name: str, kernel_type: str = n.op_type) -> bool:
            return _family_compatible(kernel_type, op_by_name[op_name].type)

        for step in (ups,) if _is_epilogue(op_by_name[origin].type) else (downs, ups):
            claimed = _nearest(origin, step, lambda o: o not in named, fits_kernel)
            if claimed is not None:
                owner[n.name] = claimed
                named.add(claimed)
                break

    # 4 + 5: anonymous kernels, in topological order so their upstream neighbours are settled.
    def nearest_owned(n: KernelNode, forward: bool) -> list[KernelNode]:
        """The nearest owned kernels upstream (or downstream) of ``n``, through unowned ones."""
        found: list[KernelNode] = []
        seen, queue = {n.name}, deque([n])
        while queue:
            cur = queue.popleft()
            nexts = (
                [r for v in cur.outputs for r in readers.get(v, [])]
                if forward
                else [writer[v] for v in cur.inputs if v in writer]
            )
            for k in nexts:
                if k.name in seen:
                    continue
                seen.add(k.name)
                if owner[k.name] is not None:
                    found.append(k)
                else:
                    queue.append(k)
        return found

    def absorbed_by(k: KernelNode) -> set[str]:
        """The IR activation a fused kernel took in (its ``activation`` attribute), if any: the
        first matching operator after its owner, past the BN / adds folded in before it."""
        wanted = _ACTIVATION_IR_TYPES.get(k.activation or "", set())
        start = owner[k.name]
        if not wanted or start is None:
            return set()
        hit = _nearest(
            start,
            downs,
            lambda o: o not in named or op_by_name[o].type in wanted,
            lambda o: op_by_name[o].type in wanted,
        )
        return {hit} if hit is not None else set()

    def kernel_types(op_name: str) -> set[str]:
        return {k.op_type for k in nodes if owner[k.name] == op_name}

    for n in nodes:
        if owner[n.name] is not None or n.op_type in _PASS_THROUGH:
            continue
        fits = [c.name for v in n.inputs for c in consumers.get(v, []) if _may_implement(n.op_type, c.type)]
        fits.sort(key=lambda o: (o in named, position[o]))
        if not fits:
            up_kernels = nearest_owned(n, forward=False)
            up = [u for k in up_kernels if (u := owner[k.name]) is not None]
            down = [d for k in nearest_owned(n, forward=True) if (d := owner[k.name]) is not None]
            # Continuing an upstream operator's decomposition (the Mul after its HardSigmoid)...
            fits = [
                u
                for u in dict.fromkeys(up)
                if _may_implement(n.op_type, op_by_name[u].type) and n.op_type not in kernel_types(u)
            ]
            if not fits:
                # ...or the first matching operator without a kernel between the upstream and
                # downstream owners, skipping the activation an upstream kernel absorbed.
                after = set(op_by_name)
                for u in up:
                    after &= _reach([u], downs)
                before = set(op_by_name)
                for d in down:
                    before &= _reach([d], ups) | {d}
                skip = set().union(*(absorbed_by(k) for k in up_kernels)) if up_kernels else set()
                fits = sorted(
                    (
                        o
                        for o in after & before
                        if o not in named and o not in skip and _may_implement(n.op_type, op_by_name[o].type)
                    ),
                    key=lambda o: position[o],
                )
        if fits:
            owner[n.name] = fits[0]
            named.add(fits[0])

    owned: dict[str, list[KernelNode]] = {}
    for n in nodes:
        if owner[n.name] is not None:
            owned.setdefault(owner[n.name], []).append(n)  # type: ignore[arg-type]

    # Ancestor sets over the kernel graph, to find which of several candidates runs last.
    ancestors: dict[str, int] = {}
    bit = {n.name: 1 << i for i, n in enumerate(nodes)}
    for n in nodes:  # already topological
        acc = 0
        for v in n.inputs:
            w = writer.get(v)
            if w is not None and w.name != n.name:
                acc |= ancestors.get(w.name, 0) | bit[w.name]
        ancestors[n.name] = acc

    def latest(cands: list[KernelNode]) -> KernelNode:
        for c in cands:
            if all(o.name == c.name or ancestors[c.name] & bit[o.name] for o in cands):
                return c
        return max(cands, key=lambda c: c.position)

    def through_pass(n: KernelNode) -> KernelNode:
        """Step back from a layout reorder to the kernel that fed it."""
        seen: set[str] = set()
        while n.op_type in _PASS_THROUGH and n.name not in seen:
            seen.add(n.name)
            prev = next((writer[v] for v in n.inputs if v in writer), None)
            if prev is None:
                break
            n = prev
        return n

    fused: dict[str, str] = {}
    resolving: set[str] = set()

    def cover(op_name: str, as_producer: bool) -> KernelNode | None:
        """The kernel node standing for an operator's work (its last kernel when seen as a
        producer, its first as a consumer)."""
        if op_name in owned:
            ks = owned[op_name]
            return max(ks, key=lambda k: k.position) if as_producer else min(ks, key=lambda k: k.position)
        name = resolve(op_name)
        return by_name[name] if name is not None else None

    def via_producers(o: Any) -> KernelNode | None:
        cands = [c for t in o.inputs if t in producer if (c := cover(producer[t].name, True)) is not None]
        return latest(cands) if cands else None

    def via_consumers(o: Any) -> KernelNode | None:
        cands = [c for t in o.outputs for u in consumers.get(t, []) if (c := cover(u.name, False)) is not None]
        return min(cands, key=lambda c: c.position) if cands else None

    def resolve(op_name: str) -> str | None:
        if op_name in fused:
            return fused[op_name]
        if op_name in resolving:
            return None
        resolving.add(op_name)
        try:
            o = op_by_name[op_name]
            found: KernelNode | None = None
            for t in o.outputs:  # (a)
                if t in writer:
                    found = through_pass(writer[t])
                    break
            if found is None:  # (b), (c)
                order = (via_producers, via_consumers) if _is_epilogue(o.type) else (via_consumers, via_producers)
                for rule in order:
                    found = rule(o)
                    if found is not None:
                        break
            if found is not None:
                fused[op_name] = found.name
            return found.name if found is not None else None
        finally:
            resolving.discard(op_name)

    for op in graph.operators:
        if op.name not in owned and resolve(op.name) is None and nodes:
            # (d) the nearest operator, either direction, that has a kernel.
            near = _nearest(op.name, neighbours, lambda _: True, lambda x: x in owned)
            fused[op.name] = owned[near][0].name if near is not None else through_pass(nodes[-1]).name
    return KernelMap(owner, fused)


def op_timings(
    graph: Graph, nodes: list[KernelNode], profiles: dict[str, NodeProfile], kmap: KernelMap, runs: int
) -> list[OpTiming]:
    """One row per IR operator (timed, or fused into a kernel) then one per runtime-inserted kernel.

    An operator owning several kernels (``X`` and its ``X::`` helpers, an inlined function) gets
    their per-run sums; a kernel the profiler never saw counts 0 (it did no timed work).
    """
    by_name = {n.name: n for n in nodes}
    rows: list[OpTiming] = []
    for index, o in enumerate(graph.operators):
        mine = sorted((by_name[n] for n in kmap.nodes_of(o.name)), key=lambda k: k.position)
        shapes_in = [list(s) for s in graph.input_shapes(o)]
        shapes_out = [list(s) for s in graph.output_shapes(o)]
        if mine:
            per_run = [0.0] * runs
            for k in mine:
                for i, ms in enumerate(profiles[k.name].per_run_ms if k.name in profiles else []):
                    per_run[i] += ms
            kernel = "+".join(dict.fromkeys(k.kernel for k in mine))
            rows.append(
                OpTiming(index, o.name, o.type, kernel, shapes_in, shapes_out, dict(o.attrs), summarize(per_run))
            )
        else:
            into = kmap.fused_into[o.name]
            rows.append(
                OpTiming(
                    index,
                    o.name,
                    o.type,
                    by_name[into].kernel if into in by_name else "",
                    shapes_in,
                    shapes_out,
                    dict(o.attrs),
                    None,
                    fused_into=into,
                )
            )
    seen = set(by_name)
    for n in nodes:
        if kmap.owner[n.name] is None and n.name in profiles:
            p = profiles[n.name]
            rows.append(
                OpTiming(
                    None, n.name, "runtime", n.kernel, p.input_shapes, p.output_shapes, {}, summarize(p.per_run_ms)
                )
            )
    for name, p in profiles.items():  # a profiled kernel missing from the saved model: keep its time
        if name not in seen:
            rows.append(
                OpTiming(None, name, "runtime", p.op_type, p.input_shapes, p.output_shapes, {}, summarize(p.per_run_ms))
            )
    return rows
