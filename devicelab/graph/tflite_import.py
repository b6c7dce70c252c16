"""Read a TFLite flatbuffer (.tflite) into the graph IR.

Only subgraph 0 (the model's main function) is read. What the reader does with TFLite's ways:

* **Layout.** TFLite activations are NHWC; the IR is NCHW. Every 4-D activation shape becomes
  ``[N, C, H, W]``, and every axis attribute on a 4-D tensor (concat, split, pad, mean, softmax,
  transpose) is mapped with it (NHWC axis 1, 2, 3 -> NCHW axis 2, 3, 1). Tensors of other ranks
  keep their shape. Weights keep their TFLite layout: they are only read for their sizes.
* **Reshape.** A RESHAPE / SQUEEZE / EXPAND_DIMS becomes an IR ``reshape`` to the output tensor's
  shape after the rule above, so the element count is kept but, when a 4-D tensor is involved, not
  the element *order* (TFLite flattens H, W, C; the NCHW reshape flattens C, H, W). The IR carries
  no values, shapes and costs are the same, and adding the transposes a value-exact conversion needs
  would invent work that the device never does. The common classifier case, ``[1, 1, 1, C] ->
  [1, C]``, is exact either way.
* **Fused activations.** ``fused_activation_function`` becomes a separate IR operator named
  ``<op>/act`` that writes the TFLite output tensor; the operator itself writes ``<op>/pre_act``.
* **Names.** TFLite operators have no names, so an operator is named after its first output tensor,
  as TFLite's benchmark_model does. Empty or repeated tensor names get a ``_N`` suffix.
* **Weights and constants.** A tensor that is neither a subgraph input nor written by a live
  operator is a constant, whether or not its buffer holds data ("shape only" files work). Filters
  and biases become attributes (``out_channels``, ``kernel``, ``bias``...), a constant operand of
  ADD / SUB / MUL / DIV becomes ``const_shape`` (and ``const_value`` for a float scalar whose data is
  present). An operator that reads only constants (DEQUANTIZE of fp16 weights, say) is a constant
  subexpression: it is dropped and its output is a constant too.
* **Quantization.** QUANTIZE and DEQUANTIZE of activations are dropped: their output is the same
  tensor as their input. Tensors keep their own dtype, so a fully-quantized model shows ``int8``
  (or ``uint8``) activations.
* **Small constants that drive shapes** (MEAN axes, PAD paddings, SPLIT axis, TRANSPOSE perm) are
  read from their buffers; when a shape-only file leaves them empty they are inferred from the
  input and output shapes (for PAD, the padding is then split evenly with the odd one at the end).
  SPLIT sizes, RESHAPE targets and RESIZE sizes always come from the output tensors' shapes.
* **Dynamic shapes.** A -1 in the batch dimension (shape or shape_signature) reads as 1; a -1
  anywhere else is refused.
* **Not modelled.** Softmax ``beta``, resize ``half_pixel_centers``, quantization parameters.

Corrupt files: the generated ``tflite`` readers trust every offset in the file, so this module
reads through a bounds-checked flatbuffers table and turns any inconsistency into a ``GraphError``.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from flatbuffers import encode, packer
from flatbuffers import number_types as N
from flatbuffers.table import Table

from devicelab.graph.builder import conv_pads
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph, Operator, Tensor
from devicelab.graph.ops import numel

IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
MAX_RANK = 8
# Constant buffers up to this size are decoded eagerly: axes, paddings, perms and scalars are
# tiny, while filters can be megabytes and are never needed for their values.
SMALL_BUFFER_BYTES = 1024

_NHWC_TO_NCHW_AXIS = (0, 2, 3, 1)
_NCHW_FROM_NHWC = (0, 3, 1, 2)  # IR axis j holds NHWC axis _NCHW_FROM_NHWC[j]

# TensorType enum values -> IR dtype names.
_DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 9: "int8"}
_TYPE_NAMES = {
    0: "FLOAT32",
    1: "FLOAT16",
    2: "INT32",
    3: "UINT8",
    4: "INT64",
    5: "STRING",
    6: "BOOL",
    7: "INT16",
    8: "COMPLEX64",
    9: "INT8",
    10: "FLOAT64",
    11: "COMPLEX128",
    12: "UINT64",
    13: "RESOURCE",
    14: "VARIANT",
    15: "UINT32",
    16: "UINT16",
    17: "INT4",
    18: "BFLOAT16",
}

# ActivationFunctionType -> (IR type, attrs); SIGN_BIT (5) has no IR equivalent.
_FUSED = {1: ("relu", {}), 2: ("clip", {"min": -1.0, "max": 1.0}), 3: ("relu6", {}), 4: ("tanh", {})}

CUSTOM = 32  # BuiltinOperator.CUSTOM


# =============================================================================================
# Bounds-checked flatbuffer reading


class _Corrupt(Exception):
    """The flatbuffer points outside itself; turned into a ``GraphError``."""


def _within(pos: int, size: int, end: int, what: str) -> None:
    if pos < 0 or size < 0 or pos + size > end:
        raise _Corrupt(f"{what} at byte {pos} (+{size}) lies outside the {end}-byte file")


class _CheckedTable(Table):
    """A flatbuffers ``Table`` that checks every position it reads against the buffer's end.

    The generated readers call ``Offset``, ``Get``, ``Indirect``, ``String``, ``Vector``,
    ``VectorLen`` and ``Union`` on their table; checking here catches negative positions (which
    Python would silently wrap) and reads past the end, before any value is used.
    """

    __slots__ = ("_size",)

    def __init__(self, buf: bytes, pos: int) -> None:
        super().__init__(buf, pos)
        end = len(buf)
        _within(pos, 4, end, "a table")
        vtable = pos - encode.Get(packer.soffset, buf, pos)
        _within(vtable, 4, end, "a vtable")
        vt_size = encode.Get(packer.voffset, buf, vtable)
        obj_size = encode.Get(packer.voffset, buf, vtable + 2)
        if vt_size < 4 or vt_size % 2:
            raise _Corrupt(f"the vtable at byte {vtable} has an impossible size {vt_size}")
        _within(vtable, vt_size, end, "a vtable")
        if obj_size < 4:
            raise _Corrupt(f"the table at byte {pos} has an impossible size {obj_size}")
        _within(pos, obj_size, end, "a table")
        self._size = obj_size

    def Offset(self, vtableOffset: int) -> int:  # noqa: N802 - flatbuffers' API name
        o = super().Offset(vtableOffset)
        if o and o >= self._size:
            raise _Corrupt(f"a field of the table at byte {self.Pos} lies outside the table")
        return o

    def Get(self, flags: Any, off: int) -> Any:  # noqa: N802
        _within(off, flags.bytewidth, len(self.Bytes), "a value")
        return super().Get(flags, off)

    def Indirect(self, off: int) -> int:  # noqa: N802
        _within(off, 4, len(self.Bytes), "an offset")
        target = super().Indirect(off)
        _within(target, 4, len(self.Bytes), "an object")
        return target

    def String(self, off: int) -> bytes:  # noqa: N802
        start = self.Indirect(off)
        _within(start + 4, self.Get(N.UOffsetTFlags, start), len(self.Bytes), "a string")
        return super().String(off)

    def VectorLen(self, off: int) -> int:  # noqa: N802
        start = self.Indirect(off + self.Pos)
        length = self.Get(N.UOffsetTFlags, start)
        _within(start + 4, length, len(self.Bytes), "a vector")  # at least one byte per element
        return length

    def Vector(self, off: int) -> int:  # noqa: N802
        self.VectorLen(off)
        return super().Vector(off)

    def Union(self, t2: Table, off: int) -> None:  # noqa: N802
        self.Indirect(off + self.Pos)
        super().Union(t2, off)


@dataclass
class _RawTensor:
    name: str
    shape: list[int]
    signature: list[int] | None
    type: int
    buffer: int


@dataclass
class _RawOp:
    index: int
    code: int
    custom: str | None
    inputs: list[int]
    outputs: list[int]
    options_name: str | None
    options: dict[str, Any]


@dataclass
class _RawModel:
    tensors: list[_RawTensor]
    ops: list[_RawOp]
    inputs: list[int]
    outputs: list[int]
    buffers: list[bytes | None]  # data of small buffers; None when empty or too large to keep
    subgraph_name: str


def _option_names() -> dict[int, str]:
    from tflite.BuiltinOptions import BuiltinOptions

    return {v: k for k, v in vars(BuiltinOptions).items() if not k.startswith("_") and isinstance(v, int)}


@functools.cache
def _option_fields(cls: type) -> tuple[str, ...]:
    """Zero-argument field readers of a generated options class (scalars and ``...AsNumpy``)."""
    out = []
    for attr, fn in vars(cls).items():
        if not attr[:1].isupper() or attr == "Init" or attr.startswith("GetRootAs"):
            continue
        if attr.endswith(("BufferHasIdentifier", "Length", "IsNone")) or not callable(fn):
            continue
        if len(inspect.signature(fn).parameters) == 1:
            out.append(attr)
    return tuple(out)


class _Reader:
    """Decodes the parts of a .tflite file the importer needs into plain Python values."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.where = "the model header"
        # Every vector element read is paid from this budget, so a crafted file whose tables all
        # share one huge vector cannot make decoding quadratic in the file size.
        self.budget = 2 * len(data) + 4096
        self.option_names = _option_names()

    def _spend(self, n: int) -> None:
        self.budget -= n
        if self.budget < 0:
            raise _Corrupt("the file's vectors overlap far more than a real model's do")

    def _checked(self, obj: Any) -> Any:
        if obj is None:
            raise _Corrupt("a required table is missing")
        obj._tab = _CheckedTable(obj._tab.Bytes, obj._tab.Pos)
        return obj

    def _count(self, n: int, what: str) -> int:
        # Vectors of tables and of int32 hold 4 bytes per element.
        if n < 0 or 4 * n > len(self.data):
            raise _Corrupt(f"{what} claims {n} entries, more than the file can hold")
        self._spend(n)
        return n

    def _ints(self, obj: Any, field: str) -> list[int]:
        n = self._count(getattr(obj, f"{field}Length")(), field)
        if n == 0:
            return []
        return [int(v) for v in getattr(obj, f"{field}AsNumpy")()]

    def _string(self, raw: bytes | None) -> str:
        return raw.decode("utf-8", errors="replace") if raw else ""

    def model(self) -> _RawModel:
        from tflite.Model import Model

        model = self._checked(Model.GetRootAs(self.data, 0))
        version = model.Version()
        if version != SCHEMA_VERSION:
            raise GraphError(f"TFLite schema version {version} is not supported; expected {SCHEMA_VERSION}")
        self.where = "the subgraph list"
        if self._count(model.SubgraphsLength(), "subgraphs") == 0:
            raise GraphError("the model has no subgraphs")
        codes = self._operator_codes(model)
        buffers = self._buffers(model)
        self.where = "subgraph 0"
        sg = self._checked(model.Subgraphs(0))
        tensors = self._tensors(sg)
        inputs, outputs = self._ints(sg, "Inputs"), self._ints(sg, "Outputs")
        for what, idx in itertools.chain((("input", i) for i in inputs), (("output", i) for i in outputs)):
            if not 0 <= idx < len(tensors):
                raise GraphError(f"subgraph 0 names tensor {idx} as an {what}, but it has {len(tensors)} tensors")
        ops = self._operators(sg, codes, len(tensors))
        for t in tensors:
            if not 0 <= t.buffer < max(len(buffers), 1):
                raise GraphError(
                    f"tensor {t.name!r} uses buffer {t.buffer}, but the model has {len(buffers)}", node=t.name
                )
        return _RawModel(tensors, ops, inputs, outputs, buffers, self._string(sg.Name()))

    def _operator_codes(self, model: Any) -> list[tuple[int, str | None]]:
        codes = []
        for j in range(self._count(model.OperatorCodesLength(), "operator codes")):
            self.where = f"operator code {j}"
            oc = self._checked(model.OperatorCodes(j))
            # Files written before schema 3a hold the code only in the int8 deprecated field;
            # newer ones also (or only) in the int32 builtin_code, with 127 as a placeholder in
            # the old field for codes above it. TFLite reads max() of the two, and so do we. The
            # generated BuiltinCode() falls back to the old field whenever the new one is below
            # 127, which is wrong for a file that filled only the new field, so read it raw.
            slot = oc._tab.Offset(10)
            builtin = oc._tab.Get(N.Int32Flags, oc._tab.Pos + slot) if slot else 0
            custom = oc.CustomCode()
            codes.append(
                (max(int(oc.DeprecatedBuiltinCode()), int(builtin)), None if custom is None else self._string(custom))
            )
        return codes

    def _buffers(self, model: Any) -> list[bytes | None]:
        out: list[bytes | None] = []
        for j in range(self._count(model.BuffersLength(), "buffers")):
            self.where = f"buffer {j}"
            buf = self._checked(model.Buffers(j))
            n = buf.DataLength()
            data: bytes | None = None
            if 0 < n <= SMALL_BUFFER_BYTES:
                self._spend(n)
                data = bytes(buf.DataAsNumpy())
            elif n == 0:
                # Models over 2 GiB keep buffer data after the flatbuffer, addressed by offset/size.
                offset, size = buf.Offset(), buf.Size()
                if offset > 1 and 0 < size <= SMALL_BUFFER_BYTES and offset + size <= len(self.data):
                    data = self.data[offset : offset + size]
            out.append(data)
        return out

    def _tensors(self, sg: Any) -> list[_RawTensor]:
        out = []
        for j in range(self._count(sg.TensorsLength(), "tensors")):
            self.where = f"tensor {j} of subgraph 0"
            t = self._checked(sg.Tensors(j))
            name = self._string(t.Name())
            for field in ("Shape", "ShapeSignature"):
                rank = getattr(t, f"{field}Length")()
                if rank > MAX_RANK:
                    raise GraphError(
                        f"tensor {name or j!r} has rank {rank}; at most {MAX_RANK} is supported", node=name or None
                    )
            signature = self._ints(t, "ShapeSignature") if t.ShapeSignatureLength() else None
            out.append(_RawTensor(name, self._ints(t, "Shape"), signature, int(t.Type()), int(t.Buffer())))
        return out

    def _operators(self, sg: Any, codes: list[tuple[int, str | None]], ntensors: int) -> list[_RawOp]:
        out = []
        for j in range(self._count(sg.OperatorsLength(), "operators")):
            self.where = f"operator #{j} of subgraph 0"
            op = self._checked(sg.Operators(j))
            index = int(op.OpcodeIndex())
            if not 0 <= index < len(codes):
                raise GraphError(f"operator #{j} uses operator code {index}, but the model has {len(codes)}")
            inputs, outputs = self._ints(op, "Inputs"), self._ints(op, "Outputs")
            for t in inputs + outputs:
                if not -1 <= t < ntensors:
                    raise GraphError(f"operator #{j} refers to tensor {t}, but subgraph 0 has {ntensors} tensors")
            if any(t < 0 for t in outputs):
                raise GraphError(f"operator #{j} has an absent (-1) output tensor")
            name, options = self._options(op)
            code, custom = codes[index]
            out.append(_RawOp(j, code, custom, inputs, outputs, name, options))
        return out

    def _options(self, op: Any) -> tuple[str | None, dict[str, Any]]:
        kind = int(op.BuiltinOptionsType())
        if kind == 0:
            return None, {}
        name = self.option_names.get(kind)
        table = op.BuiltinOptions()
        if name is None or table is None:
            return f"options type {kind}", {}
        cls = getattr(importlib.import_module(f"tflite.{name}"), name)
        obj = cls()
        obj.Init(table.Bytes, table.Pos)
        self._checked(obj)
        values: dict[str, Any] = {}
        for attr in _option_fields(cls):
            if attr.endswith("AsNumpy"):
                values[attr[:-7]] = self._ints(obj, attr[:-7])
            else:
                value = getattr(obj, attr)()
                if isinstance(value, (int, float, bool)):
                    values[attr] = value
        return name, values


def _decode(data: bytes) -> _RawModel:
    if not data:
        raise GraphError("the file is empty")
    if len(data) < 8:
        raise GraphError(f"the file is only {len(data)} bytes; a TFLite flatbuffer has at least 8")
    if data[4:8] != IDENTIFIER:
        raise GraphError(
            f"not a TFLite model: the file identifier (bytes 4-7) is {data[4:8]!r}, expected {IDENTIFIER!r}"
        )
    reader = _Reader(data)
    try:
        return reader.model()
    except GraphError:
        raise
    except _Corrupt as exc:
        raise GraphError(f"corrupt or truncated TFLite file while reading {reader.where}: {exc}") from None
    except (struct.error, IndexError, ValueError, TypeError, OverflowError) as exc:
        # The generated readers and numpy raise these on out-of-range reads the checks above
        # did not foresee; the detail is theirs, the message is ours.
        raise GraphError(
            f"corrupt or truncated TFLite file while reading {reader.where} ({type(exc).__name__}: {exc})"
        ) from None


# =============================================================================================
# Conversion to the IR


def _op_name(code: int) -> str:
    from tflite.utils import BUILTIN_OPCODE2NAME

    return BUILTIN_OPCODE2NAME.get(code, f"BUILTIN_{code}")


def _to_nchw(shape: Sequence[int]) -> tuple[int, ...]:
    if len(shape) == 4:
        n, h, w, c = shape
        return (n, c, h, w)
    return tuple(shape)


@dataclass
class _Ctx:
    """The TFLite operator being converted."""

    op: _RawOp
    kind: str  # TFLite op name, e.g. CONV_2D
    node: str  # IR name of the operator (its first output tensor's name)

    def input(self, k: int) -> int:
        """Index of input ``k`` (or -1 when absent)."""
        return self.op.inputs[k] if k < len(self.op.inputs) else -1

    def fail(self, reason: str) -> GraphError:
        """A GraphError naming this operator."""
        return GraphError(f"{reason} (operator #{self.op.index})", node=self.node, op=self.kind)


class _Importer:
    """Walks subgraph 0 in execution order and emits IR tensors and operators."""

    def __init__(self, raw: _RawModel, name: str | None) -> None:
        self.raw = raw
        self.graph_name = name or (raw.subgraph_name if raw.subgraph_name not in ("", "main") else "tflite_model")
        self.names = self._unique_names()
        self.live: set[int] = set(raw.inputs)
        self.alias: dict[int, int] = {}
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
        return _to_nchw(self.raw_shape(i))

    def dtype(self, i: int) -> str:
        """The IR dtype of a tensor."""
        code = self.raw.tensors[i].type
        if code not in _DTYPES:
            raise GraphError(
                f"tensor type {_TYPE_NAMES.get(code, code)} has no IR equivalent "
                f"(supported: {sorted(_DTYPES.values())})",
                node=self.names[i],
            )
        return _DTYPES[code]

    def resolve(self, i: int) -> int:
        """Follow dropped QUANTIZE / DEQUANTIZE operators back to the tensor the IR keeps."""
        while i in self.alias:
            i = self.alias[i]
        return i

    def is_live(self, i: int) -> bool:
        """Whether a tensor is computed at run time (as opposed to a constant)."""
        return i >= 0 and i in self.live

    def declare(self, i: int) -> str:
        """Create the IR tensor of TFLite tensor ``i`` and mark it live."""
        name = self.names[i]
        self.tensors[name] = Tensor(name, self.ir_shape(i), self.dtype(i))
        self.live.add(i)
        return name

    def fresh(self, base: str, shape: Sequence[int], dtype: str) -> str:
        """A new intermediate IR tensor whose name clashes with no TFLite tensor."""
        taken = set(self.names)
        name, k = base, 1
        while name in self.tensors or name in taken:
            name, k = f"{base}_{k}", k + 1
        self.tensors[name] = Tensor(name, tuple(shape), dtype)
        return name

    def x(self, c: _Ctx, i: int, what: str = "input") -> str:
        """IR name of an activation input, or a GraphError if it is a constant or absent."""
        if not self.is_live(i):
            raise c.fail(f"its {what} is a constant; only computed tensors are supported there")
        return self.names[self.resolve(i)]

    def const(self, c: _Ctx, i: int, what: str) -> list[int]:
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
        """Value of a float32 scalar constant, or None."""
        t = self.raw.tensors[i]
        data = self.raw.buffers[t.buffer] if t.buffer < len(self.raw.buffers) else None
        if t.type != 0 or data is None or len(data) < 4 or numel(self.raw_shape(i)) != 1:
            return None
        return float(struct.unpack_from("<f", data)[0])

    # -- operators ---------------------------------------------------------------------------

    def emit(self, op_type: str, inputs: list[str], outputs: list[str], attrs: dict[str, Any], name: str) -> None:
        """Append an IR operator with a name no other operator has."""
        base, k = name, 1
        while name in self.op_names:
            name, k = f"{base}_{k}", k + 1
        self.op_names.add(name)
        self.ops.append(Operator(name, op_type, inputs, outputs, attrs))

    def emit_act(self, c: _Ctx, op_type: str, inputs: list[str], attrs: dict[str, Any], fused: int) -> None:
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

    def options(self, c: _Ctx, expected: str, required: bool = False) -> dict[str, Any]:
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
        return Graph(self.graph_name, self.tensors, inputs, list(dict.fromkeys(outputs)), self.ops).check()

    def convert(self, op: _RawOp) -> None:
        """Convert one TFLite operator (or drop it, for quantization and constant folding)."""
        kind = op.custom if op.code == CUSTOM and op.custom is not None else _op_name(op.code)
        node = self.names[op.outputs[0]] if op.outputs else f"operator_{op.index}"
        c = _Ctx(op, kind, node)
        if op.code == CUSTOM:
            raise c.fail(f"custom operator {kind!r} is not supported")
        handler = _HANDLERS.get(kind)
        if handler is None:
            raise c.fail(f"TFLite operator {kind} has no equivalent in the graph IR")
        if not op.outputs:
            raise c.fail("it has no outputs")
        if not any(self.is_live(i) for i in op.inputs):
            return  # constant subexpression: its outputs stay constants
        for i in op.outputs:
            if i in self.live:
                raise c.fail(f"it writes tensor {self.names[i]!r}, which is already written")
        handler(self, c)


# =============================================================================================
# Operator handlers: one function per TFLite operator family.


def _axis(c: _Ctx, axis: int, rank: int) -> int:
    """An NHWC axis of a tensor of this rank, as an IR axis."""
    if not -rank <= axis < rank:
        raise c.fail(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    return _NHWC_TO_NCHW_AXIS[axis] if rank == 4 else axis


def _window(
    c: _Ctx, o: dict[str, Any], size: Sequence[int], kernel: Sequence[int], dilation: Sequence[int] = (1, 1)
) -> dict[str, Any]:
    stride = [int(o.get("StrideH", 0)), int(o.get("StrideW", 0))]
    if min(stride) < 1 or min(dilation) < 1:
        raise c.fail(f"stride {stride} and dilation {list(dilation)} must be >= 1")
    padding = o.get("Padding", 0)
    if padding not in (0, 1):
        raise c.fail(f"padding {padding} is neither SAME nor VALID")
    rule = "same_tf" if padding == 0 else "valid"
    pads = conv_pads(
        (size[0], size[1]), (kernel[0], kernel[1]), (stride[0], stride[1]), (dilation[0], dilation[1]), rule
    )
    return {"kernel": list(kernel), "stride": stride, "pads": pads}


def _rank4(c: _Ctx, shape: Sequence[int], what: str) -> None:
    if len(shape) != 4:
        raise c.fail(f"the {what} must be 4-D, got shape {list(shape)}")


def _conv2d(im: _Importer, c: _Ctx) -> None:
    o = im.options(c, "Conv2DOptions", required=True)
    x = im.x(c, c.input(0))
    xs = im.raw_shape(c.input(0))
    ws = im.const(c, c.input(1), "filter")
    _rank4(c, xs, "input")
    _rank4(c, ws, "filter")
    cout, kh, kw, cin_f = ws
    if xs[3] % cin_f:
        raise c.fail(f"input channels {xs[3]} are not a multiple of the filter's {cin_f}")
    dilation = [int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1))]
    attrs = _window(c, o, xs[1:3], [kh, kw], dilation)
    attrs.update(dilation=dilation, out_channels=cout, groups=xs[3] // cin_f, bias=c.input(2) >= 0)
    im.emit_act(c, "conv2d", [x], attrs, o.get("FusedActivationFunction", 0))


def _depthwise(im: _Importer, c: _Ctx) -> None:
    o = im.options(c, "DepthwiseConv2DOptions", required=True)
    x = im.x(c, c.input(0))
    xs = im.raw_shape(c.input(0))
    ws = im.const(c, c.input(1), "filter")
    _rank4(c, xs, "input")
    _rank4(c, ws, "filter")
    _, kh, kw, cout = ws
    # Some converters leave depth_multiplier at 0 or wrong; the filter's shape is the truth.
    if cout % xs[3]:
        raise c.fail(f"filter channels {cout} are not a multiple of input channels {xs[3]}")
    dilation = [int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1))]
    attrs = _window(c, o, xs[1:3], [kh, kw], dilation)
    attrs.update(dilation=dilation, multiplier=cout // xs[3], bias=c.input(2) >= 0)
    im.emit_act(c, "depthwise_conv2d", [x], attrs, o.get("FusedActivationFunction", 0))


def _fully_connected(im: _Importer, c: _Ctx) -> None:
    o = im.options(c, "FullyConnectedOptions")
    x = im.x(c, c.input(0))
    xs = im.raw_shape(c.input(0))
    ws = im.const(c, c.input(1), "weights")
    if len(ws) != 2:
        raise c.fail(f"the weights must be 2-D [out, in], got shape {ws}")
    out_features, in_features = ws
    keep = bool(o.get("KeepNumDims", False))
    if keep and len(xs) == 4:
        raise c.fail("keep_num_dims on a 4-D input is not supported (its last axis is C in NHWC, W in NCHW)")
    if not xs or (keep and xs[-1] != in_features):
        raise c.fail(f"input shape {xs} does not end in the weights' {in_features} features")
    if not keep and (len(xs) != 2 or xs[-1] != in_features):
        # TFLite flattens the input to [-1, in]; the IR's fully_connected works on the last axis.
        total = numel(xs)
        if total % in_features:
            raise c.fail(f"input shape {xs} cannot be flattened to rows of {in_features} features")
        flat = im.fresh(f"{c.node}/flatten", (total // in_features, in_features), im.tensors[x].dtype)
        im.emit("reshape", [x], [flat], {"shape": [total // in_features, in_features]}, f"{c.node}/flatten")
        x = flat
    attrs = {"out_features": out_features, "bias": c.input(2) >= 0}
    im.emit_act(c, "fully_connected", [x], attrs, o.get("FusedActivationFunction", 0))


def _pool(ir_type: str) -> Any:
    def handle(im: _Importer, c: _Ctx) -> None:
        o = im.options(c, "Pool2DOptions", required=True)
        x = im.x(c, c.input(0))
        xs = im.raw_shape(c.input(0))
        _rank4(c, xs, "input")
        kernel = [int(o.get("FilterHeight", 0)), int(o.get("FilterWidth", 0))]
        if min(kernel) < 1:
            raise c.fail(f"pooling window {kernel} must be >= 1")
        attrs = _window(c, o, xs[1:3], kernel)
        attrs["ceil_mode"] = False
        if ir_type == "avg_pool2d":
            attrs["count_include_pad"] = False  # TensorFlow's SAME average ignores the padding
        im.emit_act(c, ir_type, [x], attrs, o.get("FusedActivationFunction", 0))

    return handle


def _infer_reduced_axes(xs: list[int], ys: list[int], keepdims: bool) -> list[int]:
    if keepdims:
        axes = [a for a, (d, e) in enumerate(zip(xs, ys, strict=False)) if d != e]
        return axes or [a for a in range(1, len(xs)) if ys[a] == 1]
    kept, j = [], 0
    for a, d in enumerate(xs):  # greedy match of the kept dimensions, in order
        if j < len(ys) and ys[j] == d:
            kept.append(a)
            j += 1
    return [a for a in range(len(xs)) if a not in kept]


def _reduce(ir_type: str, global_type: str | None) -> Any:
    def handle(im: _Importer, c: _Ctx) -> None:
        o = im.options(c, "ReducerOptions")
        x = im.x(c, c.input(0))
        xs, ys = im.raw_shape(c.input(0)), im.raw_shape(c.op.outputs[0])
        keep = bool(o.get("KeepDims", False))
        axes = im.const_ints(c.input(1))
        if axes is None:
            axes = _infer_reduced_axes(xs, ys, keep)
        for a in axes:
            _axis(c, a, len(xs))
        nhwc = sorted({a % len(xs) for a in axes})
        if len(xs) == 4 and nhwc == [1, 2] and keep and global_type:
            im.emit(global_type, [x], [im.declare(c.op.outputs[0])], {}, c.node)
            return
        ir_axes = sorted(_axis(c, a, len(xs)) for a in nhwc)
        attrs = {"axes": ir_axes, "keepdims": keep}
        kept = [a for a in range(len(xs)) if a not in nhwc]
        natural = sorted(kept, key=lambda a: _NHWC_TO_NCHW_AXIS[a])
        if keep or len(xs) != 4 or natural == kept:
            im.emit(ir_type, [x], [im.declare(c.op.outputs[0])], attrs, c.node)
            return
        # Reducing H (or W) without keepdims leaves [N, C, W] in NCHW order but [N, W, C] in
        # TFLite's; a free reshape restores TFLite's shape so later axes keep their meaning.
        y = im.declare(c.op.outputs[0])
        pre = im.fresh(f"{y}/pre_layout", tuple(xs[a] for a in natural), im.dtype(c.op.outputs[0]))
        im.emit(ir_type, [x], [pre], attrs, c.node)
        im.emit("reshape", [pre], [y], {"shape": list(im.tensors[y].shape)}, f"{c.node}/layout")

    return handle


_BINARY_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}


def _binary(im: _Importer, c: _Ctx) -> None:
    o = im.options(c, _BINARY_OPTIONS[c.kind])
    if len(c.op.inputs) != 2 or min(c.op.inputs) < 0:
        raise c.fail(f"it needs two inputs, got {c.op.inputs}")
    a, b = c.op.inputs
    rank = len(im.raw_shape(c.op.outputs[0]))

    def nchw_broadcast(shape: list[int]) -> list[int]:
        # A lower-rank operand broadcasts against NHWC's trailing axes (C first): make that
        # explicit before the 4-D shape is turned into NCHW. Scalars broadcast as they are.
        if rank == 4 and 0 < len(shape) <= 4:
            return list(_to_nchw([1] * (4 - len(shape)) + shape))
        return shape

    def operand(i: int, k: int) -> str:
        name = im.x(c, i)
        shape = im.raw_shape(i)
        target = nchw_broadcast(shape)
        if list(im.tensors[name].shape) == target:
            return name
        t = im.fresh(f"{c.node}/broadcast{k}", target, im.tensors[name].dtype)
        im.emit("reshape", [name], [t], {"shape": target}, f"{c.node}/broadcast{k}")
        return t

    attrs: dict[str, Any] = {}
    if im.is_live(a) and im.is_live(b):
        inputs = [operand(a, 0), operand(b, 1)]
    else:
        live, const = (a, b) if im.is_live(a) else (b, a)
        inputs = [operand(live, 0)]
        shape = im.raw_shape(const)
        attrs = {"const_shape": nchw_broadcast(shape), "const_first": const == a}
        value = im.const_float(const)
        if value is not None:
            attrs["const_value"] = value
    im.emit_act(c, c.kind.lower(), inputs, attrs, o.get("FusedActivationFunction", 0))


def _unary(ir_type: str, attrs_of: Any = None) -> Any:
    def handle(im: _Importer, c: _Ctx) -> None:
        x = im.x(c, c.input(0))
        attrs = attrs_of(im, c) if attrs_of else {}
        im.emit(ir_type, [x], [im.declare(c.op.outputs[0])], attrs, c.node)

    return handle


def _leaky_alpha(im: _Importer, c: _Ctx) -> dict[str, Any]:
    return {"alpha": float(im.options(c, "LeakyReluOptions").get("Alpha", 0.0))}


def _softmax_axis(im: _Importer, c: _Ctx) -> dict[str, Any]:
    rank = len(im.raw_shape(c.input(0)))
    return {"axis": _axis(c, -1, rank)}  # TFLite's softmax always runs over the last (NHWC) axis


def _dropped(im: _Importer, c: _Ctx) -> None:
    """QUANTIZE / DEQUANTIZE: the output is the input, in another number format."""
    im.x(c, c.input(0))
    out = c.op.outputs[0]
    im.alias[out] = c.input(0)
    im.live.add(out)


def _reshape(im: _Importer, c: _Ctx) -> None:
    x = im.x(c, c.input(0))
    y = im.declare(c.op.outputs[0])
    if numel(im.tensors[x].shape) != numel(im.tensors[y].shape):
        raise c.fail(f"cannot reshape {im.raw_shape(c.input(0))} to {im.raw_shape(c.op.outputs[0])}")
    im.emit("reshape", [x], [y], {"shape": list(im.tensors[y].shape)}, c.node)


def _concat(im: _Importer, c: _Ctx) -> None:
    o = im.options(c, "ConcatenationOptions")
    xs = [im.x(c, i, f"input {k}") for k, i in enumerate(c.op.inputs)]
    axis = _axis(c, int(o.get("Axis", 0)), len(im.raw_shape(c.op.outputs[0])))
    im.emit_act(c, "concat", xs, {"axis": axis}, o.get("FusedActivationFunction", 0))


def _split(im: _Importer, c: _Ctx) -> None:
    if c.kind == "SPLIT":
        im.options(c, "SplitOptions")
        data, axis_t = c.input(1), c.input(0)
    else:
        im.options(c, "SplitVOptions")
        data, axis_t = c.input(0), c.input(2)
    x = im.x(c, data)
    xs = im.raw_shape(data)
    outs = [im.raw_shape(o) for o in c.op.outputs]
    if any(len(s) != len(xs) for s in outs):
        raise c.fail(f"its outputs {outs} do not have the input's rank {len(xs)}")
    given = im.const_ints(axis_t)
    if given:
        ir_axis = _axis(c, given[0], len(xs))  # checks the range
        axis = given[0] % len(xs)
    else:
        # Shape-only file: the axis is the one whose size the split changes.
        differ = [a for a in range(len(xs)) if outs[0][a] != xs[a]]
        axis = differ[0] if differ else len(xs) - 1
        ir_axis = _axis(c, axis, len(xs))
    sizes = [s[axis] for s in outs]
    names = [im.declare(o) for o in c.op.outputs]
    im.emit("split", [x], names, {"axis": ir_axis, "sizes": sizes}, c.node)


def _pad(im: _Importer, c: _Ctx) -> None:
    x = im.x(c, c.input(0))
    xs, ys = im.raw_shape(c.input(0)), im.raw_shape(c.op.outputs[0])
    rank = len(xs)
    flat = im.const_ints(c.input(1))
    if flat is not None:
        if len(flat) != 2 * rank:
            raise c.fail(f"paddings hold {len(flat)} values; a rank-{rank} input needs {2 * rank}")
        pairs = [(flat[2 * a], flat[2 * a + 1]) for a in range(rank)]
    else:
        pairs = [((y - d) // 2, (y - d) - (y - d) // 2) for d, y in zip(xs, ys, strict=False)]
    order = _NCHW_FROM_NHWC if rank == 4 else tuple(range(rank))
    pads = [pairs[a][0] for a in order] + [pairs[a][1] for a in order]
    attrs: dict[str, Any] = {"pads": pads, "mode": "constant", "value": 0.0}
    if c.kind == "MIRROR_PAD":
        attrs["mode"] = "reflect"  # SYMMETRIC mirrors too, with the same cost
    elif c.kind == "PADV2" and c.input(2) >= 0:
        value = im.const_float(c.input(2))
        attrs["value"] = 0.0 if value is None else value
    im.emit("pad", [x], [im.declare(c.op.outputs[0])], attrs, c.node)


def _resize(mode: str, options: str) -> Any:
    def handle(im: _Importer, c: _Ctx) -> None:
        o = im.options(c, options)
        x = im.x(c, c.input(0))
        ys = im.raw_shape(c.op.outputs[0])
        _rank4(c, ys, "output")
        attrs = {"size": [ys[1], ys[2]], "mode": mode, "align_corners": bool(o.get("AlignCorners", False))}
        im.emit("resize", [x], [im.declare(c.op.outputs[0])], attrs, c.node)

    return handle


def _transpose(im: _Importer, c: _Ctx) -> None:
    x = im.x(c, c.input(0))
    xs, ys = im.raw_shape(c.input(0)), im.raw_shape(c.op.outputs[0])
    rank = len(xs)
    perm = im.const_ints(c.input(1))
    if perm is None:
        # Shape-only file: any permutation that maps the shapes has the same cost.
        perm = next((list(p) for p in itertools.permutations(range(rank)) if [xs[i] for i in p] == ys), None)
    if perm is None or sorted(perm) != list(range(rank)):
        raise c.fail(f"no permutation {perm} maps shape {xs} to {ys}")
    # out_nhwc[i] = in_nhwc[perm[i]]; with IR axis j of a 4-D tensor holding NHWC axis q[j],
    # out_ir[j] = in_ir[q^-1[perm[q[j]]]].
    q = _NCHW_FROM_NHWC if rank == 4 else tuple(range(rank))
    q_inv = [q.index(a) for a in range(rank)]
    ir_perm = [q_inv[perm[q[j]]] for j in range(rank)]
    im.emit("transpose", [x], [im.declare(c.op.outputs[0])], {"perm": ir_perm}, c.node)


_HANDLERS: dict[str, Any] = {
    "CONV_2D": _conv2d,
    "DEPTHWISE_CONV_2D": _depthwise,
    "FULLY_CONNECTED": _fully_connected,
    "MAX_POOL_2D": _pool("max_pool2d"),
    "AVERAGE_POOL_2D": _pool("avg_pool2d"),
    "MEAN": _reduce("reduce_mean", "global_avg_pool"),
    "REDUCE_MAX": _reduce("reduce_max", "global_max_pool"),
    "SUM": _reduce("reduce_sum", None),
    "ADD": _binary,
    "SUB": _binary,
    "MUL": _binary,
    "DIV": _binary,
    "RELU": _unary("relu"),
    "RELU6": _unary("relu6"),
    "RELU_N1_TO_1": _unary("clip", lambda im, c: {"min": -1.0, "max": 1.0}),
    "RELU_0_TO_1": _unary("clip", lambda im, c: {"min": 0.0, "max": 1.0}),
    "HARD_SWISH": _unary("hard_swish"),
    "LOGISTIC": _unary("sigmoid"),
    "TANH": _unary("tanh"),
    "GELU": _unary("gelu"),
    "ELU": _unary("elu"),
    "LEAKY_RELU": _unary("leaky_relu", _leaky_alpha),
    "SOFTMAX": _unary("softmax", _softmax_axis),
    "CONCATENATION": _concat,
    "SPLIT": _split,
    "SPLIT_V": _split,
    "PAD": _pad,
    "PADV2": _pad,
    "MIRROR_PAD": _pad,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "RESIZE_BILINEAR": _resize("linear", "ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": _resize("nearest", "ResizeNearestNeighborOptions"),
    "TRANSPOSE": _transpose,
    "QUANTIZE": _dropped,
    "DEQUANTIZE": _dropped,
}


def graph_from_tflite_bytes(data: bytes, name: str | None = None) -> Graph:
    """Parse a .tflite flatbuffer into a checked ``Graph`` (NCHW), or raise ``GraphError``."""
    raw = _decode(bytes(data))
    return _Importer(raw, name).run()
