"""Drive one ONNX import: prepare the model, walk its nodes, fold, map and fuse.

The phases are in sibling modules (``wire``, ``prepare``, ``fold``, ``mappers``, ``fuse``); this
module holds the state of one conversion and walks the nodes in topological order, within the
import's ``ImportLimits``: the model's size before anything else, every folded constant's size
before it is computed, and every emitted activation's shape. ONNX node names become IR operator
names (unnamed nodes get ``<OpType>_<index>``, made unique) and ONNX value names become IR tensor
names. ``import_onnx_model`` also returns which IR operator each ONNX node went into, so per-node
timings of the original model can be put on the IR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator, Tensor
from devicelab.graph.limits import DEFAULT_LIMITS, FoldBudget, ImportLimits, check_elements, check_graph
from devicelab.graph.onnx.fold import DROPPED, FOLD_BOUNDS, FOLDERS, constant_value, fold_quantization
from devicelab.graph.onnx.fuse import PSEUDO, fuse
from devicelab.graph.onnx.mappers import MAPPERS
from devicelab.graph.onnx.prepare import (
    DTYPES,
    FLOAT_TYPES,
    MAX_SHAPE_OPERAND,
    check_self_contained,
    check_size,
    check_vocabulary,
    default_opset,
    infer_node_shape,
    node_names,
    read_inputs,
    topological_order,
    working_copy,
)
from devicelab.graph.onnx.quant_mappers import MICROSOFT_OPS, QUANT_MAPPERS
from devicelab.graph.onnx.wire import node_attrs, parse_onnx_bytes

ALL_MAPPERS = {**MAPPERS, **QUANT_MAPPERS}
# Every ONNX op type the reader knows: mapped to an IR operator, folded, or dropped.
KNOWN_OPS = frozenset(ALL_MAPPERS) | frozenset(FOLDERS) | DROPPED
# Quantization nodes of a constant (a weight in QDQ form) are folded when a mapper reads the value.
_LAZY_FOLDED = ("QuantizeLinear", "DequantizeLinear")


@dataclass(frozen=True)
class OnnxImport:
    """An imported graph and, for every ONNX node, the IR operator it went into (None if folded)."""

    graph: Graph
    node_map: dict[str, str | None]


def graph_from_onnx_bytes(data: bytes, name: str | None = None, limits: ImportLimits = DEFAULT_LIMITS) -> Graph:
    """Parse a serialized ONNX model into a checked IR ``Graph`` (within ``limits``)."""
    return graph_from_onnx_model(parse_onnx_bytes(data), name=name, limits=limits)


def graph_from_onnx_model(
    model: onnx.ModelProto, name: str | None = None, limits: ImportLimits = DEFAULT_LIMITS
) -> Graph:
    """Convert an ONNX ``ModelProto`` into a checked IR ``Graph`` (within ``limits``)."""
    return import_onnx_model(model, name=name, limits=limits).graph


def import_onnx_model(
    model: onnx.ModelProto, name: str | None = None, limits: ImportLimits = DEFAULT_LIMITS
) -> OnnxImport:
    """Convert an ONNX model and report which IR operator each ONNX node became; ``LimitExceeded``
    (a ``GraphError``) when it is over ``limits``."""
    if not isinstance(model, onnx.ModelProto):
        raise GraphError(f"expected an onnx.ModelProto, got {type(model).__name__}")
    if not model.HasField("graph"):
        raise GraphError("the ONNX model has no graph (an empty or non-ONNX file)")
    if len(model.graph.node) == 0:
        raise GraphError("the ONNX graph has no nodes")
    check_size(model, limits)
    check_self_contained(model)
    return _Importer(working_copy(model), model.graph.initializer, name, limits).run()


class _Importer:
    """One conversion: holds the constants, tensors and operators found so far."""

    def __init__(
        self, model: onnx.ModelProto, initializers: Sequence[onnx.TensorProto], name: str | None, limits: ImportLimits
    ) -> None:
        self.model = model
        self.limits = limits
        self.folded = FoldBudget(limits)
        self.g = model.graph
        self.name = name or self.g.name or "graph"
        self.opset = default_opset(model)
        # The caller's initializers, with their data (the working copy dropped the big ones').
        self.inits: dict[str, onnx.TensorProto] = {t.name: t for t in initializers}
        self.consts: dict[str, np.ndarray] = {}
        # Q / DQ of a constant, folded only if its value is read: (op type, inputs, attrs, node name)
        self.lazy: dict[str, tuple[str, list[str], dict[str, Any], str]] = {}
        self.alias: dict[str, str] = {}
        self.tensors: dict[str, Tensor] = {}
        self.inputs: list[str] = []
        self.ops: list[Operator] = []
        self.sources: dict[str, list[str]] = {}
        self.node_map: dict[str, str | None] = {}
        self.reading: onnx.NodeProto | None = None  # the node the walk is at, for ``inferred``

    def run(self) -> OnnxImport:
        """Convert the whole model."""
        if self.model.functions:
            try:
                import onnx.inliner

                self.model = onnx.inliner.inline_local_functions(self.model)
                self.g = self.model.graph
            except Exception as exc:
                raise GraphError(f"cannot inline the model's local functions: {exc}") from None
        nodes = list(self.g.node)
        names = node_names(nodes)
        check_vocabulary(nodes, names, KNOWN_OPS, {"com.microsoft": MICROSOFT_OPS})
        for tensor in read_inputs(self.g, self.inits, self.limits):
            self.tensors[tensor.name] = tensor
            self.inputs.append(tensor.name)
        order = topological_order(self.g, self.inits, nodes, names)
        for i in order:
            self.reading = nodes[i]
            try:
                self._node(nodes[i], names[i])
            except GraphError:
                raise
            except Exception as exc:  # a malformed node must not surface as a traceback from numpy or onnx
                raise GraphError(
                    f"malformed node: {type(exc).__name__}: {exc}", node=names[i], op=nodes[i].op_type
                ) from None
        self.ops = fuse(self.ops, {self._resolve(vi.name) for vi in self.g.output}, self.tensors, self.sources)
        outputs = []
        for vi in self.g.output:
            t = self._resolve(vi.name)
            if t not in self.tensors:
                raise GraphError(
                    "graph output is computed from constants and shapes only, not from the inputs", node=vi.name
                )
            outputs.append(t)
        used = set(self.inputs) | set(outputs) | {t for o in self.ops for t in (*o.inputs, *o.outputs)}
        tensors = {k: v for k, v in self.tensors.items() if k in used}
        graph = check_graph(Graph(self.name, tensors, list(self.inputs), outputs, self.ops).check(), self.limits)
        for op_name, srcs in self.sources.items():
            for s in srcs:
                self.node_map[s] = op_name
        return OnnxImport(graph, self.node_map)

    # -- values ------------------------------------------------------------------------------

    def _resolve(self, t: str) -> str:
        while t in self.alias:
            t = self.alias[t]
        return t

    def is_const(self, t: str) -> bool:
        """Whether ``t`` is an initializer or a folded constant."""
        return t in self.consts or t in self.inits or t in self.lazy

    def const(self, t: str, node: str, op: str, max_values: int | None = None) -> np.ndarray:
        """The value of constant ``t``, or an error saying it is computed at run time (or that it
        holds more than ``max_values`` values, checked before they are read)."""
        if t in self.lazy and t not in self.consts:
            self._fold_lazy(t)
        if t not in self.consts and t not in self.inits:
            raise GraphError(
                f"input {t!r} must be a constant (an initializer or computed from shapes), "
                "but it is computed at run time",
                node=node,
                op=op,
            )
        if max_values is not None:
            count = math.prod(self.const_shape(t))
            if count > max_values:
                raise GraphError(
                    f"input {t!r} holds {count} values; a shape, axes, pads, sizes or scales operand "
                    f"holds at most {max_values}",
                    node=node,
                    op=op,
                )
        if t in self.consts:
            return self.consts[t]
        proto = self.inits[t]
        if proto.data_location == onnx.TensorProto.EXTERNAL:
            raise GraphError(
                f"initializer {t!r} keeps its data in an external file; its values are needed", node=node, op=op
            )
        try:
            value = numpy_helper.to_array(proto)
        except Exception as exc:
            raise GraphError(f"initializer {t!r} cannot be read: {exc}", node=node, op=op) from None
        self.consts[t] = value
        return value

    def const_shape(self, t: str) -> tuple[int, ...]:
        """The shape of constant ``t``, without reading its data."""
        if t in self.lazy and t not in self.consts:
            return self.const_shape(self.lazy[t][1][0])  # Q / DQ keep their input's shape
        if t in self.consts:
            return tuple(int(d) for d in self.consts[t].shape)
        return tuple(int(d) for d in self.inits[t].dims)

    def _fold_lazy(self, t: str) -> None:
        """Compute a Q / DQ of a constant that a mapper reads the value of."""
        op, ins, attrs, name = self.lazy[t]
        x = self.const(ins[0], name, op)
        self.folded.check(int(x.size), node=name, op=op)
        scale = self.const(ins[1], name, op)
        zero = self.optional_const(ins, 2, name, op)
        try:
            value = fold_quantization(op, x, scale, zero, attrs)
        except Exception as exc:
            raise GraphError(f"cannot compute this constant: {exc}", node=name, op=op) from None
        self.folded.spend(int(value.size))
        self.consts[t] = value

    # -- the walk ----------------------------------------------------------------------------

    def _node(self, node: onnx.NodeProto, name: str) -> None:
        op = node.op_type
        ins = [self._resolve(t) if t else "" for t in node.input]
        attrs = node_attrs(node)
        self.node_map[name] = None
        for t in ins:
            if t and t not in self.tensors and not self.is_const(t):
                raise GraphError(
                    f"reads {t!r}, which no earlier node writes (or an output LatencyLab does not "
                    "model, such as MaxPool indices)",
                    node=name,
                    op=op,
                )
        if op == "Constant":
            self.consts[node.output[0]] = constant_value(attrs, name, self.limits)
            return
        if op in ("Shape", "Size"):
            src = ins[0]
            shape = self.tensors[src].shape if src in self.tensors else self.const_shape(src)
            if op == "Size":
                self.consts[node.output[0]] = np.array(int(np.prod(shape)), dtype=np.int64)
            else:
                self.consts[node.output[0]] = np.array(shape, dtype=np.int64)[attrs.get("start", 0) : attrs.get("end")]
            self.folded.spend(int(self.consts[node.output[0]].size))
            return
        if op in _LAZY_FOLDED and self.is_const(ins[0]):
            # A quantized weight of a QDQ model: its shape is all a mapper reads, unless the value
            # is a small operand (a clip bound); a model's weights are never dequantized here.
            self.lazy[node.output[0]] = (op, ins, attrs, name)
            return
        if op in FOLDERS and all(t == "" or self.is_const(t) for t in ins):
            values = [None if t == "" else self.const(t, name, op) for t in ins]
            try:
                # how large the constant will be, from shapes and a few values, before computing it
                self.folded.check(FOLD_BOUNDS[op](values, attrs), node=name, op=op)
                value = np.asarray(FOLDERS[op](values, attrs))
            except GraphError:
                raise
            except Exception as exc:
                raise GraphError(f"cannot compute this constant: {exc}", node=name, op=op) from None
            self.folded.spend(int(value.size))
            self.consts[node.output[0]] = value
            return
        if op in ("Identity", "Dropout"):
            self.alias[node.output[0]] = ins[0]
            return
        if op == "Cast":
            src_type = self._elem_type(ins[0])
            if src_type in FLOAT_TYPES and attrs.get("to") in FLOAT_TYPES:
                # A float-to-float cast only changes precision: the IR has no cast operator.
                self.alias[node.output[0]] = ins[0]
                return
            raise GraphError(
                "a Cast of an activation tensor to a non-float type is not in the vocabulary", node=name, op=op
            )
        mapper = ALL_MAPPERS.get(op)
        if mapper is None:
            raise GraphError(
                f"{op} on activation tensors is not in the vocabulary (it is only folded when it "
                "computes shapes or constants)",
                node=name,
                op=op,
            )
        mapper(self, node, name, ins, attrs)

    def _elem_type(self, t: str) -> int:
        dtype = self.tensors[t].dtype if t in self.tensors else None
        for k, v in DTYPES.items():
            if v == dtype:
                return k
        return onnx.TensorProto.UNDEFINED

    # -- emitting ----------------------------------------------------------------------------

    def act(self, t: str, node: str, op: str, what: str = "input") -> Tensor:
        """The activation tensor ``t``, or an error saying that a constant is not supported there."""
        if t in self.tensors:
            return self.tensors[t]
        raise GraphError(
            f"the {what} {t!r} is a constant; LatencyLab reads it only as an activation here", node=node, op=op
        )

    def emit(
        self,
        node: onnx.NodeProto,
        name: str,
        ir_type: str,
        inputs: list[str],
        attrs: dict[str, Any],
        outputs: list[str] | None = None,
    ) -> None:
        """Append one IR operator for an ONNX node, inferring its output shapes by the IR's rules."""
        outputs = list(node.output) if outputs is None else outputs
        shapes = [self.act(t, name, node.op_type).shape for t in inputs]
        if ir_type in PSEUDO:
            canonical, out_shapes = dict(attrs), [shapes[0]]
        else:
            try:
                canonical, out_shapes = ops.normalize_and_infer(ir_type, attrs, shapes, name)
            except GraphError as exc:
                raise GraphError(f"{exc.reason} (read as IR {ir_type})", node=name, op=node.op_type) from None
        if len(out_shapes) != len(outputs):
            raise GraphError(
                f"has {len(outputs)} outputs, but the IR {ir_type} gives {len(out_shapes)}", node=name, op=node.op_type
            )
        dtype = (
            self.tensors[inputs[0]].dtype
            if ir_type in PSEUDO
            else ops.output_dtype(ir_type, canonical, [self.tensors[t].dtype for t in inputs], name)
        )
        for t, s in zip(outputs, out_shapes, strict=False):
            check_elements(s, self.limits, node=name, op=node.op_type, what=f"its output {t!r}")
            self.tensors[t] = Tensor(t, tuple(int(d) for d in s), dtype)
        self.ops.append(Operator(name, ir_type, list(inputs), list(outputs), canonical))
        self.sources[name] = [name]

    def optional_const(
        self, ins: list[str], i: int, name: str, op: str, max_values: int | None = None
    ) -> np.ndarray | None:
        """The constant at input ``i`` (at most ``max_values`` values), or None when the input is absent."""
        if len(ins) <= i or not ins[i]:
            return None
        return self.const(ins[i], name, op, max_values)

    def inferred(self, t: str, name: str, op: str, why: str) -> tuple[int, ...]:
        """The output shape from ONNX's inference rule for the node being read (its inputs declared
        with the shapes this walk found; see ``prepare.infer_node_shape``), or an error saying it
        cannot be resolved."""
        node = self.reading
        shape = None
        if node is not None and t in node.output:
            inputs: list[tuple[str, int, tuple[int, ...]]] = []
            constants: dict[str, onnx.TensorProto] = {}
            for raw in node.input:
                if not raw:
                    continue
                src = self._resolve(raw)
                if src in self.tensors:
                    tensor = self.tensors[src]
                    inputs.append((raw, _ONNX_TYPES[tensor.dtype], tensor.shape))
                elif self.is_const(src):
                    dims = self.const_shape(src)
                    if math.prod(dims) <= MAX_SHAPE_OPERAND:
                        value = self.const(src, name, op)
                        constants[raw] = numpy_helper.from_array(value, raw)
                        inputs.append((raw, constants[raw].data_type, dims))
                    else:
                        inputs.append((raw, onnx.TensorProto.FLOAT, dims))
            shape = infer_node_shape(node, self.model.opset_import, inputs, constants)
        if shape is None:
            raise GraphError(f"{why}, and ONNX shape inference could not resolve the shape of {t!r}", node=name, op=op)
        return shape


# IR dtype names -> ONNX element types, to declare an activation to onnx's inference.
_ONNX_TYPES = {name: elem_type for elem_type, name in DTYPES.items()}
