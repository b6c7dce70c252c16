"""Mapping ONNX Runtime's kernels back to graph operators, and their profiled times to rows.

ONNX Runtime fuses nodes (Conv + Relu into FusedConv, BatchNormalization folded into Conv), runs
NCHWc layout kernels on x86 and inserts reorders. ``map_kernels`` decides, for each IR operator,
which optimized-graph kernel implements it, one named rule per fusion it recognises:

* **ownership** of a kernel node (layout / copy nodes, ``_PASS_THROUGH``, are never owned), in
  three passes over the nodes in topological order, each trying its rules in turn:

  1. by name (``_name_origin``): ``X``, ``X::helper`` and ORT's decorations of them, or of the
     name of a node of an uploaded model that the import folded or fused into ``X``
     (``node_owners``: the importer's node map, a folded node going to the operator it feeds);
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

* **coverage** of an IR operator left without a kernel (it was fused); the node covering it is,
  in order:

  a. the node that writes the operator's output tensor (the end of a fused chain keeps its
     output name: FusedConv writes the ReLU's output), looking back through reorders;
  b. for epilogue types: the node covering the producers of its inputs, the latest of them
     when there are several (an ``add`` fused into the second conv of a residual block); for
     other types (pad, transpose, reshape), the node covering the consumers of its outputs,
     the earliest of them;
  c. the other direction of (b);
  d. the nearest IR operator, either direction, that has a kernel.

``op_timings`` turns the per-run kernel durations into one ``OpTiming`` per IR operator (fused
operators name their kernel in ``fused_into``) plus one per kernel the runtime added on its own.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import onnx

from devicelab.backends.base import OpTiming
from devicelab.backends.ort_profile import KernelNode, NodeProfile
from devicelab.graph import ops as ir_ops
from devicelab.graph.ir import Graph, Operator
from devicelab.graph.onnx.prepare import node_names
from devicelab.measure.stats import summarize

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
    "QLinearMatMul": "fc",
    "MatMulIntegerToFloat": "fc",
    "DynamicQuantizeMatMul": "fc",
    "QLinearAveragePool": "pool",
    "QLinearGlobalAveragePool": "global_pool",
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
    "QuantizeLinear": {"quantize_linear"},
    "DequantizeLinear": {"dequantize_linear"},
    "QLinearAdd": {"add"},
    "QLinearMul": {"mul"},
    "QLinearConcat": {"concat"},
    "QLinearSigmoid": {"sigmoid"},
    "QLinearLeakyRelu": {"leaky_relu"},
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
# ... and so is a quantize after a kernel (ORT's QDQ fusion makes DQ -> Conv -> Q one QLinearConv,
# which writes the quantize's output); a dequantize is folded into the kernel after it.
_EPILOGUE_TYPES = {"quantize_linear"}
# Kernels that only move data between layouts or devices: never an IR operator's own work.
_PASS_THROUGH = {"ReorderInput", "ReorderOutput", "MemcpyToHost", "MemcpyFromHost"}
_NAME_SEPARATORS = " /_:#"


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
    """Whether ORT folds an operator of this type into the kernel before it."""
    return ir_type in _EPILOGUE_TYPES or ir_ops.spec(ir_type).category in _EPILOGUE_CATEGORIES


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


@dataclass
class _Mapping:
    """The two graphs' indices and the mapping as the rules build it."""

    graph: Graph
    nodes: list[KernelNode]
    node_owners: dict[str, str] = field(default_factory=dict)  # an uploaded model's node -> IR operator
    owner: dict[str, str | None] = field(init=False)
    named: set[str] = field(default_factory=set)  # IR operators that own a kernel so far
    fused: dict[str, str] = field(default_factory=dict)
    resolving: set[str] = field(default_factory=set)  # operators whose cover is being looked for

    def __post_init__(self) -> None:
        g, nodes = self.graph, self.nodes
        self.ir_names = sorted((o.name for o in g.operators), key=len, reverse=True)
        self.op_by_name = {o.name: o for o in g.operators}
        self.node_owners = {k: v for k, v in self.node_owners.items() if v in self.op_by_name}
        self.names = sorted(set(self.ir_names) | set(self.node_owners), key=len, reverse=True)
        self.position = {o.name: i for i, o in enumerate(g.operators)}
        self.producer = g.producers()
        self.consumers = g.consumers()
        self.by_name = {n.name: n for n in nodes}
        self.writer = {v: n for n in nodes for v in n.outputs if v}
        self.readers: dict[str, list[KernelNode]] = {}
        for n in nodes:
            for v in n.inputs:
                self.readers.setdefault(v, []).append(n)
        self.owner = {n.name: None for n in nodes}
        self.owned: dict[str, list[KernelNode]] = {}
        # Ancestor sets over the kernel graph (bit masks), to find which of several kernels runs last.
        self.bit = {n.name: 1 << i for i, n in enumerate(nodes)}
        self.ancestors: dict[str, int] = {}
        for n in nodes:  # already topological
            acc = 0
            for v in n.inputs:
                w = self.writer.get(v)
                if w is not None and w.name != n.name:
                    acc |= self.ancestors.get(w.name, 0) | self.bit[w.name]
            self.ancestors[n.name] = acc

    def ups(self, op_name: str) -> list[str]:
        """The IR operators that write an operator's inputs."""
        return [self.producer[t].name for t in self.op_by_name[op_name].inputs if t in self.producer]

    def downs(self, op_name: str) -> list[str]:
        """The IR operators that read an operator's outputs."""
        return [c.name for t in self.op_by_name[op_name].outputs for c in self.consumers.get(t, [])]

    def neighbours(self, op_name: str) -> list[str]:
        """The IR operators either side of an operator."""
        return self.ups(op_name) + self.downs(op_name)

    def ir_type(self, op_name: str) -> str:
        """The IR type of an operator."""
        return self.op_by_name[op_name].type

    def own(self, node: KernelNode, op_name: str) -> None:
        """Record that ``op_name`` owns ``node``."""
        self.owner[node.name] = op_name
        self.named.add(op_name)

    def nearest_owned(self, n: KernelNode, forward: bool) -> list[KernelNode]:
        """The nearest owned kernels upstream (or downstream) of ``n``, through unowned ones."""
        found: list[KernelNode] = []
        seen, queue = {n.name}, deque([n])
        while queue:
            cur = queue.popleft()
            nexts = (
                [r for v in cur.outputs for r in self.readers.get(v, [])]
                if forward
                else [self.writer[v] for v in cur.inputs if v in self.writer]
            )
            for k in nexts:
                if k.name in seen:
                    continue
                seen.add(k.name)
                if self.owner[k.name] is not None:
                    found.append(k)
                else:
                    queue.append(k)
        return found

    def latest(self, cands: list[KernelNode]) -> KernelNode:
        """The candidate every other one runs before (else the last in topological order)."""
        for c in cands:
            if all(o.name == c.name or self.ancestors[c.name] & self.bit[o.name] for o in cands):
                return c
        return max(cands, key=lambda c: c.position)

    def through_pass(self, n: KernelNode) -> KernelNode:
        """Step back from a layout reorder to the kernel that fed it."""
        seen: set[str] = set()
        while n.op_type in _PASS_THROUGH and n.name not in seen:
            seen.add(n.name)
            prev = next((self.writer[v] for v in n.inputs if v in self.writer), None)
            if prev is None:
                break
            n = prev
        return n


# ---------------------------------------------------------------------------------------------
# Ownership: which IR operator a kernel node implements


def _owner_by_name(m: _Mapping, n: KernelNode) -> str | None:
    """(1) A kernel named ``X``, ``X::helper`` or ORT's decoration of it (``X_nchwc``, ``fused X``),
    or after an uploaded model's node that went into ``X``."""
    found = _name_origin(n.name, m.names)
    return m.node_owners.get(found, found) if found is not None else None


def _owner_by_written_tensor(m: _Mapping, n: KernelNode) -> str | None:
    """(2) A renamed kernel that still writes an IR operator's output tensor."""
    return next((m.producer[v].name for v in n.outputs if v in m.producer), None)


def _owner_of_its_family_nearby(m: _Mapping, n: KernelNode) -> str | None:
    """(3) A heavy kernel named after the epilogue it absorbed (NCHWc ``Conv`` named ``relu_nchwc``):
    the nearest operator of its family, through operators that have no kernel."""
    origin = m.owner[n.name]
    assert origin is not None

    def fits(op_name: str) -> bool:
        return _family_compatible(n.op_type, m.ir_type(op_name))

    for step in (m.ups,) if _is_epilogue(m.ir_type(origin)) else (m.downs, m.ups):
        claimed = _nearest(origin, step, lambda o: o not in m.named, fits)
        if claimed is not None:
            return claimed
    return None


def _owner_by_read_tensors(m: _Mapping, n: KernelNode) -> str | None:
    """(4) An anonymous kernel of an inlined function (HardSwish as HardSigmoid + Mul): the
    operator of a matching type that reads what it reads, one without a kernel first."""
    fits = [c.name for v in n.inputs for c in m.consumers.get(v, []) if _may_implement(n.op_type, c.type)]
    fits.sort(key=lambda o: (o in m.named, m.position[o]))
    return fits[0] if fits else None


def _owner_continuing_a_decomposition(m: _Mapping, n: KernelNode) -> str | None:
    """(5a) An anonymous kernel in an NCHWc region (``reorder_token_*`` tensors) that continues an
    upstream operator's decomposition (the Mul after its HardSigmoid)."""
    up = [u for k in m.nearest_owned(n, forward=False) if (u := m.owner[k.name]) is not None]
    for u in dict.fromkeys(up):
        if _may_implement(n.op_type, m.ir_type(u)) and all(
            k.op_type != n.op_type for k in m.nodes if m.owner[k.name] == u
        ):
            return u
    return None


def _absorbed_by(m: _Mapping, k: KernelNode) -> set[str]:
    """The IR activation a fused kernel took in (its ``activation`` attribute), if any: the
    first matching operator after its owner, past the BN / adds folded in before it."""
    wanted = _ACTIVATION_IR_TYPES.get(k.activation or "", set())
    start = m.owner[k.name]
    if not wanted or start is None:
        return set()
    hit = _nearest(
        start,
        m.downs,
        lambda o: o not in m.named or m.ir_type(o) in wanted,
        lambda o: m.ir_type(o) in wanted,
    )
    return {hit} if hit is not None else set()


def _owner_between_owned_kernels(m: _Mapping, n: KernelNode) -> str | None:
    """(5b) An anonymous kernel in an NCHWc region: the first operator of a matching type without a
    kernel between the owners of its nearest owned neighbours, past the activation an upstream
    fused kernel absorbed."""
    up_kernels = m.nearest_owned(n, forward=False)
    up = [u for k in up_kernels if (u := m.owner[k.name]) is not None]
    down = [d for k in m.nearest_owned(n, forward=True) if (d := m.owner[k.name]) is not None]
    after = set(m.op_by_name)
    for u in up:
        after &= _reach([u], m.downs)
    before = set(m.op_by_name)
    for d in down:
        before &= _reach([d], m.ups) | {d}
    skip = set().union(*(_absorbed_by(m, k) for k in up_kernels))
    fits = [o for o in after & before if o not in m.named and o not in skip and _may_implement(n.op_type, m.ir_type(o))]
    return min(fits, key=lambda o: m.position[o]) if fits else None


def _does_work(m: _Mapping, n: KernelNode) -> bool:
    """Whether a node computes something (it is not a layout reorder or a copy)."""
    return n.op_type not in _PASS_THROUGH


def _named_after_another_family(m: _Mapping, n: KernelNode) -> bool:
    """Whether a kernel's owner so far is an operator its type cannot implement."""
    origin = m.owner[n.name]
    return origin is not None and not _family_compatible(n.op_type, m.ir_type(origin))


def _still_anonymous(m: _Mapping, n: KernelNode) -> bool:
    """Whether a kernel (not a layout or copy node) has no owner yet."""
    return m.owner[n.name] is None and _does_work(m, n)


OwnerRule = Callable[[_Mapping, KernelNode], str | None]

# Passes over the kernel nodes in topological order (earlier kernels claim their operators first):
# which nodes a pass considers, and its rules, tried in turn until one names an owner.
_OWNER_PASSES: tuple[tuple[Callable[[_Mapping, KernelNode], bool], tuple[OwnerRule, ...]], ...] = (
    (_does_work, (_owner_by_name, _owner_by_written_tensor)),
    (_named_after_another_family, (_owner_of_its_family_nearby,)),
    (_still_anonymous, (_owner_by_read_tensors, _owner_continuing_a_decomposition, _owner_between_owned_kernels)),
)


# ---------------------------------------------------------------------------------------------
# Coverage: which kernel node stands for an operator fused into it


def _cover(m: _Mapping, op_name: str, as_producer: bool) -> KernelNode | None:
    """The kernel node standing for an operator's work (its last kernel when seen as a producer,
    its first as a consumer)."""
    if op_name in m.owned:
        ks = m.owned[op_name]
        return max(ks, key=lambda k: k.position) if as_producer else min(ks, key=lambda k: k.position)
    name = _resolve(m, op_name)
    return m.by_name[name] if name is not None else None


def _covered_by_output_writer(m: _Mapping, o: Operator) -> KernelNode | None:
    """(a) The end of a fused chain: the kernel writing the operator's output (FusedConv writes the
    ReLU's), looking back through reorders."""
    t = next((t for t in o.outputs if t in m.writer), None)
    return m.through_pass(m.writer[t]) if t is not None else None


def _covered_by_producers(m: _Mapping, o: Operator) -> KernelNode | None:
    """(b) An epilogue (BN, activation, residual add) folded into the kernel before it: the latest
    kernel covering its inputs' producers."""
    cands = [c for t in o.inputs if t in m.producer if (c := _cover(m, m.producer[t].name, True)) is not None]
    return m.latest(cands) if cands else None


def _covered_by_consumers(m: _Mapping, o: Operator) -> KernelNode | None:
    """(b) A pad, transpose or reshape folded into the kernel after it: the earliest kernel
    covering its outputs' consumers."""
    cands = [c for t in o.outputs for u in m.consumers.get(t, []) if (c := _cover(m, u.name, False)) is not None]
    return min(cands, key=lambda c: c.position) if cands else None


def _cover_rules(o: Operator) -> tuple[Callable[[_Mapping, Operator], KernelNode | None], ...]:
    """Rules (a) to (c) in the order that fits an operator's type."""
    if _is_epilogue(o.type):
        return (_covered_by_output_writer, _covered_by_producers, _covered_by_consumers)
    return (_covered_by_output_writer, _covered_by_consumers, _covered_by_producers)


def _resolve(m: _Mapping, op_name: str) -> str | None:
    """The kernel node covering an operator without a kernel by rules (a) to (c), remembered."""
    if op_name in m.fused:
        return m.fused[op_name]
    if op_name in m.resolving:
        return None
    m.resolving.add(op_name)
    try:
        o = m.op_by_name[op_name]
        for rule in _cover_rules(o):
            found = rule(m, o)
            if found is not None:
                m.fused[op_name] = found.name
                return found.name
        return None
    finally:
        m.resolving.discard(op_name)


def _covered_by_nearest_owner(m: _Mapping, op_name: str) -> str:
    """(d) The first kernel of the nearest operator, either direction, that has one."""
    near = _nearest(op_name, m.neighbours, lambda _: True, lambda x: x in m.owned)
    return m.owned[near][0].name if near is not None else m.through_pass(m.nodes[-1]).name


def map_kernels(graph: Graph, nodes: list[KernelNode], node_owners: dict[str, str] | None = None) -> KernelMap:
    """Attribute every kernel node to the IR operator it implements, and every fused IR operator
    to the kernel that now covers it (the rules are the module's). ``nodes`` must be
    topologically ordered with unique names; ``node_owners`` (``uploaded_node_owners``) names the
    IR operator of each node of the uploaded model the graph was imported from."""
    m = _Mapping(graph, nodes, dict(node_owners or {}))
    for considers, rules in _OWNER_PASSES:
        for n in nodes:
            if considers(m, n):
                found = next((o for rule in rules if (o := rule(m, n)) is not None), None)
                if found is not None:
                    m.own(n, found)
    for n in nodes:
        if (o := m.owner[n.name]) is not None:
            m.owned.setdefault(o, []).append(n)
    for op in graph.operators:
        if op.name not in m.owned and _resolve(m, op.name) is None and nodes:
            m.fused[op.name] = _covered_by_nearest_owner(m, op.name)
    return KernelMap(m.owner, m.fused)


def uploaded_node_owners(model: onnx.ModelProto, node_map: Mapping[str, str | None]) -> dict[str, str]:
    """The IR operator of each node of an uploaded ONNX model (named as the importer names them,
    ``devicelab.graph.onnx.prepare.node_names``), from the import's ``node_map``: a node fused into
    an operator (MatMul + Add into a ``fully_connected``) maps to it; a node the import folded or
    dropped (the DequantizeLinear of a QDQ weight, a Constant, an Identity) to the first operator
    it feeds, where the runtime does its work if it keeps it as a kernel."""
    nodes = list(model.graph.node)
    names = node_names(nodes)
    readers: dict[str, list[int]] = {}
    for i, n in enumerate(nodes):
        for t in n.input:
            readers.setdefault(t, []).append(i)
    owners: dict[str, str] = {}
    for i, name in enumerate(names):
        found = node_map.get(name)
        if found is None:  # folded: the operator it feeds, breadth-first downstream
            seen, queue = {i}, deque([i])
            while queue and found is None:
                for j in (j for t in nodes[queue.popleft()].output for j in readers.get(t, [])):
                    if j in seen:
                        continue
                    seen.add(j)
                    found = node_map.get(names[j])
                    if found is not None:
                        break
                    queue.append(j)
        if found is not None and found != name:
            owners[name] = found
    return owners


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


__all__ = ["KernelMap", "map_kernels", "op_timings", "uploaded_node_owners"]
