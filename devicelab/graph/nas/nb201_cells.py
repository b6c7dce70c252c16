"""NAS-Bench-201 networks of the benchmark's default size, built straight from their six edge ops.

``nb201.from_string`` builds a network through ``GraphBuilder``, which checks every operator's
attributes and infers its shapes: about 160 operators, 4 ms a network, most of a batch of 1,000
cells when the prediction API answers them without its lookup table. Every network of the
space is the same skeleton (stem, three stages of five copies of the cell, two reduction blocks,
head) at the same sizes, so each operator's canonical attributes and output shape are one of
about 25, known before any cell is read: ``from_cell`` only names and links the operators,
exactly as the builder would (its per-type counters, scopes and ``node<j>_sum`` suffixes).

The result equals ``nb201.from_string(nb201.to_string(ops), name=name)`` operator for operator
(names, types, inputs, outputs, attributes, tensors, shapes): tests/devicelab/predict/
test_predict_nb201_cells.py compares the two for every pattern of live edges. Only the default
size (C=16, N=5, 10 classes, 32x32 inputs) is built here; other sizes go through
``nb201.from_string``. Operators get their own attribute dicts; the lists inside them are
shared between networks and must not be changed in place (as with ``ops.normalize_and_infer_memo``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from devicelab.graph import ops
from devicelab.graph.builder import conv_pads
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator, Tensor
from devicelab.graph.nas import nb201
from devicelab.graph.ops import Shape

C, N, NUM_CLASSES, INPUT_SIZE = 16, 5, 10, 32
INPUT = "input"
_DTYPE = "float32"

# (op type, canonical attributes, output shape)
_Proto = tuple[str, dict[str, Any], Shape]


def _proto(op_type: str, shape: Shape, arity: int = 1, **attrs: Any) -> _Proto:
    canonical, shapes = ops.normalize_and_infer(op_type, attrs, [shape] * arity)
    (out,) = shapes
    return op_type, canonical, tuple(out)


def _conv(shape: Shape, cout: int, kernel: int, stride: int = 1) -> _Proto:
    # GraphBuilder.conv's attributes: "same" padding, no bias
    size = (shape[2], shape[3])
    pads = conv_pads(size, (kernel, kernel), (stride, stride), (1, 1), "same")
    return _proto(
        "conv2d",
        shape,
        out_channels=cout,
        kernel=[kernel, kernel],
        stride=[stride, stride],
        pads=pads,
        dilation=[1, 1],
        groups=1,
        bias=False,
    )


def _pool(shape: Shape, kernel: int, stride: int, pad: int) -> _Proto:
    size = (shape[2], shape[3])
    pads = conv_pads(size, (kernel, kernel), (stride, stride), (1, 1), pad)
    return _proto(
        "avg_pool2d",
        shape,
        kernel=[kernel, kernel],
        stride=[stride, stride],
        pads=pads,
        ceil_mode=False,
        count_include_pad=False,
    )


class _Protos:
    """Every operator the default-size networks hold, by stage."""

    def __init__(self) -> None:
        self.input_shape: Shape = (1, 3, INPUT_SIZE, INPUT_SIZE)
        shapes = [(1, C * 2**s, INPUT_SIZE // 2**s, INPUT_SIZE // 2**s) for s in range(3)]
        self.stem_conv = _conv(self.input_shape, C, 3)
        self.relu = [_proto("relu", s) for s in shapes]
        self.bn = [_proto("batch_norm", s, epsilon=1e-5) for s in shapes]
        self.conv1 = [_conv(s, s[1], 1) for s in shapes]
        self.conv3 = [_conv(s, s[1], 3) for s in shapes]
        self.pool3 = [_pool(s, 3, 1, 1) for s in shapes]
        self.add = [_proto("add", s, 2) for s in shapes]
        self.zero = [_proto("mul", s, const_shape=[1], const_value=0.0) for s in shapes]
        # a reduction into stage s (1, 2) reads stage s-1's shape
        self.reduce_conv = [_conv(shapes[s - 1], shapes[s][1], 3, stride=2) if s else self.conv3[0] for s in range(3)]
        self.shortcut_pool = [_pool(shapes[s - 1], 2, 2, 0) if s else self.pool3[0] for s in range(3)]
        self.shortcut_conv = [
            _conv(self.shortcut_pool[s][2], shapes[s][1], 1) if s else self.conv1[0] for s in range(3)
        ]
        last = shapes[2]
        self.gap = _proto("global_avg_pool", last)
        self.flatten = _proto("flatten", self.gap[2], axis=1)
        self.fc = _proto("fully_connected", self.flatten[2], out_features=NUM_CLASSES, bias=True)


_protos: _Protos | None = None
_tensors: dict[tuple[str, Shape], Tensor] = {}  # immutable and few (names x shapes): made once
_TENSORS_LIMIT = 1 << 16


def _get_protos() -> _Protos:
    global _protos
    if _protos is None:
        _protos = _Protos()
    return _protos


# The cell's operators, in the builder's order: ("edge", src, dst, op) or ("sum", node, k)
# (the k-th sum of a node), from the live edges.
def _cell_program(cell_ops: Sequence[str]) -> list[tuple[Any, ...]] | None:
    edges, connected = nb201._live_edges(cell_ops)
    if not connected:
        return None
    program: list[tuple[Any, ...]] = []
    for node in range(1, nb201.NUM_NODES):
        terms = 0
        for src, dst, op in edges:
            if dst == node:
                program.append(("edge", src, dst, op))
                terms += 1
        for k in range(terms - 1):
            program.append(("sum", node, k))
    return program


def from_cell(cell_ops: Sequence[str], name: str | None = None, cells_per_stage: int = N) -> Graph:
    """The default-size NAS-Bench-201 network of six edge ops (``nb201.parse`` order): the graph
    ``nb201.from_string(nb201.to_string(cell_ops), name=name)`` builds (with ``cells_per_stage``
    other than ``N``: ``from_string(..., N=cells_per_stage)``, for ``nb201_kernels``)."""
    cell_ops = tuple(cell_ops)
    if len(cell_ops) != len(nb201.EDGES) or any(op not in nb201.OPS for op in cell_ops):
        raise GraphError(f"a cell needs {len(nb201.EDGES)} ops from {list(nb201.OPS)}, got {list(cell_ops)!r}")
    p = _get_protos()
    program = _cell_program(cell_ops)
    tensors: dict[str, Tensor] = {}
    operators: list[Operator] = []
    counts: dict[str, int] = {}
    interned = _tensors
    if len(interned) > _TENSORS_LIMIT:
        interned.clear()

    def emit(scope: str, proto: _Proto, inputs: list[str], base: str | None = None) -> str:
        op_type, attrs, shape = proto
        count = counts.get(op_type, 0)
        counts[op_type] = count + 1
        op_name = f"{scope}/{base or f'{op_type}_{count}'}"
        key = (op_name, shape)
        tensor = interned.get(key)
        if tensor is None:
            tensor = interned[key] = Tensor(op_name, shape, _DTYPE)
        tensors[op_name] = tensor
        operators.append(Operator(op_name, op_type, inputs, [op_name], dict(attrs)))
        return op_name

    tensors[INPUT] = Tensor(INPUT, p.input_shape, _DTYPE)
    x = emit("stem", p.stem_conv, [INPUT])
    x = emit("stem", p.bn[0], [x])
    for stage in range(3):
        if stage:
            scope = f"reduce{stage}"
            a = emit(scope, p.relu[stage - 1], [x])
            a = emit(scope, p.reduce_conv[stage], [a])
            a = emit(scope, p.bn[stage], [a])
            a = emit(scope, p.relu[stage], [a])
            a = emit(scope, p.conv3[stage], [a])
            a = emit(scope, p.bn[stage], [a])
            r = emit(f"{scope}/shortcut", p.shortcut_pool[stage], [x])
            r = emit(f"{scope}/shortcut", p.shortcut_conv[stage], [r])
            x = emit(scope, p.add[stage], [r, a])
        for i in range(cells_per_stage):
            scope = f"stage{stage}/cell{i}"
            if program is None:
                x = emit(scope, p.zero[stage], [x], "zero")
                continue
            value = {0: x}
            pending: dict[int, list[str]] = {}
            for step in program:
                if step[0] == "edge":
                    _, src, dst, op = step
                    inner = f"{scope}/edge{src}to{dst}"
                    if op == "skip_connect":
                        term = value[src]
                    elif op == "avg_pool_3x3":
                        term = emit(inner, p.pool3[stage], [value[src]])
                    else:
                        conv = p.conv1[stage] if op == "nor_conv_1x1" else p.conv3[stage]
                        term = emit(inner, p.bn[stage], [emit(inner, conv, [emit(inner, p.relu[stage], [value[src]])])])
                    pending.setdefault(dst, []).append(term)
                    # a node's value is complete once its last live edge is read: its sums follow
                    # at once in the program, and later edges read it only after them
                    value[dst] = pending[dst][0]
                else:
                    _, node, k = step
                    terms = pending[node]
                    suffix = "" if k == 0 else f"_{k}"
                    value[node] = emit(scope, p.add[stage], [value[node], terms[k + 1]], f"node{node}_sum{suffix}")
            x = value[nb201.NUM_NODES - 1]
    x = emit("head", p.bn[2], [x])
    x = emit("head", p.relu[2], [x])
    x = emit("head", p.gap, [x])
    x = emit("head", p.flatten, [x])
    x = emit("head", p.fc, [x])
    # Built in order from checked prototypes: Graph.check(infer=False) holds by construction.
    return Graph(name or nb201.SPACE, tensors, [INPUT], [x], operators)


def from_string(arch: str, name: str | None = None) -> Graph:
    """``from_cell`` of a cell string (``GraphError`` saying what is wrong with it)."""
    return from_cell(nb201.parse(arch), name)


__all__ = ["from_cell", "from_string"]
