"""Read ONNX models into the graph IR.

What the reader does, in order:

1. Refuse bytes that are not a ModelProto before protobuf sees them (a top-level field whose
   length runs past the end of the file: truncated, or a header claiming ~2 GB), then parse and
   wrap every parser error in a ``GraphError``.
2. Fix the graph inputs' shapes: a symbolic batch dimension (axis 0, e.g. ``N`` or ``batch``) is
   resolved to 1; any other symbolic dimension is an error naming the input.
3. Run ``onnx.shape_inference`` (with data propagation) for the shapes of values whose size is
   computed at run time (a Reshape target or Resize size the folding below cannot compute). It
   runs on a working copy whose large initializers keep their dims but not their data, which
   keeps a 100 MB model's import well under a second.
4. Walk the nodes in topological order. Nodes whose inputs are all constants, including
   ``Shape`` of an activation (whose shape is static by now), are evaluated with numpy and never
   become IR operators: this folds the Shape->Gather->Unsqueeze->Concat subgraphs PyTorch emits
   for ``x.view(x.size(0), -1)``. ``Identity`` and ``Dropout`` are dropped. Every other node maps
   to one IR operator whose weights (initializers) become attributes such as ``out_channels``.
5. Fuse multi-node patterns into one IR operator named after the node that writes the pattern's
   output: MatMul/Gemm + Add of a constant -> fully_connected with bias, x * Sigmoid(x) -> swish,
   x * HardSigmoid(x) -> hard_swish, the erf form of GELU -> gelu, Reshape-Transpose-Reshape ->
   channel_shuffle.

ONNX node names become IR operator names (unnamed nodes get ``<OpType>_<index>``, made unique)
and ONNX value names become IR tensor names. ``import_onnx_model`` also returns which IR operator
each ONNX node went into, so per-node timings of the original model can be put on the IR.
Opsets 11 to 21 are tested; older opsets down to 7 use the attribute forms (Clip min/max, Pad
pads, Split split, Upsample) and are read too.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import numpy_helper

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator, Tensor

MIN_OPSET = 7

_DTYPES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
}
_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16}

# ModelProto's field numbers, to name the field whose length is wrong.
_MODEL_FIELDS = {
    1: "ir_version",
    2: "producer_name",
    3: "producer_version",
    4: "domain",
    5: "model_version",
    6: "doc_string",
    7: "graph",
    8: "opset_import",
    14: "metadata_props",
    20: "training_info",
    25: "functions",
    26: "configuration",
}

# Internal operator types that exist only between the node walk and the fusion passes.
_PSEUDO = {"erf": "Erf"}


@dataclass(frozen=True)
class OnnxImport:
    """An imported graph and, for every ONNX node, the IR operator it went into (None if folded)."""

    graph: Graph
    node_map: dict[str, str | None]


# ---------------------------------------------------------------------------------------------
# Entry points


def graph_from_onnx_bytes(data: bytes, name: str | None = None) -> Graph:
    """Parse a serialized ONNX model into a checked IR ``Graph``."""
    return graph_from_onnx_model(parse_onnx_bytes(data), name=name)


def graph_from_onnx_model(model: onnx.ModelProto, name: str | None = None) -> Graph:
    """Convert an ONNX ``ModelProto`` into a checked IR ``Graph``."""
    return import_onnx_model(model, name=name).graph


def import_onnx_model(model: onnx.ModelProto, name: str | None = None) -> OnnxImport:
    """Convert an ONNX model and report which IR operator each ONNX node became."""
    if not isinstance(model, onnx.ModelProto):
        raise GraphError(f"expected an onnx.ModelProto, got {type(model).__name__}")
    if not model.HasField("graph"):
        raise GraphError("the ONNX model has no graph (an empty or non-ONNX file)")
    if len(model.graph.node) == 0:
        raise GraphError("the ONNX graph has no nodes")
    return _Importer(_working_copy(model), model.graph.initializer, name).run()


# Initializers with more elements than this lose their data in the working copy: the IR needs
# only their shapes, and shape inference then does not serialize megabytes of weights.
_KEEP_DATA_ELEMENTS = 4096


def _working_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy to rewrite input dims on and run shape inference over, without the big weights."""
    work = onnx.ModelProto(ir_version=model.ir_version)
    work.opset_import.extend(model.opset_import)
    work.functions.extend(model.functions)
    src, g = model.graph, work.graph
    g.name, g.doc_string = src.name, src.doc_string
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    g.sparse_initializer.extend(src.sparse_initializer)
    for t in src.initializer:
        if int(np.prod(t.dims)) <= _KEEP_DATA_ELEMENTS:
            g.initializer.append(t)
        else:
            g.initializer.add(name=t.name, dims=t.dims, data_type=t.data_type)
    return work


def parse_onnx_bytes(data: bytes) -> onnx.ModelProto:
    """Parse ONNX bytes, turning every kind of corruption into a ``GraphError``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise GraphError(f"expected ONNX bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise GraphError("the file is empty")
    _scan_top_level(data)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError, TypeError) as exc:
        raise GraphError(f"not a valid ONNX model: the protobuf does not parse ({exc})") from None
    return model


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise GraphError("not a valid ONNX model: the file ends inside a protobuf varint (truncated)")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise GraphError(f"not a valid ONNX model: malformed protobuf varint at byte {pos}")


def _scan_top_level(data: bytes) -> None:
    """Walk the ModelProto's top-level fields and refuse lengths that run past the data.

    Protobuf would also fail, but this way a header claiming ~2 GB is refused up front with a
    message that says which field lied, and corrupt bytes get a plain answer.
    """
    pos, size = 0, len(data)
    while pos < size:
        start = pos
        key, pos = _varint(data, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise GraphError(f"not a valid ONNX model: byte {start} is not a protobuf field tag")
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _varint(data, pos)
            if length > size - pos:
                what = _MODEL_FIELDS.get(field, f"field {field}")
                raise GraphError(
                    f"not a valid ONNX model: truncated or corrupt; the {what} field at byte {start} claims "
                    f"{length} bytes but only {size - pos} follow"
                )
            pos += length
        else:
            raise GraphError(
                f"not a valid ONNX model: byte {start} holds protobuf wire type {wire}, "
                "which ONNX never uses (wrong file type?)"
            )
        if pos > size:
            raise GraphError("not a valid ONNX model: the file ends inside a field (truncated)")


# ---------------------------------------------------------------------------------------------
# Small helpers


def _short(value: Any, dtype: Any = np.float32) -> float:
    """A number as the shortest decimal that its storage type holds (float32 0.1 -> 0.1)."""
    x = np.asarray(value).astype(dtype).reshape(-1)[0]
    if np.issubdtype(x.dtype, np.floating):
        return float(str(x))
    return float(x)


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if a.type == onnx.AttributeProto.FLOAT:
            v = _short(v)
        elif a.type == onnx.AttributeProto.STRING:
            v = v.decode("utf-8", "replace")
        elif a.type == onnx.AttributeProto.INTS:
            v = [int(i) for i in v]
        elif a.type == onnx.AttributeProto.FLOATS:
            v = [_short(f) for f in v]
        out[a.name] = v
    return out


def _same_pads(
    size: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int], upper: bool
) -> list[int]:
    begins, ends = [], []
    for n, k, s, d in zip(size, kernel, stride, dilation, strict=False):
        eff = d * (k - 1) + 1
        total = max((-(-n // s) - 1) * s + eff - n, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if upper else big)
        ends.append(big if upper else small)
    return [begins[0], begins[1], ends[0], ends[1]]


def _close(value: float | None, target: float, tol: float = 1e-4) -> bool:
    return value is not None and abs(value - target) <= tol * max(1.0, abs(target))


_INFER_RE = re.compile(r"op_type:\s*([\w.]+),\s*node name:\s*([^)]*)\)")


def _inference_error(exc: Exception) -> GraphError:
    text = " ".join(str(exc).split())
    m = _INFER_RE.search(text)
    if m:
        return GraphError(f"ONNX shape inference failed: {text}", node=m.group(2).strip() or None, op=m.group(1))
    return GraphError(f"ONNX shape inference failed: {text}")


def _onnx_known_ops() -> frozenset[str]:
    return frozenset(_MAPPERS) | frozenset(_FOLDERS) | _DROPPED


# ---------------------------------------------------------------------------------------------
# Constant folding: numpy versions of the ops that compute shapes and constants.


def _np_axes(vals: list[np.ndarray | None], attrs: dict[str, Any], index: int = 1) -> list[int] | None:
    if len(vals) > index and vals[index] is not None:
        return [int(a) for a in np.asarray(vals[index]).reshape(-1)]
    return attrs.get("axes")


def _fold_unsqueeze(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, axes = v[0], _np_axes(v, a)
    rank = x.ndim + len(axes or [])
    for ax in sorted(ax % rank for ax in axes or []):
        x = np.expand_dims(x, ax)
    return x


def _fold_squeeze(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, axes = v[0], _np_axes(v, a)
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(ax % x.ndim for ax in axes))


def _fold_slice(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x = v[0]
    if len(v) > 1:
        starts, ends = list(v[1].reshape(-1)), list(v[2].reshape(-1))
        axes = list(v[3].reshape(-1)) if len(v) > 3 and v[3] is not None else list(range(len(starts)))
        steps = list(v[4].reshape(-1)) if len(v) > 4 and v[4] is not None else [1] * len(starts)
    else:
        starts, ends = a["starts"], a["ends"]
        axes, steps = a.get("axes", list(range(len(starts)))), [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=False):
        index[int(ax) % x.ndim] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def _fold_div(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, y = v
    if np.issubdtype(x.dtype, np.integer) and np.issubdtype(y.dtype, np.integer):
        return np.trunc(x / y).astype(np.result_type(x, y))  # ONNX integer division truncates
    return (x / y).astype(np.result_type(x, y))


def _fold_reshape(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, target = v[0], [int(t) for t in v[1].reshape(-1)]
    if not a.get("allowzero", 0):
        target = [x.shape[i] if t == 0 else t for i, t in enumerate(target)]
    return x.reshape(target)


def _fold_reduce_prod(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    axes = _np_axes(v, a)
    return np.prod(v[0], axis=None if axes is None else tuple(axes), keepdims=bool(a.get("keepdims", 1)))


def _fold_constant_of_shape(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    fill = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return np.full([int(d) for d in v[0].reshape(-1)], fill.reshape(-1)[0], dtype=fill.dtype)


def _fold_cast(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    return v[0].astype(onnx.helper.tensor_dtype_to_np_dtype(a["to"]))


_FOLDERS: dict[str, Callable[[list[Any], dict[str, Any]], np.ndarray]] = {
    "Gather": lambda v, a: np.take(v[0], v[1].astype(np.int64), axis=a.get("axis", 0)),
    "Unsqueeze": _fold_unsqueeze,
    "Squeeze": _fold_squeeze,
    "Concat": lambda v, a: np.concatenate([np.atleast_1d(x) for x in v], axis=a["axis"]),
    "Cast": _fold_cast,
    "Slice": _fold_slice,
    "Add": lambda v, a: np.add(v[0], v[1]),
    "Sub": lambda v, a: np.subtract(v[0], v[1]),
    "Mul": lambda v, a: np.multiply(v[0], v[1]),
    "Div": _fold_div,
    "Neg": lambda v, a: np.negative(v[0]),
    "Abs": lambda v, a: np.abs(v[0]),
    "Sqrt": lambda v, a: np.sqrt(v[0]),
    "Floor": lambda v, a: np.floor(v[0]),
    "Ceil": lambda v, a: np.ceil(v[0]),
    "Min": lambda v, a: np.minimum.reduce(v),
    "Max": lambda v, a: np.maximum.reduce(v),
    "Equal": lambda v, a: np.equal(v[0], v[1]),
    "Less": lambda v, a: np.less(v[0], v[1]),
    "Greater": lambda v, a: np.greater(v[0], v[1]),
    "Not": lambda v, a: np.logical_not(v[0]),
    "Where": lambda v, a: np.where(v[0], v[1], v[2]),
    "Expand": lambda v, a: np.array(np.broadcast_to(v[0], np.broadcast_shapes(v[0].shape, tuple(v[1].reshape(-1))))),
    "Range": lambda v, a: np.arange(v[0].item(), v[1].item(), v[2].item()).astype(v[0].dtype),
    "Reshape": _fold_reshape,
    "Flatten": lambda v, a: v[0].reshape(int(np.prod(v[0].shape[: a.get("axis", 1)])), -1),
    "Transpose": lambda v, a: np.transpose(v[0], a.get("perm")),
    "ReduceProd": _fold_reduce_prod,
    "ConstantOfShape": _fold_constant_of_shape,
    "Identity": lambda v, a: v[0],
}

_DROPPED = frozenset({"Identity", "Dropout", "Cast", "Constant", "Shape", "Size"})


# ---------------------------------------------------------------------------------------------
# The importer


class _Importer:
    """One conversion: holds the constants, tensors and operators found so far."""

    def __init__(self, model: onnx.ModelProto, initializers: Sequence[onnx.TensorProto], name: str | None) -> None:
        self.model = model
        self.g = model.graph
        self.name = name or self.g.name or "graph"
        self.opset = self._default_opset()
        # The caller's initializers, with their data (the working copy dropped the big ones').
        self.inits: dict[str, onnx.TensorProto] = {t.name: t for t in initializers}
        self.consts: dict[str, np.ndarray] = {}
        self.alias: dict[str, str] = {}
        self.tensors: dict[str, Tensor] = {}
        self.inputs: list[str] = []
        self.ops: list[Operator] = []
        self.sources: dict[str, list[str]] = {}
        self.node_map: dict[str, str | None] = {}
        self.onnx_shapes: dict[str, tuple[int, ...]] = {}

    # -- setup -------------------------------------------------------------------------------

    def _default_opset(self) -> int:
        versions = [o.version for o in self.model.opset_import if o.domain in ("", "ai.onnx")]
        if not versions:
            raise GraphError("the ONNX model declares no opset for the default domain")
        opset = int(versions[0])
        newest = onnx.defs.onnx_opset_version()
        if not MIN_OPSET <= opset <= newest:
            raise GraphError(f"ONNX opset {opset} is not supported (supported: {MIN_OPSET} to {newest})")
        return opset

    def _node_names(self, nodes: Sequence[onnx.NodeProto]) -> list[str]:
        """Node names, with stable unique names for unnamed or repeated ones."""
        explicit = {n.name for n in nodes if n.name}
        used: set[str] = set()
        names = []
        for i, n in enumerate(nodes):
            base = n.name or f"{n.op_type}_{i}"
            candidate, k = base, 1
            while candidate in used or (not n.name and candidate in explicit):
                candidate, k = f"{base}_{k}", k + 1
            used.add(candidate)
            names.append(candidate)
        return names

    def _check_vocabulary(self, nodes: Sequence[onnx.NodeProto], names: list[str]) -> None:
        known = _onnx_known_ops()
        for n, node_name in zip(nodes, names, strict=False):
            if n.domain not in ("", "ai.onnx"):
                raise GraphError(
                    f"operator '{n.domain}.{n.op_type}' from the custom domain {n.domain!r} is not in the "
                    "LatencyLab operator vocabulary (docs/graph-format.md)",
                    node=node_name,
                    op=n.op_type,
                )
            if n.op_type not in known:
                raise GraphError(
                    f"operator {n.op_type!r} is not in the LatencyLab operator vocabulary (docs/graph-format.md)",
                    node=node_name,
                    op=n.op_type,
                )

    def _read_inputs(self) -> None:
        """Declare the graph inputs, resolving a symbolic batch dimension to 1."""
        for vi in self.g.input:
            if vi.name in self.inits:
                continue  # old exporters list initializers as inputs too
            if not vi.type.HasField("tensor_type"):
                raise GraphError("graph input is not a tensor", node=vi.name)
            tt = vi.type.tensor_type
            dtype = _DTYPES.get(tt.elem_type)
            if dtype is None:
                type_name = onnx.TensorProto.DataType.Name(tt.elem_type) if tt.elem_type else "undefined"
                raise GraphError(
                    f"graph input has element type {type_name}; supported: {sorted(set(_DTYPES.values()))}",
                    node=vi.name,
                )
            if not tt.HasField("shape"):
                raise GraphError("graph input has no shape (rank unknown)", node=vi.name)
            shape = []
            for axis, dim in enumerate(tt.shape.dim):
                if dim.HasField("dim_value") and dim.dim_value > 0:
                    shape.append(int(dim.dim_value))
                elif axis == 0:
                    dim.Clear()
                    dim.dim_value = 1  # a symbolic batch dimension: profile batch 1
                    shape.append(1)
                else:
                    label = dim.dim_param or (str(dim.dim_value) if dim.HasField("dim_value") else "unknown")
                    raise GraphError(
                        f"graph input has a dynamic dimension {label!r} at axis {axis} (shape "
                        f"{[d.dim_param or d.dim_value for d in tt.shape.dim]}); only the batch dimension "
                        "(axis 0) may be dynamic: export the model with a fixed input size",
                        node=vi.name,
                    )
            self.tensors[vi.name] = Tensor(vi.name, tuple(shape), dtype)
            self.inputs.append(vi.name)
        if not self.inputs:
            raise GraphError("the ONNX graph has no inputs besides its initializers")

    def _infer_shapes(self) -> None:
        # Intermediate value_info may carry the old symbolic batch; inference recomputes them.
        # Not strict: onnx's pooling rule for ceil_mode still lets the last window start in the
        # end padding (onnxruntime and the IR do not), and a model must not be refused for that.
        # The IR re-derives every shape itself; these are only the fallback for targets computed
        # at run time.
        del self.g.value_info[:]
        try:
            inferred = onnx.shape_inference.infer_shapes(
                self.model, check_type=False, strict_mode=False, data_prop=True
            )
        except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError...
            raise _inference_error(exc) from None
        for vi in [*inferred.graph.value_info, *inferred.graph.output]:
            tt = vi.type.tensor_type
            if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
                self.onnx_shapes[vi.name] = tuple(int(d.dim_value) for d in tt.shape.dim)

    def _sorted_nodes(self, nodes: Sequence[onnx.NodeProto], names: list[str]) -> list[int]:
        """Node indices in topological order (ONNX requires it, but be lenient and stable)."""
        available = set(self.inits) | {vi.name for vi in self.g.input} | {""}
        order, pending = [], list(range(len(nodes)))
        while pending:
            rest = []
            for i in pending:
                if all(t in available for t in nodes[i].input):
                    order.append(i)
                    available.update(nodes[i].output)
                else:
                    rest.append(i)
            if len(rest) == len(pending):
                i = rest[0]
                missing = [t for t in nodes[i].input if t not in available]
                raise GraphError(
                    f"reads {missing[0]!r}, which is not a graph input, an initializer or the output "
                    "of any node (or the graph has a cycle)",
                    node=names[i],
                    op=nodes[i].op_type,
                )
            pending = rest
        return order

    # -- the walk ----------------------------------------------------------------------------

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
        names = self._node_names(nodes)
        self._check_vocabulary(nodes, names)
        self._read_inputs()
        order = self._sorted_nodes(nodes, names)
        self._infer_shapes()
        for i in order:
            try:
                self._node(nodes[i], names[i])
            except GraphError:
                raise
            except Exception as exc:  # a malformed node must not surface as a traceback from numpy or onnx
                raise GraphError(
                    f"malformed node: {type(exc).__name__}: {exc}", node=names[i], op=nodes[i].op_type
                ) from None
        self._fuse()
        for o in self.ops:
            if o.type in _PSEUDO:
                raise GraphError(
                    f"{_PSEUDO[o.type]} is not in the vocabulary; it is only read as part of the GELU pattern "
                    "x * 0.5 * (1 + erf(x / sqrt(2)))",
                    node=o.name,
                    op=_PSEUDO[o.type],
                )
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
        graph = Graph(self.name, tensors, list(self.inputs), outputs, self.ops).check()
        for op_name, srcs in self.sources.items():
            for s in srcs:
                self.node_map[s] = op_name
        return OnnxImport(graph, self.node_map)

    def _resolve(self, t: str) -> str:
        while t in self.alias:
            t = self.alias[t]
        return t

    def _is_const(self, t: str) -> bool:
        return t in self.consts or t in self.inits

    def _const(self, t: str, node: str, op: str) -> np.ndarray:
        if t in self.consts:
            return self.consts[t]
        proto = self.inits.get(t)
        if proto is None:
            raise GraphError(
                f"input {t!r} must be a constant (an initializer or computed from shapes), "
                "but it is computed at run time",
                node=node,
                op=op,
            )
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

    def _const_shape(self, t: str) -> tuple[int, ...]:
        if t in self.consts:
            return tuple(int(d) for d in self.consts[t].shape)
        return tuple(int(d) for d in self.inits[t].dims)

    def _node(self, node: onnx.NodeProto, name: str) -> None:
        op = node.op_type
        ins = [self._resolve(t) if t else "" for t in node.input]
        attrs = _attrs(node)
        self.node_map[name] = None
        for t in ins:
            if t and t not in self.tensors and not self._is_const(t):
                raise GraphError(
                    f"reads {t!r}, which no earlier node writes (or an output LatencyLab does not "
                    "model, such as MaxPool indices)",
                    node=name,
                    op=op,
                )
        if op == "Constant":
            self.consts[node.output[0]] = self._constant_node_value(node, attrs, name)
            return
        if op in ("Shape", "Size"):
            src = ins[0]
            shape = self.tensors[src].shape if src in self.tensors else self._const_shape(src)
            if op == "Size":
                self.consts[node.output[0]] = np.array(int(np.prod(shape)), dtype=np.int64)
            else:
                self.consts[node.output[0]] = np.array(shape, dtype=np.int64)[attrs.get("start", 0) : attrs.get("end")]
            return
        if op in _FOLDERS and all(t == "" or self._is_const(t) for t in ins):
            values = [None if t == "" else self._const(t, name, op) for t in ins]
            try:
                self.consts[node.output[0]] = np.asarray(_FOLDERS[op](values, attrs))
            except Exception as exc:
                raise GraphError(f"cannot compute this constant: {exc}", node=name, op=op) from None
            return
        if op in ("Identity", "Dropout"):
            self.alias[node.output[0]] = ins[0]
            return
        if op == "Cast":
            src_type = self._elem_type(ins[0])
            if src_type in _FLOAT_TYPES and attrs.get("to") in _FLOAT_TYPES:
                # A float-to-float cast only changes precision: the IR has no cast operator.
                self.alias[node.output[0]] = ins[0]
                return
            raise GraphError(
                "a Cast of an activation tensor to a non-float type is not in the vocabulary", node=name, op=op
            )
        mapper = _MAPPERS.get(op)
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
        for k, v in _DTYPES.items():
            if v == dtype:
                return k
        return onnx.TensorProto.UNDEFINED

    def _constant_node_value(self, node: onnx.NodeProto, attrs: dict[str, Any], name: str) -> np.ndarray:
        if "value" in attrs:
            return numpy_helper.to_array(attrs["value"])
        for key, dtype in (
            ("value_float", np.float32),
            ("value_floats", np.float32),
            ("value_int", np.int64),
            ("value_ints", np.int64),
        ):
            if key in attrs:
                return np.array(attrs[key], dtype=dtype)
        raise GraphError(f"Constant with attributes {sorted(attrs)} is not supported", node=name, op="Constant")

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
        if ir_type in _PSEUDO:
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
        dtype = self.tensors[inputs[0]].dtype
        for t, s in zip(outputs, out_shapes, strict=False):
            self.tensors[t] = Tensor(t, tuple(int(d) for d in s), dtype)
        self.ops.append(Operator(name, ir_type, list(inputs), list(outputs), canonical))
        self.sources[name] = [name]

    def optional_const(self, ins: list[str], i: int, name: str, op: str) -> np.ndarray | None:
        """The constant at input ``i``, or None when the input is absent."""
        if len(ins) <= i or not ins[i]:
            return None
        return self._const(ins[i], name, op)

    def inferred(self, t: str, name: str, op: str, why: str) -> tuple[int, ...]:
        """The output shape from ONNX shape inference, or an error saying it cannot be resolved."""
        shape = self.onnx_shapes.get(t)
        if shape is None:
            raise GraphError(f"{why}, and ONNX shape inference could not resolve the shape of {t!r}", node=name, op=op)
        return shape

    # -- fusion passes -----------------------------------------------------------------------

    def _fuse(self) -> None:
        for rule in (_fuse_fc_bias, _fuse_gated, _fuse_gelu, _fuse_channel_shuffle):
            self._apply(rule)

    def _apply(self, rule: Callable[[_Patterns, Operator], tuple[list[Operator], Operator] | None]) -> None:
        pat = _Patterns(self.ops, {self._resolve(vi.name) for vi in self.g.output}, self.tensors)
        used: set[str] = set()
        replace: dict[str, Operator] = {}
        removed: set[str] = set()
        for o in self.ops:
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
            self.sources[new.name] = [s for g in group for s in self.sources.pop(g.name, [g.name])]
        if replace:
            self.ops = [replace.get(o.name, o) for o in self.ops if o.name not in removed]


# ---------------------------------------------------------------------------------------------
# Fusion rules: each looks at one operator and returns (the group it fuses, the new operator).


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


# ---------------------------------------------------------------------------------------------
# Node mappers: one per ONNX op type that can become an IR operator.

Mapper = Callable[[_Importer, onnx.NodeProto, str, list[str], dict[str, Any]], None]


def _window(
    imp: _Importer, x: Tensor, a: dict[str, Any], kernel: list[int], name: str, op: str, dilation_ok: bool = True
) -> dict[str, Any]:
    if len(x.shape) != 4 or len(kernel) != 2:
        raise GraphError(
            f"only 2-D windows over a 4-D NCHW input are supported, got input shape {list(x.shape)}", node=name, op=op
        )
    stride = a.get("strides", [1, 1])
    dilation = a.get("dilations", [1, 1])
    if not dilation_ok and dilation != [1, 1]:
        raise GraphError(f"dilations {dilation} are not supported for pooling", node=name, op=op)
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(x.shape[2:], kernel, stride, dilation, upper=auto_pad == "SAME_UPPER")
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    elif auto_pad == "NOTSET":
        pads = a.get("pads", [0, 0, 0, 0])  # ONNX order x1_begin, x2_begin, x1_end, x2_end = IR's t, l, b, r
    else:
        raise GraphError(f"auto_pad {auto_pad!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", node=name, op=op)
    out: dict[str, Any] = {"kernel": list(kernel), "stride": list(stride), "pads": list(pads)}
    if dilation_ok:
        out["dilation"] = list(dilation)
    return out


def _map_conv(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    if len(ins) < 2 or not imp._is_const(ins[1]):
        raise GraphError(
            "the weight must be an initializer or constant; weights computed at run time are not supported",
            node=name,
            op=op,
        )
    w = imp._const_shape(ins[1])
    if len(x.shape) != 4 or len(w) != 4:
        raise GraphError(
            f"only 2-D convolution is supported (4-D NCHW input and weight), got input "
            f"{list(x.shape)} and weight {list(w)}",
            node=name,
            op=op,
        )
    group = int(a.get("group", 1))
    cout, cin_per_group, kh, kw = w
    cin = x.shape[1]
    if cin_per_group * group != cin:
        raise GraphError(
            f"weight shape {list(w)} with group {group} does not fit {cin} input channels", node=name, op=op
        )
    kernel = a.get("kernel_shape", [kh, kw])
    if list(kernel) != [kh, kw]:
        raise GraphError(f"kernel_shape {kernel} differs from the weight's {[kh, kw]}", node=name, op=op)
    bias = len(ins) > 2 and bool(ins[2])
    if bias and not imp._is_const(ins[2]):
        raise GraphError("the bias must be an initializer or constant", node=name, op=op)
    attrs = _window(imp, x, a, kernel, name, op)
    attrs["bias"] = bias
    if group == cin and group > 1 and cout % cin == 0:
        imp.emit(node, name, "depthwise_conv2d", [ins[0]], {**attrs, "multiplier": cout // cin})
    else:
        imp.emit(node, name, "conv2d", [ins[0]], {**attrs, "out_channels": cout, "groups": group})


def _map_gemm(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    imp.act(ins[0], name, op, "left operand")
    if a.get("transA", 0):
        raise GraphError("Gemm with transA=1 is not supported", node=name, op=op)
    has_c = len(ins) > 2 and bool(ins[2])
    if not imp._is_const(ins[1]):
        if a.get("transB", 0) or has_c:
            raise GraphError("Gemm of two activations with transB or C is not supported", node=name, op=op)
        imp.emit(node, name, "matmul", [ins[0], ins[1]], {})
        return
    w = imp._const_shape(ins[1])
    if len(w) != 2:
        raise GraphError(f"the weight must be 2-D, got shape {list(w)}", node=name, op=op)
    if has_c and not imp._is_const(ins[2]):
        raise GraphError("C must be an initializer or constant (a bias)", node=name, op=op)
    n = w[0] if a.get("transB", 0) else w[1]
    imp.emit(node, name, "fully_connected", [ins[0]], {"out_features": n, "bias": has_c})


def _map_matmul(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    imp.act(ins[0], name, op, "left operand")
    if ins[1] in imp.tensors:
        imp.emit(node, name, "matmul", [ins[0], ins[1]], {})
        return
    w = imp._const_shape(ins[1])
    if len(w) != 2:
        raise GraphError(f"a constant right operand must be a 2-D weight, got shape {list(w)}", node=name, op=op)
    imp.emit(node, name, "fully_connected", [ins[0]], {"out_features": w[1], "bias": False})


def _map_binary(ir_type: str) -> Mapper:
    def mapper(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        if len(ins) != 2:
            raise GraphError(f"expected 2 inputs, got {len(ins)}", node=name, op=node.op_type)
        if ins[0] in imp.tensors and ins[1] in imp.tensors:
            imp.emit(node, name, ir_type, list(ins), {})
            return
        k = 0 if ins[1] in imp.tensors else 1  # index of the constant operand
        c = imp._const(ins[k], name, node.op_type)
        attrs: dict[str, Any] = {"const_shape": [int(d) for d in c.shape], "const_first": k == 0}
        flat = c.reshape(-1)
        if flat.size and bool(np.all(flat == flat[0])):
            attrs["const_value"] = _short(flat[0], c.dtype)
        imp.emit(node, name, ir_type, [ins[1 - k]], attrs)

    return mapper


def _map_unary(ir_type: str, defaults: dict[str, Any] | None = None) -> Mapper:
    def mapper(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        attrs = {k: a.get(k, v) for k, v in (defaults or {}).items()}
        imp.emit(node, name, ir_type, [ins[0]], attrs, [node.output[0]])

    return mapper


def _map_clip(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    bounds: list[float | None] = []
    for i, key in ((1, "min"), (2, "max")):
        if imp.opset >= 11:
            c = imp.optional_const(ins, i, name, node.op_type)
            v = None if c is None else _short(c.reshape(-1)[0], c.dtype)
        else:
            v = a.get(key)
        bounds.append(None if v is None or not np.isfinite(v) or abs(v) >= 3.4e38 else v)
    lo, hi = bounds
    if lo == 0.0 and hi == 6.0:
        imp.emit(node, name, "relu6", [ins[0]], {})
    else:
        imp.emit(node, name, "clip", [ins[0]], {"min": lo, "max": hi})


def _map_bn(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    for t in ins[1:5]:
        if not imp._is_const(t):
            raise GraphError(
                f"scale, bias, mean and variance must be constants; {t!r} is computed at run time",
                node=name,
                op=node.op_type,
            )
    imp.emit(node, name, "batch_norm", [ins[0]], {"epsilon": a.get("epsilon", 1e-5)}, [node.output[0]])


def _map_pool(ir_type: str) -> Mapper:
    def mapper(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        x = imp.act(ins[0], name, node.op_type)
        if "kernel_shape" not in a:
            raise GraphError("kernel_shape is required", node=name, op=node.op_type)
        attrs = _window(imp, x, a, a["kernel_shape"], name, node.op_type, dilation_ok=False)
        attrs["ceil_mode"] = bool(a.get("ceil_mode", 0))
        if ir_type == "avg_pool2d":
            attrs["count_include_pad"] = bool(a.get("count_include_pad", 0))
        imp.emit(node, name, ir_type, [ins[0]], attrs, [node.output[0]])

    return mapper


def _map_concat(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    for t in ins:
        imp.act(t, name, node.op_type, "concatenated input")
    imp.emit(node, name, "concat", list(ins), {"axis": a.get("axis", 1)})


def _map_split(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    x = imp.act(ins[0], name, node.op_type)
    axis = a.get("axis", 0)
    if not -len(x.shape) <= axis < len(x.shape):
        raise GraphError(f"axis {axis} is out of range for shape {list(x.shape)}", node=name, op=node.op_type)
    if any(not t for t in node.output):
        raise GraphError("unnamed (skipped) Split outputs are not supported", node=name, op=node.op_type)
    given = imp.optional_const(ins, 1, name, node.op_type)
    if given is not None:
        sizes = [int(s) for s in given.reshape(-1)]
    elif "split" in a:
        sizes = list(a["split"])
    else:
        total, parts = x.shape[axis], len(node.output)
        chunk = -(-total // parts)  # ONNX: equal chunks, the last one smaller when it does not divide
        sizes = [min(chunk, total - i * chunk) for i in range(parts)]
    imp.emit(node, name, "split", [ins[0]], {"axis": axis, "sizes": sizes})


def _map_pad(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    rank = len(x.shape)
    if len(ins) > 1 and ins[1]:
        pads = [int(p) for p in imp._const(ins[1], name, op).reshape(-1)]
        c = imp.optional_const(ins, 2, name, op)
        value = 0.0 if c is None or c.size == 0 else _short(c.reshape(-1)[0], c.dtype)
        axes = imp.optional_const(ins, 3, name, op)
        if axes is not None:
            axes_list = [int(v) % rank for v in axes.reshape(-1)]
            full = [0] * (2 * rank)
            for i, ax in enumerate(axes_list):
                full[ax], full[ax + rank] = pads[i], pads[i + len(axes_list)]
            pads = full
    else:
        pads, value = list(a.get("pads", [0] * (2 * rank))), a.get("value", 0.0)
    mode = a.get("mode", "constant")
    imp.emit(node, name, "pad", [ins[0]], {"pads": pads, "mode": mode, "value": value})


def _map_reduce(ir_type: str, axes_input_from: int) -> Mapper:
    def mapper(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        axes = None
        if imp.opset >= axes_input_from:
            c = imp.optional_const(ins, 1, name, node.op_type)
            axes = None if c is None else [int(v) for v in c.reshape(-1)]
        else:
            axes = a.get("axes")
        if not axes and a.get("noop_with_empty_axes", 0):
            imp.alias[node.output[0]] = ins[0]
            return
        imp.emit(node, name, ir_type, [ins[0]], {"axes": axes or None, "keepdims": bool(a.get("keepdims", 1))})

    return mapper


def _map_reshape(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    if len(ins) > 1 and imp._is_const(ins[1]):
        target = [int(v) for v in imp._const(ins[1], name, op).reshape(-1)]
        if a.get("allowzero", 0) and 0 in target:
            raise GraphError(f"allowzero reshape to {target} makes an empty tensor", node=name, op=op)
    elif len(ins) > 1:
        target = list(imp.inferred(node.output[0], name, op, "the target shape is computed at run time"))
    else:
        target = list(a.get("shape", x.shape))  # opset < 5 form
    imp.emit(node, name, "reshape", [ins[0]], {"shape": target})


def _map_squeeze(unsqueeze: bool) -> Mapper:
    def mapper(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        op = node.op_type
        x = imp.act(ins[0], name, op)
        c = imp.optional_const(ins, 1, name, op)
        axes = [int(v) for v in c.reshape(-1)] if c is not None else a.get("axes")
        shape = list(x.shape)
        if unsqueeze:
            if not axes:
                raise GraphError("Unsqueeze needs axes", node=name, op=op)
            rank = len(shape) + len(axes)
            for ax in sorted(v % rank for v in axes):
                shape.insert(ax, 1)
        else:
            drop = {v % len(shape) for v in axes} if axes else {i for i, d in enumerate(shape) if d == 1}
            if any(shape[i] != 1 for i in drop):
                raise GraphError(f"cannot squeeze axes {sorted(drop)} of shape {list(x.shape)}", node=name, op=op)
            shape = [d for i, d in enumerate(shape) if i not in drop]
        imp.emit(node, name, "reshape", [ins[0]], {"shape": shape})

    return mapper


def _map_transpose(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    imp.emit(node, name, "transpose", [ins[0]], {"perm": a.get("perm")})


def _map_softmax(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # Before opset 13 Softmax flattened the input at ``axis`` (default 1); the shape is the same.
    imp.emit(node, name, "softmax", [ins[0]], {"axis": a.get("axis", -1 if imp.opset >= 13 else 1)})


def _map_flatten(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    imp.emit(node, name, "flatten", [ins[0]], {"axis": a.get("axis", 1)})


def _map_resize(imp: _Importer, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    mode = {"bilinear": "linear"}.get(a.get("mode", "nearest"), a.get("mode", "nearest"))
    if mode not in ("nearest", "linear"):
        raise GraphError(f"resize mode {mode!r} is not in the vocabulary (nearest or linear)", node=name, op=op)
    if len(x.shape) != 4:
        raise GraphError(f"only 4-D NCHW resize is supported, got input shape {list(x.shape)}", node=name, op=op)
    axes = a.get("axes")
    if axes is not None and sorted(v % 4 for v in axes) != [2, 3]:
        raise GraphError(f"resize over axes {axes} is not supported (only H and W)", node=name, op=op)
    if op == "Upsample" or imp.opset < 11:
        scales_c = imp.optional_const(ins, 1, name, op) if len(ins) > 1 else None
        scales = list(scales_c.reshape(-1)) if scales_c is not None else a.get("scales")
        sizes = None
    else:
        scales_c = imp.optional_const(ins, 2, name, op) if len(ins) > 2 and imp._is_const(ins[2]) else None
        sizes_c = imp.optional_const(ins, 3, name, op) if len(ins) > 3 and imp._is_const(ins[3]) else None
        scales = list(scales_c.reshape(-1)) if scales_c is not None and scales_c.size else None
        sizes = [int(v) for v in sizes_c.reshape(-1)] if sizes_c is not None and sizes_c.size else None
    attrs: dict[str, Any] = {"mode": mode, "align_corners": a.get("coordinate_transformation_mode") == "align_corners"}
    if a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        out = imp.inferred(node.output[0], name, op, "the output size depends on keep_aspect_ratio_policy")
        attrs["size"] = list(out[2:4])
    elif sizes is not None:
        attrs["size"] = sizes[-2:]
    elif scales is not None:
        if len(scales) == 4 and (scales[0] != 1 or scales[1] != 1):
            raise GraphError(f"resize scales {scales} change N or C; only H and W may be scaled", node=name, op=op)
        attrs["scales"] = [float(s) for s in scales[-2:]]
    else:
        out = imp.inferred(node.output[0], name, op, "the output size is computed at run time")
        attrs["size"] = list(out[2:4])
    imp.emit(node, name, "resize", [ins[0]], attrs, [node.output[0]])


_MAPPERS: dict[str, Mapper] = {
    "Conv": _map_conv,
    "Gemm": _map_gemm,
    "MatMul": _map_matmul,
    "MaxPool": _map_pool("max_pool2d"),
    "AveragePool": _map_pool("avg_pool2d"),
    "GlobalAveragePool": _map_unary("global_avg_pool"),
    "GlobalMaxPool": _map_unary("global_max_pool"),
    "Add": _map_binary("add"),
    "Sub": _map_binary("sub"),
    "Mul": _map_binary("mul"),
    "Div": _map_binary("div"),
    "Relu": _map_unary("relu"),
    "Clip": _map_clip,
    "HardSwish": _map_unary("hard_swish"),
    # Any alpha / beta reads as hard_sigmoid: the cost is the same and Keras uses alpha 0.2.
    "HardSigmoid": _map_unary("hard_sigmoid"),
    "Sigmoid": _map_unary("sigmoid"),
    "Tanh": _map_unary("tanh"),
    "LeakyRelu": _map_unary("leaky_relu", {"alpha": 0.01}),
    "Elu": _map_unary("elu", {"alpha": 1.0}),
    "Gelu": _map_unary("gelu"),
    "Erf": _map_unary("erf"),
    "BatchNormalization": _map_bn,
    "Concat": _map_concat,
    "Split": _map_split,
    "Pad": _map_pad,
    "ReduceMean": _map_reduce("reduce_mean", 18),
    "ReduceMax": _map_reduce("reduce_max", 18),
    "ReduceSum": _map_reduce("reduce_sum", 13),
    "Reshape": _map_reshape,
    "Flatten": _map_flatten,
    "Squeeze": _map_squeeze(unsqueeze=False),
    "Unsqueeze": _map_squeeze(unsqueeze=True),
    "Transpose": _map_transpose,
    "Softmax": _map_softmax,
    "Resize": _map_resize,
    "Upsample": _map_resize,
}
