"""Read a TFLite flatbuffer into plain Python records, checking every offset on the way.

The generated ``tflite`` readers trust every offset in the file, so this module reads through a
bounds-checked flatbuffers table and turns any inconsistency into a ``GraphError``. Only subgraph
0 (the model's main function) is read.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import struct
from dataclasses import dataclass
from typing import Any

from flatbuffers import encode, packer
from flatbuffers import number_types as N
from flatbuffers.table import Table

from devicelab.graph.errors import GraphError

IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3
MAX_RANK = 8
# Constant buffers up to this size are decoded eagerly: axes, paddings, perms and scalars are
# tiny, while filters can be megabytes and are never needed for their values.
SMALL_BUFFER_BYTES = 1024

# TensorType enum values -> IR dtype names.
DTYPES = {0: "float32", 1: "float16", 2: "int32", 3: "uint8", 4: "int64", 9: "int8"}
TYPE_NAMES = {
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


CUSTOM = 32  # BuiltinOperator.CUSTOM


class _Corrupt(Exception):
    """The flatbuffer points outside itself; turned into a ``GraphError``."""


def _within(pos: int, size: int, end: int, what: str) -> None:
    if pos < 0 or size < 0 or pos + size > end:
        raise _Corrupt(f"{what} at byte {pos} (+{size}) lies outside the {end}-byte file")


class _CheckedTable(Table):  # type: ignore[misc]  # flatbuffers ships no types
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
        o: int = super().Offset(vtableOffset)
        if o and o >= self._size:
            raise _Corrupt(f"a field of the table at byte {self.Pos} lies outside the table")
        return o

    def Get(self, flags: Any, off: int) -> Any:  # noqa: N802
        _within(off, flags.bytewidth, len(self.Bytes), "a value")
        return super().Get(flags, off)

    def Indirect(self, off: int) -> int:  # noqa: N802
        _within(off, 4, len(self.Bytes), "an offset")
        target: int = super().Indirect(off)
        _within(target, 4, len(self.Bytes), "an object")
        return target

    def String(self, off: int) -> bytes:  # noqa: N802
        start = self.Indirect(off)
        _within(start + 4, self.Get(N.UOffsetTFlags, start), len(self.Bytes), "a string")
        text: bytes = super().String(off)
        return text

    def VectorLen(self, off: int) -> int:  # noqa: N802
        start = self.Indirect(off + self.Pos)
        length: int = self.Get(N.UOffsetTFlags, start)
        _within(start + 4, length, len(self.Bytes), "a vector")  # at least one byte per element
        return length

    def Vector(self, off: int) -> int:  # noqa: N802
        self.VectorLen(off)
        start: int = super().Vector(off)
        return start

    def Union(self, t2: Table, off: int) -> None:  # noqa: N802
        self.Indirect(off + self.Pos)
        super().Union(t2, off)


@dataclass
class RawTensor:
    """One tensor of subgraph 0, as the file declares it (NHWC shapes)."""

    name: str
    shape: list[int]
    signature: list[int] | None
    type: int
    buffer: int


@dataclass
class RawOp:
    """One operator of subgraph 0, with its decoded builtin options."""

    index: int
    code: int
    custom: str | None
    inputs: list[int]
    outputs: list[int]
    options_name: str | None
    options: dict[str, Any]


@dataclass
class RawModel:
    """The parts of a .tflite file the importer needs."""

    tensors: list[RawTensor]
    ops: list[RawOp]
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

    def model(self) -> RawModel:
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
        return RawModel(tensors, ops, inputs, outputs, buffers, self._string(sg.Name()))

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

    def _tensors(self, sg: Any) -> list[RawTensor]:
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
            out.append(RawTensor(name, self._ints(t, "Shape"), signature, int(t.Type()), int(t.Buffer())))
        return out

    def _operators(self, sg: Any, codes: list[tuple[int, str | None]], ntensors: int) -> list[RawOp]:
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
            out.append(RawOp(j, code, custom, inputs, outputs, name, options))
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


def decode(data: bytes) -> RawModel:
    """The records of a .tflite file's subgraph 0, or a ``GraphError`` saying what is wrong."""
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
