"""Serialize the writer's plain records as a .tflite flatbuffer (schema version 3, "TFL3").

The layout is the one TFLite's converter writes: buffer 0 is the empty sentinel that every
activation tensor points at, each constant has a buffer of its own whose data starts on a
16-byte boundary (the schema's ``force_align: 16``; runtimes map weights in place), and each
operator code carries its number both in ``builtin_code`` and, capped at 127
(PLACEHOLDER_FOR_GREATER_OP_CODES), in ``deprecated_builtin_code``, so runtimes from before and
after schema 3a read it. One operator code exists per (builtin, version) pair.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import flatbuffers
import numpy as np

from devicelab.graph.errors import GraphError
from devicelab.graph.tflite.wire import IDENTIFIER, SCHEMA_VERSION

# TensorType enum values of the dtypes the writer produces.
TENSOR_TYPES = {"float32": 0, "float16": 1, "int32": 2}
DEPRECATED_CODE_LIMIT = 127  # BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES
BUFFER_ALIGNMENT = 16
# A flatbuffer addresses at most 2 GiB; larger models keep their weights outside it, which this
# writer does not do.
MAX_FLATBUFFER_BYTES = 2**31 - 1

Options = tuple[str, dict[str, Any]]  # (options table name, {field name: value})


@dataclass
class TensorRecord:
    """One tensor of subgraph 0: name, TFLite (NHWC) shape, dtype, buffer index (0: none)."""

    name: str
    shape: list[int]
    dtype: str
    buffer: int


@dataclass
class OpRecord:
    """One operator of subgraph 0: builtin name, tensor indices (-1: absent), options, version."""

    builtin: str
    inputs: list[int]
    outputs: list[int]
    options: Options | None
    version: int = 1


def _schema(module: str) -> Any:
    # import_module, not "import tflite.X": the package's __init__ rebinds tflite.X to the class.
    return importlib.import_module(f"tflite.{module}")


def builtin_code(builtin: str) -> int:
    """The BuiltinOperator number of an operator name such as ``CONV_2D``."""
    return int(getattr(_schema("BuiltinOperator").BuiltinOperator, builtin))


def encode_model(
    name: str,
    tensors: Sequence[TensorRecord],
    buffers: Sequence[bytes],
    ops: Sequence[OpRecord],
    inputs: Sequence[int],
    outputs: Sequence[int],
    description: str,
) -> bytes:
    """The .tflite bytes of a one-subgraph model; ``buffers[0]`` must be empty."""
    if buffers[0]:
        raise ValueError("buffer 0 is the empty sentinel")
    size = sum(len(b) for b in buffers)
    if size > MAX_FLATBUFFER_BYTES - 2**20:
        raise GraphError(f"the weights take {size} bytes; a single .tflite flatbuffer holds less than 2 GiB")
    b = flatbuffers.Builder(size + 64 * len(tensors) + 1024)

    codes: list[tuple[str, int]] = list(dict.fromkeys((o.builtin, o.version) for o in ops))
    code_offsets = [_operator_code(b, builtin, version) for builtin, version in codes]
    buffer_offsets = [_buffer(b, data) for data in buffers]
    tensor_offsets = [_tensor(b, t) for t in tensors]
    op_offsets = [_operator(b, o, codes.index((o.builtin, o.version))) for o in ops]

    sg = _schema("SubGraph")
    tensors_vec = _tables(b, sg.SubGraphStartTensorsVector, tensor_offsets)
    ops_vec = _tables(b, sg.SubGraphStartOperatorsVector, op_offsets)
    in_vec = _int32s(b, inputs)
    out_vec = _int32s(b, outputs)
    sg_name = b.CreateString("main")
    sg.SubGraphStart(b)
    sg.SubGraphAddTensors(b, tensors_vec)
    sg.SubGraphAddInputs(b, in_vec)
    sg.SubGraphAddOutputs(b, out_vec)
    sg.SubGraphAddOperators(b, ops_vec)
    sg.SubGraphAddName(b, sg_name)
    subgraph = sg.SubGraphEnd(b)

    m = _schema("Model")
    codes_vec = _tables(b, m.ModelStartOperatorCodesVector, code_offsets)
    subgraphs_vec = _tables(b, m.ModelStartSubgraphsVector, [subgraph])
    buffers_vec = _tables(b, m.ModelStartBuffersVector, buffer_offsets)
    desc = b.CreateString(f"{description}: {name}")
    m.ModelStart(b)
    m.ModelAddVersion(b, SCHEMA_VERSION)
    m.ModelAddOperatorCodes(b, codes_vec)
    m.ModelAddSubgraphs(b, subgraphs_vec)
    m.ModelAddDescription(b, desc)
    m.ModelAddBuffers(b, buffers_vec)
    b.Finish(m.ModelEnd(b), file_identifier=IDENTIFIER)
    return bytes(b.Output())


def _operator_code(b: flatbuffers.Builder, builtin: str, version: int) -> int:
    oc = _schema("OperatorCode")
    code = builtin_code(builtin)
    oc.OperatorCodeStart(b)
    oc.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, DEPRECATED_CODE_LIMIT))
    oc.OperatorCodeAddBuiltinCode(b, code)
    oc.OperatorCodeAddVersion(b, version)
    return int(oc.OperatorCodeEnd(b))


def _buffer(b: flatbuffers.Builder, data: bytes) -> int:
    buf = _schema("Buffer")
    vec = None
    if data:
        b.StartVector(1, len(data), BUFFER_ALIGNMENT)
        b.head = b.Head() - len(data)
        b.Bytes[b.Head() : b.Head() + len(data)] = data
        vec = b.EndVector()
    buf.BufferStart(b)
    if vec is not None:
        buf.BufferAddData(b, vec)
    return int(buf.BufferEnd(b))


def _tensor(b: flatbuffers.Builder, t: TensorRecord) -> int:
    tt = _schema("Tensor")
    name = b.CreateString(t.name)
    shape = _int32s(b, t.shape)
    tt.TensorStart(b)
    tt.TensorAddShape(b, shape)
    tt.TensorAddType(b, TENSOR_TYPES[t.dtype])
    tt.TensorAddBuffer(b, t.buffer)
    tt.TensorAddName(b, name)
    return int(tt.TensorEnd(b))


def _operator(b: flatbuffers.Builder, o: OpRecord, code_index: int) -> int:
    op = _schema("Operator")
    ins = _int32s(b, o.inputs)
    outs = _int32s(b, o.outputs)
    options = _options(b, o.options) if o.options is not None else None
    op.OperatorStart(b)
    op.OperatorAddOpcodeIndex(b, code_index)
    op.OperatorAddInputs(b, ins)
    op.OperatorAddOutputs(b, outs)
    if options is not None and o.options is not None:
        kinds = _schema("BuiltinOptions").BuiltinOptions
        op.OperatorAddBuiltinOptionsType(b, getattr(kinds, o.options[0]))
        op.OperatorAddBuiltinOptions(b, options)
    return int(op.OperatorEnd(b))


def _options(b: flatbuffers.Builder, options: Options) -> int:
    """An options table from its schema name and ``{Field: value}`` (lists become int32 vectors)."""
    kind, fields = options
    mod = _schema(kind)
    vectors = {k: _int32s(b, v) for k, v in fields.items() if isinstance(v, list)}
    getattr(mod, f"{kind}Start")(b)
    for key, value in fields.items():
        getattr(mod, f"{kind}Add{key}")(b, vectors.get(key, value))
    return int(getattr(mod, f"{kind}End")(b))


def _int32s(b: flatbuffers.Builder, values: Sequence[int]) -> int:
    return int(b.CreateNumpyVector(np.asarray(list(values), dtype=np.int32)))


def _tables(b: flatbuffers.Builder, start: Callable[[flatbuffers.Builder, int], Any], offsets: list[int]) -> int:
    start(b, len(offsets))
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return int(b.EndVector())
