"""Pattern fusion: multi-node ONNX idioms become one IR operator.

Each rule looks at one operator and returns (the group it fuses, the new operator), named after
the operator that writes the pattern's output: MatMul/Gemm + Add of a constant -> fully_connected
with bias, x * Sigmoid(x) -> swish, x * HardSigmoid(x) -> hard_swish, the erf form of GELU ->
gelu, Reshape-Transpose-Reshape -> channel_shuffle.
"""

from __future__ import annotations

from collections.abc import Callable

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Operator, Tensor

# Internal operator types that exist only between the node walk and the fusion passes.
PSEUDO = {"erf": "Erf"}


class _Patterns:
    """Producer / consumer lookups for the fusion rules."""

    def __init__(self, operators: list[Operator], outputs: set[str], tensors: dict[str, Tensor]) -> None:
        self.producer = {t: o for o in operators for t in o.outputs}
        self.consumers: dict[str, list[Operator]] = {}
        for o in operators:
            for t in o.inputs:
                self.consumers.setdefault(t, []).append(o)
        self.outputs = outputs
        self.position = {o.name: i for i, o in enumerate(operators)}
        self.tensors = tensors

    def only_consumer(self, t: str) -> Operator | None:
        """The one operator that reads ``t``, if exactly one does and ``t`` is not a graph output."""
        c = self.consumers.get(t, [])
        return c[0] if len(c) == 1 and t not in self.outputs else None

    def single_use_producer(self, t: str, user: Operator, op_type: str) -> Operator | None:
        """The operator of ``op_type`` that writes ``t``, when ``user`` is the only reader of ``t``."""
        p = self.producer.get(t)
        if p is None or p.type != op_type or self.only_consumer(t) is not user:
            return None
        return p

    def shape(self, t: str) -> tuple[int, ...]:
        """Shape of a tensor."""
        return self.tensors[t].shape


def _close(value: float | None, target: float, tol: float = 1e-4) -> bool:
    return value is not None and abs(value - target) <= tol * max(1.0, abs(target))


def _const_op(o: Operator | None, op_type: str, value: float, const_first: bool | None = False) -> bool:
    """``o`` is a binary operator of ``op_type`` with a scalar constant of ``value``."""
    if o is None or o.type != op_type or len(o.inputs) != 1:
        return False
    if const_first is not None and o.attrs.get("const_first", False) != const_first:
        return False
    return ops.numel(o.attrs["const_shape"]) == 1 and _close(o.attrs.get("const_value"), value)


def _fuse_fc_bias(p: _Patterns, o: Operator) -> tuple[list[Operator], Operator] | None:
    if o.type != "fully_connected" or o.attrs["bias"]:
        return None
    add = p.only_consumer(o.outputs[0])
    if add is None or add.type != "add" or len(add.inputs) != 1:
        return None
    n = o.attrs["out_features"]
    cs = add.attrs["const_shape"]
    if not cs or cs[-1] != n or ops.numel(cs) != n or p.shape(add.outputs[0]) != p.shape(o.outputs[0]):
        return None
    return [o, add], Operator(add.name, "fully_connected", list(o.inputs), list(add.outputs), {**o.attrs, "bias": True})


def _fuse_gated(p: _Patterns, o: Operator) -> tuple[list[Operator], Operator] | None:
    """x * sigmoid(x) -> swish, x * hard_sigmoid(x) -> hard_swish."""
    if o.type != "mul" or len(o.inputs) != 2:
        return None
    for gate_index in (1, 0):
        gate, x = o.inputs[gate_index], o.inputs[1 - gate_index]
        for gate_type, fused in (("sigmoid", "swish"), ("hard_sigmoid", "hard_swish")):
            g = p.single_use_producer(gate, o, gate_type)
            if g is not None and g.inputs[0] == x:
                return [g, o], Operator(o.name, fused, [x], list(o.outputs), {})
    return None


_SQRT2 = 2.0**0.5


def _fuse_gelu(p: _Patterns, o: Operator) -> tuple[list[Operator], Operator] | None:
    """x * 0.5 * (1 + erf(x / sqrt(2))) in the orders PyTorch and the exporter write it."""
    if o.type != "erf":
        return None
    scaled = p.single_use_producer(o.inputs[0], o, "div") or p.single_use_producer(o.inputs[0], o, "mul")
    if scaled is None or not (_const_op(scaled, "div", _SQRT2) or _const_op(scaled, "mul", 1 / _SQRT2, None)):
        return None
    x = scaled.inputs[0]
    plus = p.only_consumer(o.outputs[0])
    if not _const_op(plus, "add", 1.0, None):
        return None
    assert plus is not None
    m1 = p.only_consumer(plus.outputs[0])
    if m1 is None or m1.type != "mul":
        return None
    head = [scaled, o, plus, m1]
    if len(m1.inputs) == 2 and x in m1.inputs:  # (x * (1 + erf)) * 0.5
        m2 = p.only_consumer(m1.outputs[0])
        if _const_op(m2, "mul", 0.5, None):
            assert m2 is not None
            return [*head, m2], Operator(m2.name, "gelu", [x], list(m2.outputs), {})
    if _const_op(m1, "mul", 0.5, None):  # x * ((1 + erf) * 0.5)
        m2 = p.only_consumer(m1.outputs[0])
        if m2 is not None and m2.type == "mul" and len(m2.inputs) == 2 and x in m2.inputs:
            return [*head, m2], Operator(m2.name, "gelu", [x], list(m2.outputs), {})
    if len(m1.inputs) == 2:  # (x * 0.5) * (1 + erf)
        other = m1.inputs[1] if m1.inputs[0] == plus.outputs[0] else m1.inputs[0]
        half = p.single_use_producer(other, m1, "mul")
        if half is not None and _const_op(half, "mul", 0.5, None) and half.inputs[0] == x:
            return [scaled, o, plus, half, m1], Operator(m1.name, "gelu", [x], list(m1.outputs), {})
    return None


def _fuse_channel_shuffle(p: _Patterns, o: Operator) -> tuple[list[Operator], Operator] | None:
    """Reshape [N,C,H,W]->[N,g,C/g,H,W], Transpose [0,2,1,3,4], Reshape back -> channel_shuffle."""
    if o.type != "reshape":
        return None
    t = p.single_use_producer(o.inputs[0], o, "transpose")
    if t is None or t.attrs["perm"] != [0, 2, 1, 3, 4]:
        return None
    r1 = p.single_use_producer(t.inputs[0], t, "reshape")
    if r1 is None:
        return None
    x = r1.inputs[0]
    xs, split = p.shape(x), p.shape(r1.outputs[0])
    if len(xs) != 4 or len(split) != 5 or p.shape(o.outputs[0]) != xs:
        return None
    n, g, cg, h, w = split
    if (n, g * cg, h, w) != xs or g < 1:
        return None
    return [r1, t, o], Operator(o.name, "channel_shuffle", [x], list(o.outputs), {"groups": g})


Rule = Callable[[_Patterns, Operator], tuple[list[Operator], Operator] | None]

RULES: tuple[Rule, ...] = (_fuse_fc_bias, _fuse_gated, _fuse_gelu, _fuse_channel_shuffle)


def fuse(
    operators: list[Operator], outputs: set[str], tensors: dict[str, Tensor], sources: dict[str, list[str]]
) -> list[Operator]:
    """The operators with every rule applied; ``sources`` learns which operators each fused one replaced."""
    for rule in RULES:
        operators = _apply(rule, operators, outputs, tensors, sources)
    for o in operators:
        if o.type in PSEUDO:
            raise GraphError(
                f"{PSEUDO[o.type]} is not in the vocabulary; it is only read as part of the GELU pattern "
                "x * 0.5 * (1 + erf(x / sqrt(2)))",
                node=o.name,
                op=PSEUDO[o.type],
            )
    return operators


def _apply(
    rule: Rule,
    operators: list[Operator],
    outputs: set[str],
    tensors: dict[str, Tensor],
    sources: dict[str, list[str]],
) -> list[Operator]:
    pat = _Patterns(operators, outputs, tensors)
    used: set[str] = set()
    replace: dict[str, Operator] = {}
    removed: set[str] = set()
    for o in operators:
        if o.name in used:
            continue
        found = rule(pat, o)
        if found is None:
            continue
        group, new = found
        if any(g.name in used for g in group):
            continue
        used.update(g.name for g in group)
        last = max(group, key=lambda g: pat.position[g.name])
        replace[last.name] = new
        removed.update(g.name for g in group if g is not last)
        sources[new.name] = [s for g in group for s in sources.pop(g.name, [g.name])]
    if not replace:
        return operators
    return [replace.get(o.name, o) for o in operators if o.name not in removed]
