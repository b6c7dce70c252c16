"""The graph IR: tensors, operators and the graph that joins them.

A ``Graph`` holds activation tensors (name, shape, dtype) and operators that read and write
them by name; weights live inside operators as attributes (``out_channels``, ``kernel``, ...)
so the IR stays small and a NAS tool can describe a network without shipping weights. Edges are
the tensors: an edge runs from the operator that writes a tensor to every operator that reads
it. ``Graph.check()`` re-derives every shape from the graph inputs, so a graph that passed it is
consistent; the readers (ONNX, TFLite, JSON) and the builder all end with it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ops import Shape

# Operator types that exist only in quantized models.
QUANTIZATION_TYPES = frozenset({"quantize_linear", "dequantize_linear", "conv_integer", "matmul_integer"})


@dataclass(frozen=True)
class Tensor:
    """An activation tensor: a name, an NCHW shape with the batch dimension, and a dtype."""

    name: str
    shape: Shape
    dtype: str = "float32"


@dataclass
class Operator:
    """One operator: its type from ``ops.OPS``, the tensors it reads and writes, its attrs."""

    name: str
    type: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)

    @property
    def category(self) -> str:
        """The operator's Table-3 category (conv, dwconv, fc, pool, elementwise, ...)."""
        return ops.spec(self.type, self.name).category


@dataclass(frozen=True)
class OpCost:
    """Multiply-adds, FLOPs and parameters of one operator."""

    macs: int
    flops: int
    params: int


@dataclass
class Graph:
    """A network: named input tensors, operators in topological order, named outputs."""

    name: str
    tensors: dict[str, Tensor]
    inputs: list[str]
    outputs: list[str]
    operators: list[Operator]

    # -- structure ---------------------------------------------------------------------------

    def op(self, name: str) -> Operator:
        """The operator with this name."""
        for o in self.operators:
            if o.name == name:
                return o
        raise KeyError(name)

    def producers(self) -> dict[str, Operator]:
        """Map from tensor name to the operator that writes it."""
        return {t: o for o in self.operators for t in o.outputs}

    def consumers(self) -> dict[str, list[Operator]]:
        """Map from tensor name to the operators that read it, in graph order."""
        out: dict[str, list[Operator]] = defaultdict(list)
        for o in self.operators:
            for t in o.inputs:
                out[t].append(o)
        return dict(out)

    def edges(self) -> list[tuple[str, str, str]]:
        """Every (producer operator, consumer operator, tensor) triple."""
        prod = self.producers()
        return [(prod[t].name, o.name, t) for o in self.operators for t in o.inputs if t in prod]

    def input_shapes(self, op: Operator) -> list[Shape]:
        """Shapes of the tensors an operator reads."""
        return [self.tensors[t].shape for t in op.inputs]

    def output_shapes(self, op: Operator) -> list[Shape]:
        """Shapes of the tensors an operator writes."""
        return [self.tensors[t].shape for t in op.outputs]

    def topological_order(self) -> list[Operator]:
        """Operators ordered so each comes after the producers of its inputs (stable, Kahn)."""
        prod = self.producers()
        indegree = {o.name: len({prod[t].name for t in o.inputs if t in prod}) for o in self.operators}
        cons = self.consumers()
        ready = [o for o in self.operators if indegree[o.name] == 0]
        order: list[Operator] = []
        position = {o.name: i for i, o in enumerate(self.operators)}
        while ready:
            ready.sort(key=lambda o: position[o.name])
            current = ready.pop(0)
            order.append(current)
            seen: set[str] = set()
            for t in current.outputs:
                for nxt in cons.get(t, []):
                    if nxt.name in seen:
                        continue
                    seen.add(nxt.name)
                    indegree[nxt.name] -= 1
                    if indegree[nxt.name] == 0:
                        ready.append(nxt)
        if len(order) != len(self.operators):
            stuck = sorted(set(o.name for o in self.operators) - {o.name for o in order})
            raise GraphError(f"the graph has a cycle through {stuck[:5]}", node=stuck[0])
        return order

    def sorted(self) -> Graph:
        """A copy whose operator list is in topological order."""
        return Graph(self.name, dict(self.tensors), list(self.inputs), list(self.outputs), self.topological_order())

    # -- checking ----------------------------------------------------------------------------

    def check_names(self) -> None:
        """Refuse a name with a NUL character, naming where it is: it can be neither stored
        (PostgreSQL's text and jsonb refuse it) nor shown. Every reader calls this."""
        if "\x00" in self.name:
            raise GraphError(f"the graph's name {self.name!r} contains a NUL character")
        for name in self.tensors:
            if "\x00" in name:
                raise GraphError(f"tensor name {name!r} contains a NUL character", node=name)
        for o in self.operators:
            if "\x00" in o.name:
                raise GraphError(f"operator name {o.name!r} contains a NUL character", node=o.name, op=o.type)

    def check(self, infer: bool = True) -> Graph:
        """Validate names, edges, order and every shape; return self, or raise ``GraphError``.

        ``infer=False`` is for a producer that has just normalized every operator and inferred
        its outputs in order (``GraphBuilder``, the JSON reader): names, edges and order are
        still checked, attributes and shapes not a second time."""
        if not self.operators:
            raise GraphError("the graph has no operators")
        self.check_names()
        if len({o.name for o in self.operators}) != len(self.operators):
            names = Counter(o.name for o in self.operators)
            dup = [n for n, c in names.items() if c > 1]
            raise GraphError("operator name is used more than once", node=dup[0])
        for t in self.inputs:
            if t not in self.tensors:
                raise GraphError(f"graph input {t!r} has no tensor entry", node=t)
        written: set[str] = set(self.inputs)
        for o in self.operators:
            for t in o.inputs:
                if t not in self.tensors:
                    raise GraphError(f"reads tensor {t!r}, which the graph does not define", node=o.name, op=o.type)
                if t not in written:
                    raise GraphError(
                        f"reads tensor {t!r} before any operator writes it (not in topological order, "
                        "or a missing producer)",
                        node=o.name,
                        op=o.type,
                    )
            for t in o.outputs:
                if t in written:
                    raise GraphError(f"writes tensor {t!r}, which is already written", node=o.name, op=o.type)
                written.add(t)
            if not infer:
                for t in o.outputs:
                    if t not in self.tensors:
                        raise GraphError(
                            f"writes tensor {t!r}, which the graph does not define", node=o.name, op=o.type
                        )
                continue
            attrs, shapes = ops.normalize_and_infer(o.type, o.attrs, self.input_shapes(o), o.name)
            if len(shapes) != len(o.outputs):
                raise GraphError(f"has {len(o.outputs)} outputs, expected {len(shapes)}", node=o.name, op=o.type)
            for t, shape in zip(o.outputs, shapes):
                if t not in self.tensors:
                    raise GraphError(f"writes tensor {t!r}, which the graph does not define", node=o.name, op=o.type)
                if tuple(self.tensors[t].shape) != tuple(shape):
                    raise GraphError(
                        f"output {t!r} is declared {list(self.tensors[t].shape)} but the inputs give {list(shape)}",
                        node=o.name,
                        op=o.type,
                    )
            o.attrs = attrs
            if ops.spec(o.type).out_dtype is not ops.dtypes.same:
                out_dtypes = ops.output_dtypes(o.type, attrs, [self.tensors[t].dtype for t in o.inputs], o.name)
                for t, dtype in zip(o.outputs, out_dtypes, strict=False):
                    if self.tensors[t].dtype != dtype:
                        raise GraphError(
                            f"output {t!r} is declared {self.tensors[t].dtype} but the operator writes {dtype}",
                            node=o.name,
                            op=o.type,
                        )
        for t in self.outputs:
            if t not in written:
                raise GraphError(f"graph output {t!r} is never written", node=t)
        return self

    # -- cost --------------------------------------------------------------------------------

    def op_cost(self, op: Operator) -> OpCost:
        """MACs, FLOPs and parameters of one operator (see ``docs/graph-format.md``)."""
        s = ops.spec(op.type, op.name)
        i, o = self.input_shapes(op), self.output_shapes(op)
        return OpCost(s.macs(i, o, op.attrs), s.flops(i, o, op.attrs), s.params(i, o, op.attrs))

    def costs(self) -> Iterator[tuple[Operator, OpCost]]:
        """Every operator with its cost, in graph order."""
        for o in self.operators:
            yield o, self.op_cost(o)

    @property
    def macs(self) -> int:
        """Total multiply-adds of the model."""
        return sum(c.macs for _, c in self.costs())

    @property
    def flops(self) -> int:
        """Total FLOPs of the model (2 x MACs plus the light operators' work)."""
        return sum(c.flops for _, c in self.costs())

    @property
    def params(self) -> int:
        """Total trainable parameters of the model."""
        return sum(c.params for _, c in self.costs())

    def compute_dtype(self, op: Operator) -> str:
        """The number format an operator computes in: its first input's dtype, or, for the middle
        of ONNX's QDQ form (an operator that reads a ``dequantize_linear`` output and whose outputs
        only ``quantize_linear`` reads, which runtimes fuse into one quantized kernel), the dtype
        that was dequantized."""
        return self._compute_dtype(op, self.producers(), self.consumers())

    def _compute_dtype(self, op: Operator, producers: dict[str, Operator], consumers: dict[str, list[Operator]]) -> str:
        if not op.inputs:
            return "float32"
        t = op.inputs[0]
        p = producers.get(t)
        if (
            op.type not in ("quantize_linear", "dequantize_linear")
            and p is not None
            and p.type == "dequantize_linear"
            and all(
                consumers.get(out) and all(c.type == "quantize_linear" for c in consumers[out]) for out in op.outputs
            )
        ):
            t = p.inputs[0]
        return self.tensors[t].dtype

    def macs_by_dtype(self) -> dict[str, int]:
        """Multiply-adds by the number format they are computed in (``compute_dtype``): a quantized
        model's convolutions count as int8 (or uint8) MACs."""
        out: dict[str, int] = {}
        producers, consumers = self.producers(), self.consumers()
        for o, c in self.costs():
            if c.macs:
                dtype = self._compute_dtype(o, producers, consumers)
                out[dtype] = out.get(dtype, 0) + c.macs
        return dict(sorted(out.items()))

    def quantized_operators(self) -> list[Operator]:
        """The operators that quantize, dequantize or compute on int8 / uint8 values: none for a
        float model."""
        producers, consumers = self.producers(), self.consumers()
        return [
            o
            for o in self.operators
            if o.type in QUANTIZATION_TYPES or ops.is_quantized_dtype(self._compute_dtype(o, producers, consumers))
        ]

    def opaque_operators(self) -> list[Operator]:
        """The operators the IR keeps without knowing what they compute (``opaque``): a backend
        that runs the IR itself cannot run them; one that runs the uploaded file can."""
        return [o for o in self.operators if o.type == ops.OPAQUE]

    def input_shape(self) -> Shape:
        """Shape of the first graph input."""
        return self.tensors[self.inputs[0]].shape

    def op_table(self) -> list[dict[str, Any]]:
        """One plain row per operator: index, name, type, shapes, attrs, MACs, FLOPs, params and
        the dtype it computes in."""
        rows = []
        producers, consumers = self.producers(), self.consumers()
        for index, (o, c) in enumerate(self.costs()):
            rows.append(
                {
                    "index": index,
                    "name": o.name,
                    "type": o.type,
                    "category": o.category,
                    "inputs": list(o.inputs),
                    "outputs": list(o.outputs),
                    "input_shapes": [list(s) for s in self.input_shapes(o)],
                    "output_shapes": [list(s) for s in self.output_shapes(o)],
                    "attrs": dict(o.attrs),
                    "macs": c.macs,
                    "flops": c.flops,
                    "params": c.params,
                    "dtype": self._compute_dtype(o, producers, consumers),
                }
            )
        return rows

    def summary(self) -> dict[str, Any]:
        """Totals and counts for storing beside a model: ops, MACs, FLOPs, params, op-type counts."""
        counts = Counter(o.type for o in self.operators)
        return {
            "name": self.name,
            "num_operators": len(self.operators),
            "macs": self.macs,
            "flops": self.flops,
            "params": self.params,
            "macs_by_dtype": self.macs_by_dtype(),
            "inputs": {t: list(self.tensors[t].shape) for t in self.inputs},
            "outputs": {t: list(self.tensors[t].shape) for t in self.outputs},
            "op_types": dict(sorted(counts.items())),
        }
