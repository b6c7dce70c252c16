"""Drive one TFLite import: decode the flatbuffer, then convert subgraph 0 operator by operator.

Every tensor the import declares is checked against the import's ``ImportLimits`` as it is
declared (naming the operator that writes it), and the whole graph once more at the end.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator, Tensor
from devicelab.graph.limits import DEFAULT_LIMITS, ImportLimits, check_elements, check_graph, check_operators
from devicelab.graph.ops import OPAQUE, numel
from devicelab.graph.tflite.context import OpContext, to_nchw
from devicelab.graph.tflite.mappers import HANDLERS
from devicelab.graph.tflite.wire import CUSTOM, DTYPES, TYPE_NAMES, RawModel, RawOp, decode

# ActivationFunctionType -> (IR type, attrs); SIGN_BIT (5) has no IR equivalent.
_FUSED = {1: ("relu", {}), 2: ("clip", {"min": -1.0, "max": 1.0}), 3: ("relu6", {}), 4: ("tanh", {})}


def graph_from_tflite_bytes(data: bytes, name: str | None = None, limits: ImportLimits = DEFAULT_LIMITS) -> Graph:
    """Parse a .tflite flatbuffer into a checked ``Graph`` (NCHW) within ``limits``, or raise ``GraphError``."""
    raw = decode(bytes(data))
    return _Importer(raw, name, limits).run()


def _op_name(code: int) -> str:
    from tflite.utils import BUILTIN_OPCODE2NAME

    name: str = BUILTIN_OPCODE2NAME.get(code, f"BUILTIN_{code}")
    return name


class _Importer:
    """Walks subgraph 0 in execution order and emits IR tensors and operators."""

    def __init__(self, raw: RawModel, name: str | None, limits: ImportLimits) -> None:
        self.raw = raw
        self.limits = limits
        self.current: OpContext | None = None  # the operator being converted
        self.graph_name = name or (raw.subgraph_name if raw.subgraph_name not in ("", "main") else "tflite_model")
        self.names = self._unique_names()
        self.live: set[int] = set(raw.inputs)
        self.alias: dict[int, int] = {}
        self.dequantized: dict[int, int] = {}  # DEQUANTIZE of a constant: output -> its (float16) input
        self.tensors: dict[str, Tensor] = {}
        self.ops: list[Operator] = []
        self.op_names: set[str] = set()

    def _unique_names(self) -> list[str]:
        seen: set[str] = set()
        out = []
        for i, t in enumerate(self.raw.tensors):
            base = t.name or f"tensor_{i}"
            name, k = base, 1
            while name in seen:
                name, k = f"{base}_{k}", k + 1
            seen.add(name)
            out.append(name)
        return out

    # -- tensors -----------------------------------------------------------------------------

    def raw_shape(self, i: int) -> list[int]:
        """The TFLite (NHWC) shape of a tensor, with a dynamic batch read as 1."""
        t = self.raw.tensors[i]
        dims = t.signature if t.signature is not None and len(t.signature) == len(t.shape) else t.shape
        out = []
        for axis, d in enumerate(dims):
            if d < 0:
                if axis != 0:
                    raise GraphError(
                        f"tensor has a dynamic dimension {axis} (shape {dims}); only the batch dimension "
                        "may be dynamic, so fix the input shape when converting the model",
                        node=self.names[i],
                    )
                d = t.shape[0] if t.shape and t.shape[0] > 0 else 1
            if d == 0:
                raise GraphError(f"tensor has an empty dimension {axis} (shape {dims})", node=self.names[i])
            out.append(int(d))
        return out

    def ir_shape(self, i: int) -> tuple[int, ...]:
        """The IR (NCHW for 4-D) shape of a tensor."""
        return to_nchw(self.raw_shape(i))

    def dtype(self, i: int) -> str:
        """The IR dtype of a tensor."""
        code = self.raw.tensors[i].type
        if code not in DTYPES:
            raise GraphError(
                f"tensor type {TYPE_NAMES.get(code, code)} has no IR equivalent (supported: {sorted(DTYPES.values())})",
                node=self.names[i],
            )
        return DTYPES[code]

    def resolve(self, i: int) -> int:
        """Follow dropped QUANTIZE / DEQUANTIZE operators back to the tensor the IR keeps."""
        while i in self.alias:
            i = self.alias[i]
        return i

    def is_live(self, i: int) -> bool:
        """Whether a tensor is computed at run time (as opposed to a constant)."""
        return i >= 0 and i in self.live

    def _check_elements(self, shape: Sequence[int], tensor: str) -> None:
        c = self.current
        if c is None:
            check_elements(shape, self.limits, node=tensor, what="the graph input")
        else:
            check_elements(shape, self.limits, node=c.node, op=c.kind, what=f"its output {tensor!r}")

    def declare(self, i: int) -> str:
        """Create the IR tensor of TFLite tensor ``i`` (checked against the limits) and mark it live."""
        name = self.names[i]
        shape = self.ir_shape(i)
        self._check_elements(shape, name)
        self.tensors[name] = Tensor(name, shape, self.dtype(i))
        self.live.add(i)
        return name

    def fresh(self, base: str, shape: Sequence[int], dtype: str) -> str:
        """A new intermediate IR tensor whose name clashes with no TFLite tensor."""
        taken = set(self.names)
        name, k = base, 1
        while name in self.tensors or name in taken:
            name, k = f"{base}_{k}", k + 1
        self._check_elements(shape, name)
        self.tensors[name] = Tensor(name, tuple(shape), dtype)
        return name

    def x(self, c: OpContext, i: int, what: str = "input") -> str:
        """IR name of an activation input, or a GraphError if it is a constant or absent."""
        if not self.is_live(i):
            raise c.fail(f"its {what} is a constant; only computed tensors are supported there")
        return self.names[self.resolve(i)]

    def const(self, c: OpContext, i: int, what: str) -> list[int]:
        """Shape of a constant input (filters, weights), or a GraphError."""
        if i < 0:
            raise c.fail(f"the {what} is missing")
        if self.is_live(i):
            raise c.fail(f"the {what} is computed at run time; only constant {what}s are supported")
        return self.raw_shape(i)

    def const_ints(self, i: int) -> list[int] | None:
        """Values of a small int32/int64 constant, or None when its buffer is empty."""
        if i < 0 or self.is_live(i):
            return None
        t = self.raw.tensors[i]
        data = self.raw.buffers[t.buffer] if t.buffer < len(self.raw.buffers) else None
        fmt = {2: "i", 4: "q"}.get(t.type)
        if data is None or fmt is None:
            return None
        n = numel(self.raw_shape(i))
        if len(data) < n * struct.calcsize(fmt):
            raise GraphError(f"constant holds {len(data)} bytes, fewer than its shape needs", node=self.names[i])
        return list(struct.unpack_from(f"<{n}{fmt}", data))

    def const_float(self, i: int) -> float | None:
        """Value of a float32 scalar constant (or of a float16 one behind a DEQUANTIZE), or None."""
        i = self.dequantized.get(i, i)
        t = self.raw.tensors[i]
        data = self.raw.buffers[t.buffer] if t.buffer < len(self.raw.buffers) else None
        fmt = {0: "<f", 1: "<e"}.get(t.type)
        if fmt is None or data is None or len(data) < struct.calcsize(fmt) or numel(self.raw_shape(i)) != 1:
            return None
        return float(struct.unpack_from(fmt, data)[0])

    # -- operators ---------------------------------------------------------------------------

    def emit(self, op_type: str, inputs: list[str], outputs: list[str], attrs: dict[str, Any], name: str) -> None:
        """Append an IR operator with a name no other operator has."""
        base, k = name, 1
        while name in self.op_names:
            name, k = f"{base}_{k}", k + 1
        self.op_names.add(name)
        self.ops.append(Operator(name, op_type, inputs, outputs, attrs))

    def emit_act(self, c: OpContext, op_type: str, inputs: list[str], attrs: dict[str, Any], fused: int) -> None:
        """Emit an operator writing the TFLite output, with its fused activation split off."""
        out = c.op.outputs[0]
        if fused == 0:
            self.emit(op_type, inputs, [self.declare(out)], attrs, c.node)
            return
        if fused not in _FUSED:
            raise c.fail(f"fused activation {fused} (SIGN_BIT or unknown) has no IR equivalent")
        act_type, act_attrs = _FUSED[fused]
        final = self.declare(out)
        pre = self.fresh(f"{final}/pre_act", self.tensors[final].shape, self.tensors[final].dtype)
        self.emit(op_type, inputs, [pre], attrs, c.node)
        self.emit(act_type, [pre], [final], dict(act_attrs), f"{c.node}/act")

    def options(self, c: OpContext, expected: str, required: bool = False) -> dict[str, Any]:
        """The operator's options, checked to be of the type its opcode needs."""
        if c.op.options_name is None:
            if required:
                raise c.fail(f"it has no {expected}")
            return {}
        if c.op.options_name != expected:
            raise c.fail(f"it carries {c.op.options_name} where {expected} belong")
        return c.op.options

    def run(self) -> Graph:
        """Convert every operator and return the checked graph."""
        if not self.raw.ops:
            raise GraphError("subgraph 0 has no operators; there is nothing to profile")
        if not self.raw.inputs:
            raise GraphError("subgraph 0 has no inputs")
        check_operators(len(self.raw.ops), self.limits)
        for i in self.raw.inputs:
            self.declare(i)
        for op in self.raw.ops:
            self.convert(op)
        outputs = []
        for i in self.raw.outputs:
            if not self.is_live(i):
                raise GraphError("graph output is a constant, not computed from the inputs", node=self.names[i])
            outputs.append(self.names[self.resolve(i)])
        if not self.ops:
            raise GraphError("no operators are left once QUANTIZE / DEQUANTIZE and constant subexpressions are dropped")
        inputs = list(dict.fromkeys(self.names[i] for i in self.raw.inputs))
        graph = Graph(self.graph_name, self.tensors, inputs, list(dict.fromkeys(outputs)), self.ops).check()
        return check_graph(graph, self.limits)

    def convert(self, op: RawOp) -> None:
        """Convert one TFLite operator (or drop it, for quantization and constant folding)."""
        kind = op.custom if op.code == CUSTOM and op.custom is not None else _op_name(op.code)
        node = self.names[op.outputs[0]] if op.outputs else f"operator_{op.index}"
        c = self.current = OpContext(op, kind, node)
        handler = None if op.code == CUSTOM else HANDLERS.get(kind)
        if not op.outputs:
            raise c.fail("it has no outputs")
        if not any(self.is_live(i) for i in op.inputs):
            # A constant subexpression: its outputs stay constants. A DEQUANTIZE of float16
            # weights is remembered, so a scalar behind one still reads as a value.
            if kind == "DEQUANTIZE" and len(op.inputs) == 1 and op.inputs[0] >= 0:
                self.dequantized[op.outputs[0]] = op.inputs[0]
            return
        for i in op.outputs:
            if i in self.live:
                raise c.fail(f"it writes tensor {self.names[i]!r}, which is already written")
        if handler is None:
            self.emit_opaque(c)
            return
        handler(self, c)

    def emit_opaque(self, c: OpContext) -> None:
        """Keep an operator the IR has no equivalent for (a builtin without a handler, a custom
        operator) as an ``opaque`` one: LiteRT runs the file as uploaded, so the model can still be
        profiled on a phone; only a backend that executes the IR itself refuses it (at submission)."""
        inputs = [self.names[self.resolve(i)] for i in c.op.inputs if self.is_live(i)]
        outputs = [self.declare(i) for i in c.op.outputs if i >= 0]
        attrs = {
            "op": c.kind,
            "custom": c.op.code == CUSTOM,
            "output_shapes": [list(self.tensors[t].shape) for t in outputs],
            "output_dtypes": [self.tensors[t].dtype for t in outputs],
        }
        self.emit(OPAQUE, inputs, outputs, attrs, c.node)
