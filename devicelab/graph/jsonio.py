"""Graph JSON: the wire format NAS tools send to the API (``docs/graph-format.md``).

Output shapes may be left out of a document: they are inferred from the inputs. Shapes that
are given must agree with inference, so a document that loads is always consistent. A document
describes sizes without holding data, so every tensor and every operator's weights are checked
against the reader's ``ImportLimits`` as they are read.
"""

from __future__ import annotations

import json
from typing import Any

from devicelab.graph import ops
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator, Tensor
from devicelab.graph.limits import DEFAULT_LIMITS, ImportLimits, check_elements, check_operators, check_weights

SCHEMA_VERSION = 1


def graph_to_dict(graph: Graph) -> dict[str, Any]:
    """The graph as plain JSON-ready data."""
    return {
        "schema_version": SCHEMA_VERSION,
        "name": graph.name,
        "inputs": [
            {"name": t, "shape": list(graph.tensors[t].shape), "dtype": graph.tensors[t].dtype} for t in graph.inputs
        ],
        "outputs": list(graph.outputs),
        "operators": [
            {
                "name": o.name,
                "type": o.type,
                "inputs": list(o.inputs),
                "outputs": list(o.outputs),
                "attrs": o.attrs,
                "output_shapes": [list(graph.tensors[t].shape) for t in o.outputs],
            }
            for o in graph.operators
        ],
    }


def graph_to_json(graph: Graph, indent: int | None = None) -> str:
    """The graph as a JSON string."""
    return json.dumps(graph_to_dict(graph), indent=indent)


def _expect(cond: object, reason: str, node: str | None = None, op: str | None = None) -> None:
    if not cond:
        raise GraphError(reason, node=node, op=op)


def graph_from_dict(doc: Any, limits: ImportLimits = DEFAULT_LIMITS) -> Graph:
    """Read a graph document; raise ``GraphError`` naming the operator and reason when it is bad
    (``LimitExceeded`` when it is over ``limits``)."""
    _expect(isinstance(doc, dict), "a graph document must be a JSON object")
    version = doc.get("schema_version")
    _expect(
        type(version) is int and version == SCHEMA_VERSION, f"schema_version must be {SCHEMA_VERSION}, got {version!r}"
    )
    name = doc.get("name", "graph")
    _expect(isinstance(name, str), "'name' must be a string")
    raw_inputs = doc.get("inputs")
    _expect(isinstance(raw_inputs, list) and raw_inputs, "'inputs' must be a non-empty list")
    tensors: dict[str, Tensor] = {}
    inputs: list[str] = []
    for i, spec in enumerate(raw_inputs):
        _expect(isinstance(spec, dict) and isinstance(spec.get("name"), str), f"inputs[{i}] needs a 'name'")
        shape = spec.get("shape")
        _expect(
            isinstance(shape, list) and shape and all(type(d) is int and d >= 1 for d in shape),  # not true
            f"input shape {shape!r} must be a list of positive integers (no dynamic dimensions)",
            node=spec["name"],
        )
        check_elements(shape, limits, node=spec["name"], what="the graph input")
        dtype = spec.get("dtype", "float32")
        _expect(dtype in ops.DTYPES, f"dtype {dtype!r} is not one of {list(ops.DTYPES)}", node=spec["name"])
        tensors[spec["name"]] = Tensor(spec["name"], tuple(shape), dtype)
        inputs.append(spec["name"])
    raw_ops = doc.get("operators")
    _expect(isinstance(raw_ops, list) and raw_ops, "'operators' must be a non-empty list")
    check_operators(len(raw_ops), limits)
    most = limits.max_tensor_elements
    operators: list[Operator] = []
    names: set[str] = set()
    known = ops.OPS
    for i, raw in enumerate(raw_ops):
        if not isinstance(raw, dict):
            raise GraphError(f"operators[{i}] must be an object")
        op_name = raw.get("name")
        if op_name is None:
            op_name = f"op_{i}"
        elif type(op_name) is not str:
            raise GraphError(f"operators[{i}]: 'name' must be a string, got {op_name!r}")
        op_type = raw.get("type")
        if not isinstance(op_type, str):
            raise GraphError("operator needs a 'type'", node=op_name)
        if op_type not in known:
            ops.spec(op_type, op_name)  # says the type is unknown
        op_inputs, op_outputs = raw.get("inputs"), raw.get("outputs")
        if type(op_inputs) is not list:
            raise GraphError("'inputs' must be a list of tensor names", node=op_name, op=op_type)
        if type(op_outputs) is not list or not op_outputs:
            raise GraphError("'outputs' must be a non-empty list of tensor names", node=op_name, op=op_type)
        in_shapes = []
        for t in op_inputs:
            if type(t) is not str:
                raise GraphError("'inputs' must be a list of tensor names", node=op_name, op=op_type)
            tensor = tensors.get(t)
            if tensor is None:
                raise GraphError(
                    f"reads tensor {t!r} before it is written (list operators in topological order)",
                    node=op_name,
                    op=op_type,
                )
            in_shapes.append(tensor.shape)
        attrs = raw.get("attrs", {})
        if not isinstance(attrs, dict):
            raise GraphError("'attrs' must be an object", node=op_name, op=op_type)
        canonical, shapes, largest = ops.normalize_infer_and_size_memo(op_type, attrs, in_shapes, op_name)
        if len(shapes) != len(op_outputs):
            raise GraphError(f"has {len(op_outputs)} outputs, expected {len(shapes)}", node=op_name, op=op_type)
        declared = raw.get("output_shapes")
        if declared is not None:
            if not (isinstance(declared, list) and len(declared) == len(shapes)):
                raise GraphError("'output_shapes' must list one shape per output", node=op_name, op=op_type)
            for t, want, got in zip(op_outputs, declared, shapes):
                if not isinstance(want, (list, tuple)) or tuple(want) != tuple(got):
                    raise GraphError(
                        f"output {t!r} is declared {want} but its inputs give {list(got)}", node=op_name, op=op_type
                    )
        if largest > most:  # an output or the weights are over the limit: say which
            for t, s in zip(op_outputs, shapes):
                check_elements(s, limits, node=op_name, op=op_type, what=f"its output {t!r}")
            check_weights(known[op_type].params(in_shapes, shapes, canonical), limits, node=op_name, op=op_type)
        if op_type == ops.OPAQUE:
            out_dtypes = list(canonical["output_dtypes"])
        else:
            out_dtypes = [ops.output_dtype(op_type, canonical, [tensors[t].dtype for t in op_inputs], op_name)]
            out_dtypes *= len(op_outputs)
        for t, s, dtype in zip(op_outputs, shapes, out_dtypes):
            if type(t) is not str:
                raise GraphError("'outputs' must be a non-empty list of tensor names", node=op_name, op=op_type)
            if t in tensors:
                raise GraphError(f"writes tensor {t!r}, which is already written", node=op_name, op=op_type)
            tensors[t] = Tensor(t, s if type(s) is tuple else tuple(s), dtype)
        if op_name in names:
            raise GraphError("operator name is used more than once", node=op_name)
        names.add(op_name)
        operators.append(Operator(op_name, op_type, list(op_inputs), list(op_outputs), canonical))
    outputs = doc.get("outputs")
    if outputs is None:
        outputs = [operators[-1].outputs[-1]]
    _expect(
        isinstance(outputs, list) and all(isinstance(t, str) for t in outputs),
        "'outputs' must be a list of tensor names",
    )
    for t in outputs:
        if t not in tensors:
            raise GraphError(f"graph output {t!r} is never written", node=t)
    # Everything ``Graph.check`` asks was checked above, operator by operator, in order: every
    # operator normalized and its outputs inferred, every tensor read after it is written and
    # written once, operator names unique.
    graph = Graph(name, tensors, inputs, list(outputs), operators)
    graph.check_names()
    return graph


def graph_from_json(text: str | bytes, limits: ImportLimits = DEFAULT_LIMITS) -> Graph:
    """Parse graph JSON text (within ``limits``)."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise GraphError(f"not valid JSON: {exc}") from None
    return graph_from_dict(doc, limits)
