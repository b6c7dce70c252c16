"""The model before the node walk: its size, opset, node names, vocabulary, inputs, shapes and order.

Its size comes first (``check_size``): how many nodes it has once its local functions are inlined,
and how many elements each initializer declares, against the import's ``ImportLimits``, so that
neither inlining nor the walk starts on a model that would be refused anyway. A tensor whose data
lives in an external file is refused next (``check_self_contained``), wherever it is, without the
file system ever being asked about its path.
The graph inputs' shapes are fixed first: a symbolic batch dimension (axis 0, e.g. ``N`` or
``batch``) is resolved to 1; any other symbolic dimension is an error naming the input.

``onnx.shape_inference`` never runs over the whole model (issue 32): onnx materializes one
protobuf message per element of a shape-like value, and its data propagation does so for any 1-D
value of known length read by a Cast, Add, Mul, Gather, Concat..., so ``Range(0, 2**28) -> Cast ->
Add`` (267 bytes) took 10.7 GB before any of our limits was checked, and onnx 1.23 has the same
loop for the rank of a Reshape / Expand / ConstantOfShape target. The importer's own walk
computes every shape and folds every constant within the limits; the few mappers that need onnx's
rule for one output (``Resize`` with ``keep_aspect_ratio_policy``) ask ``infer_node_shape``,
which runs onnx on a model of that one node whose inputs are declared with the shapes the walk
already checked, and whose 1-D inputs longer than ``MAX_SHAPE_OPERAND`` are declared of unknown
length, so nothing onnx could materialize is larger than the node itself.
"""

from __future__ import annotations

import heapq
import itertools
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


def count_onnx_nodes(data: bytes, stop_above: int) -> int | None:
    """How many nodes a serialized ONNX model has once its local functions are inlined (counting
    stops past ``stop_above``), or None when the bytes are not a model the importer could read:
    how much work an import will be, told from a parse that costs milliseconds for 4 MB."""
    from devicelab.graph.onnx.wire import parse_onnx_bytes

    try:
        return inlined_node_count(parse_onnx_bytes(data), stop_above)
    except GraphError:
        return None


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


EXTERNAL_DATA_REASON = (
    "keeps its data in an external file; LatencyLab reads only self-contained ONNX files, whose "
    "tensors are all inside the one uploaded file: save the model with "
    "onnx.save_model(model, path, save_as_external_data=False) (up to 2 GB)"
)


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every tensor of a graph, with the name a refusal gives: its own, or its node's."""
    for t in graph.initializer:
        yield t.name, t
    for st in graph.sparse_initializer:
        yield from ((st.values.name, st.values), (st.values.name, st.indices))
    yield from _node_tensors(graph.node)


def _node_tensors(nodes: Sequence[onnx.NodeProto]) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every tensor a node holds as an attribute (a Constant's value...), subgraphs included."""
    for n in nodes:
        owner = n.name or n.op_type
        for attr in n.attribute:
            if attr.HasField("t"):
                yield owner, attr.t
            yield from ((owner, t) for t in attr.tensors)
            for st in (*([attr.sparse_tensor] if attr.HasField("sparse_tensor") else []), *attr.sparse_tensors):
                yield from ((owner, st.values), (owner, st.indices))
            for g in (*([attr.g] if attr.HasField("g") else []), *attr.graphs):
                yield from _graph_tensors(g)


def check_self_contained(model: onnx.ModelProto) -> None:
    """Refuse a model any of whose tensors keeps its data in an external file (issue 32).

    The refusal is the same wherever ``location`` points (``../../../etc/passwd``, an absolute
    path, ``/proc/self/environ``) and never opens, stats or resolves it: an upload is one file, so
    no external file can be part of it, and an answer that differed by whether the path exists on
    the server would tell the uploader which files the server has.
    """
    in_functions = _node_tensors([n for f in model.functions for n in f.node])
    for owner, t in itertools.chain(_graph_tensors(model.graph), in_functions):
        if t.data_location == onnx.TensorProto.EXTERNAL or len(t.external_data):
            raise GraphError(f"the tensor {t.name!r} {EXTERNAL_DATA_REASON}", node=owner or None)


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


# The longest 1-D value one-node shape inference may see with its length known: onnx makes one
# message per element of a shape operand (its "rank inference"); a shape has at most 64 axes.
MAX_SHAPE_OPERAND = 1024


def infer_node_shape(
    node: onnx.NodeProto,
    opset_imports: Sequence[onnx.OperatorSetIdProto],
    inputs: Sequence[tuple[str, int, tuple[int, ...]]],
    constants: Mapping[str, onnx.TensorProto],
) -> tuple[int, ...] | None:
    """The static shape onnx's inference rule gives ``node``'s first output, or None.

    ``inputs``: every input as (name, ONNX element type, shape), shapes the walk has checked;
    ``constants``: the inputs whose values onnx may read (small operands only). Bounded by
    construction: a model of this one node, no data propagation, and no 1-D input longer than
    ``MAX_SHAPE_OPERAND`` declared with its length.
    """
    declared = []
    for name, elem_type, shape in inputs:
        if len(shape) == 1 and shape[0] > MAX_SHAPE_OPERAND:
            dims: list[int | str | None] = ["long"]
        else:
            dims = list(shape)
        declared.append(onnx.helper.make_tensor_value_info(name, elem_type, dims))
    inits = [t for name, t in constants.items() if math.prod(t.dims) <= MAX_SHAPE_OPERAND]
    out = onnx.helper.make_tensor_value_info(node.output[0], onnx.TensorProto.UNDEFINED, None)
    graph = onnx.helper.make_graph([node], "one_node", declared, [out], initializer=inits)
    model = onnx.helper.make_model(graph, opset_imports=list(opset_imports))
    try:
        inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=False)
    except Exception as exc:  # onnx raises InferenceError, ValidationError, RuntimeError...
        raise _inference_error(exc) from None
    tt = inferred.graph.output[0].type.tensor_type
    if tt.HasField("shape") and all(d.HasField("dim_value") for d in tt.shape.dim):
        return tuple(int(d.dim_value) for d in tt.shape.dim)
    return None


def topological_order(
    graph: onnx.GraphProto, inits: Collection[str], nodes: Sequence[onnx.NodeProto], names: list[str]
) -> list[int]:
    """Node indices in topological order (ONNX requires it, but be lenient and stable).

    Kahn's algorithm taking the lowest ready index first, so a sorted graph keeps its order, in
    time linear in the nodes and edges: the old pass-until-nothing-moves loop took 13.6 s for a
    5,000-node chain stored in reverse (and hours for a 4 MB file of 10**5 nodes).
    """
    available = set(inits) | {vi.name for vi in graph.input} | {""}
    readers: dict[str, list[int]] = {}
    waiting = [0] * len(nodes)
    for i, n in enumerate(nodes):
        unmet = {t for t in n.input if t not in available}
        waiting[i] = len(unmet)
        for t in unmet:
            readers.setdefault(t, []).append(i)
    ready = [i for i, count in enumerate(waiting) if count == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for t in nodes[i].output:
            if t in available:
                continue
            available.add(t)
            for j in readers.pop(t, ()):
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(ready, j)
    if len(order) < len(nodes):
        i = min(set(range(len(nodes))) - set(order))
        missing = [t for t in nodes[i].input if t not in available]
        raise GraphError(
            f"reads {missing[0]!r}, which is not a graph input, an initializer or the output "
            "of any node (or the graph has a cycle)",
            node=names[i],
            op=nodes[i].op_type,
        )
    return order
