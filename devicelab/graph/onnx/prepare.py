"""The model before the node walk: its size, opset, node names, vocabulary, inputs, shapes and order.

Its size comes first (``check_size``): how many nodes it has once its local functions are inlined,
and how many elements each initializer declares, against the import's ``ImportLimits``, so that
neither inlining nor shape inference starts on a model that would be refused anyway.
The graph inputs' shapes are fixed first: a symbolic batch dimension (axis 0, e.g. ``N`` or
``batch``) is resolved to 1; any other symbolic dimension is an error naming the input. Then
``onnx.shape_inference`` (with data propagation) gives the shapes of values whose size is computed
at run time (a Reshape target or Resize size that folding cannot compute). It runs on a working
copy whose large initializers keep their dims but not their data, which keeps a 100 MB model's
import well under a second.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterator, Mapping, Sequence

import onnx

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Tensor
from devicelab.graph.limits import ImportLimits, LimitExceeded, check_elements

MIN_OPSET = 7

# ONNX element types an input may have -> IR dtype names.
DTYPES = {
    onnx.TensorProto.FLOAT: "float32",
    onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.INT8: "int8",
    onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.INT32: "int32",
    onnx.TensorProto.INT64: "int64",
}
# Element types between which a Cast only changes precision.
FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE, onnx.TensorProto.BFLOAT16}

# Initializers with more elements than this lose their data in the working copy: the IR needs
# only their shapes, and shape inference then does not serialize megabytes of weights.
_KEEP_DATA_ELEMENTS = 4096


def working_copy(model: onnx.ModelProto) -> onnx.ModelProto:
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
        if math.prod(t.dims) <= _KEEP_DATA_ELEMENTS:
            g.initializer.append(t)
        else:
            g.initializer.add(name=t.name, dims=t.dims, data_type=t.data_type)
    return work


def _subgraph_nodes(node: onnx.NodeProto) -> Iterator[onnx.NodeProto]:
    """The nodes of the graphs a node holds as attributes (If, Loop, Scan bodies), recursively."""
    for attr in node.attribute:
        for g in (*([attr.g] if attr.HasField("g") else []), *attr.graphs):
            for n in g.node:
                yield n
                yield from _subgraph_nodes(n)


def inlined_node_count(model: onnx.ModelProto, stop_above: int) -> int:
    """How many nodes the model has once its local functions are inlined (counted without inlining:
    a function called twice from a function called twice... doubles at every level). Counting stops
    once it passes ``stop_above``; a function that calls itself is an error."""
    functions = {(f.domain, f.name, f.overload): f for f in model.functions}
    sizes: dict[tuple[str, str, str], int] = {}

    def nodes_of(graph_nodes: Sequence[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
        for n in graph_nodes:
            yield n
            yield from _subgraph_nodes(n)

    def calls(graph_nodes: Sequence[onnx.NodeProto]) -> Iterator[tuple[str, str, str]]:
        for n in nodes_of(graph_nodes):
            k = (n.domain, n.op_type, n.overload)
            if k in functions:
                yield k

    def size(graph_nodes: Sequence[onnx.NodeProto]) -> int:
        total = 0
        for n in nodes_of(graph_nodes):
            total += sizes.get((n.domain, n.op_type, n.overload), 1)
            if total > stop_above:
                break
        return total

    # Every function's size, callees first (a depth-first walk with an explicit stack).
    for root in functions:
        if root in sizes:
            continue
        stack = [(root, calls(functions[root].node))]
        on_stack = {root}
        while stack:
            fkey, pending = stack[-1]
            callee = next((k for k in pending if k not in sizes), None)
            if callee is None:
                sizes[fkey] = size(functions[fkey].node)
                stack.pop()
                on_stack.discard(fkey)
            elif callee in on_stack:
                raise GraphError(f"the local function {callee[1]!r} calls itself", node=callee[1])
            else:
                stack.append((callee, calls(functions[callee].node)))
                on_stack.add(callee)
    return size(model.graph.node)


def check_size(model: onnx.ModelProto, limits: ImportLimits) -> None:
    """Refuse a model over ``limits`` before anything works on it: too many nodes once its local
    functions are inlined, or an initializer declaring more elements than a tensor may hold."""
    nodes = inlined_node_count(model, limits.max_operators)  # stops counting past the limit
    if nodes > limits.max_operators:
        what = "nodes once its local functions are inlined" if model.functions else "nodes"
        raise LimitExceeded(
            f"the model has more {what} than the limit of {limits.max_operators}",
            limit="max_operators",
            count=nodes,
            maximum=limits.max_operators,
            node=None,
            op=None,
        )
    for t in model.graph.initializer:
        check_elements(t.dims, limits, node=t.name, what="the initializer")
    for st in model.graph.sparse_initializer:
        check_elements(st.dims, limits, node=st.values.name, what="the sparse initializer")


_INFER_RE = re.compile(r"op_type:\s*([\w.]+),\s*node name:\s*([^)]*)\)")


def _inference_error(exc: Exception) -> GraphError:
    text = " ".join(str(exc).split())
    m = _INFER_RE.search(text)
    if m:
        return GraphError(f"ONNX shape inference failed: {text}", node=m.group(2).strip() or None, op=m.group(1))
    return GraphError(f"ONNX shape inference failed: {text}")


def default_opset(model: onnx.ModelProto) -> int:
    """The model's opset of the default domain, checked to be one the reader supports."""
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if not versions:
        raise GraphError("the ONNX model declares no opset for the default domain")
    opset = int(versions[0])
    newest = onnx.defs.onnx_opset_version()
    if not MIN_OPSET <= opset <= newest:
        raise GraphError(f"ONNX opset {opset} is not supported (supported: {MIN_OPSET} to {newest})")
    return opset


def node_names(nodes: Sequence[onnx.NodeProto]) -> list[str]:
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


def check_vocabulary(
    nodes: Sequence[onnx.NodeProto],
    names: list[str],
    known: Collection[str],
    custom: Mapping[str, Collection[str]] | None = None,
) -> None:
    """Refuse the first node whose op type is not ``known`` (mapped, folded or dropped); of a custom
    domain, only the op types ``custom`` lists for it are known."""
    for n, node_name in zip(nodes, names, strict=False):
        if n.domain not in ("", "ai.onnx") and n.op_type not in (custom or {}).get(n.domain, ()):
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


def read_inputs(graph: onnx.GraphProto, inits: Collection[str], limits: ImportLimits) -> list[Tensor]:
    """The graph inputs, with a symbolic batch dimension resolved to 1 (in ``graph`` too), each
    checked against ``limits``."""
    inputs: list[Tensor] = []
    for vi in graph.input:
        if vi.name in inits:
            continue  # old exporters list initializers as inputs too
        if not vi.type.HasField("tensor_type"):
            raise GraphError("graph input is not a tensor", node=vi.name)
        tt = vi.type.tensor_type
        dtype = DTYPES.get(tt.elem_type)
        if dtype is None:
            type_name = onnx.TensorProto.DataType.Name(tt.elem_type) if tt.elem_type else "undefined"
            raise GraphError(
                f"graph input has element type {type_name}; supported: {sorted(set(DTYPES.values()))}",
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
        check_elements(shape, limits, node=vi.name, what="the graph input")
        inputs.append(Tensor(vi.name, tuple(shape), dtype))
    if not inputs:
        raise GraphError("the ONNX graph has no inputs besides its initializers")
    return inputs


def infer_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """The static shapes ONNX shape inference finds for the model's values, by value name."""
    # Intermediate value_info may carry the old symbolic batch; inference recomputes them.
    # Not strict: onnx's pooling rule for ceil_mode still lets the last window start in the
    # end padding (onnxruntime and the IR do not), and a model must not be refused for that.
    # The IR re-derives every shape itself; these are only the fallback for targets computed
    # at run time.
    del model.graph.value_info[:]
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError...
        raise _inference_error(exc) from None
    shapes: dict[str, tuple[int, ...]] = {}
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        tt = vi.type.tensor_type
        if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
            shapes[vi.name] = tuple(int(d.dim_value) for d in tt.shape.dim)
    return shapes


def topological_order(
    graph: onnx.GraphProto, inits: Collection[str], nodes: Sequence[onnx.NodeProto], names: list[str]
) -> list[int]:
    """Node indices in topological order (ONNX requires it, but be lenient and stable)."""
    available = set(inits) | {vi.name for vi in graph.input} | {""}
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
