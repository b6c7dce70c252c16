"""What the emulated ``benchmark_model`` needs to know of a .tflite file: subgraph 0's operators.

The file is read with ``devicelab.graph.tflite.wire.decode`` (so a file our importer refuses is
refused here too); each operator gets its builtin name (or custom code), opcode version, output
tensor names, element type class, and a cost: multiply-adds, bytes moved, weight bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from devicelab.graph.tflite.wire import CUSTOM, RawModel, decode

# TensorType -> bytes per element.
TYPE_BYTES = {0: 4, 1: 2, 2: 4, 3: 1, 4: 8, 5: 1, 6: 1, 7: 2, 9: 1, 10: 8, 15: 4, 16: 2, 17: 1, 18: 2}
INT8, UINT8, FLOAT16 = 9, 3, 1
# Extra work per output element of cheap operators (a pool reads a window, a softmax exponentiates).
_PER_ELEMENT = {"SOFTMAX": 4, "LOGISTIC": 3, "TANH": 3, "HARD_SWISH": 2, "RESIZE_BILINEAR": 4, "GELU": 4}


@dataclass
class ModelOp:
    """One operator of subgraph 0 with its cost."""

    index: int
    name: str  # builtin name ("CONV_2D") or the custom code of a CUSTOM operator
    code: int
    version: int
    custom: bool
    inputs: list[int]
    outputs: list[int]
    output_names: list[str]
    dtype: str  # "F32", "F16", "QS8" or "QU8": how the operator computes
    macs: int
    bytes: int  # activations read and written plus weights read
    weight_bytes: int
    options: dict[str, Any] = field(default_factory=dict)
    kernel_hw: tuple[int, int] = (1, 1)
    stride: int = 1


@dataclass
class TfliteModel:
    """The operators in execution order, the tensors' names, the graph outputs."""

    ops: list[ModelOp]
    tensor_names: list[str]
    outputs: list[int]
    subgraph_name: str
    weight_bytes: int
    activation_bytes: int
    size: int


def _numel(shape: list[int]) -> int:
    return math.prod(max(d, 1) for d in shape) if shape else 1


def _versions(data: bytes, count: int) -> list[int]:
    """Each operator's opcode version (1 where the file does not say)."""
    try:
        from tflite.Model import Model

        model = Model.GetRootAs(data, 0)
        sg = model.Subgraphs(0)
        return [int(model.OperatorCodes(sg.Operators(j).OpcodeIndex()).Version() or 1) for j in range(count)]
    except Exception:  # noqa: BLE001 - the wire reader already vouched for the layout
        return [1] * count


def read_model(data: bytes) -> TfliteModel:
    """Read a .tflite file; raises ``devicelab.graph.errors.GraphError`` when it is not one."""
    from tflite.utils import BUILTIN_OPCODE2NAME

    raw = decode(data)
    produced = {t for op in raw.ops for t in op.outputs}
    constants = {
        i for i in range(len(raw.tensors)) if i not in produced and i not in raw.inputs and raw.tensors[i].buffer > 0
    }
    versions = _versions(data, len(raw.ops))
    ops = []
    for op, version in zip(raw.ops, versions, strict=True):
        name = (
            (op.custom or "UnknownCustomOp")
            if op.code == CUSTOM
            else BUILTIN_OPCODE2NAME.get(op.code, f"BUILTIN_{op.code}")
        )
        ops.append(_model_op(raw, op.index, name, op.code, version, op.inputs, op.outputs, op.options, constants))
    activations = sum(_tensor_bytes(raw, t) for t in range(len(raw.tensors)) if t not in constants)
    return TfliteModel(
        ops,
        [t.name for t in raw.tensors],
        list(raw.outputs),
        raw.subgraph_name,
        sum(_tensor_bytes(raw, t) for t in constants),
        activations,
        len(data),
    )


def _tensor_bytes(raw: RawModel, t: int) -> int:
    tensor = raw.tensors[t]
    return _numel(tensor.shape) * TYPE_BYTES.get(tensor.type, 4)


def _model_op(
    raw: RawModel,
    index: int,
    name: str,
    code: int,
    version: int,
    inputs: list[int],
    outputs: list[int],
    options: dict[str, Any],
    constants: set[int],
) -> ModelOp:
    ins = [t for t in inputs if t >= 0]
    shapes = {t: raw.tensors[t].shape for t in ins + outputs}
    out_shape = shapes[outputs[0]] if outputs else []
    out_elems = sum(_numel(shapes[t]) for t in outputs)
    data_in = [t for t in ins if t not in constants]
    weights = [t for t in ins if t in constants]
    first = raw.tensors[data_in[0]].type if data_in else (raw.tensors[outputs[0]].type if outputs else 0)
    dtype = {INT8: "QS8", UINT8: "QU8", FLOAT16: "F16"}.get(first, "F32")
    macs, kernel = out_elems, (1, 1)
    w_shape = shapes[ins[1]] if len(ins) > 1 else []
    if name == "CONV_2D" and len(w_shape) == 4:
        macs = _numel(out_shape) * w_shape[1] * w_shape[2] * w_shape[3]
        kernel = (w_shape[1], w_shape[2])
    elif name == "DEPTHWISE_CONV_2D" and len(w_shape) == 4:
        macs = _numel(out_shape) * w_shape[1] * w_shape[2]
        kernel = (w_shape[1], w_shape[2])
    elif name in ("FULLY_CONNECTED", "BATCH_MATMUL") and len(w_shape) >= 2:
        macs = _numel(out_shape) * w_shape[-1 if name == "FULLY_CONNECTED" else -2]
    elif name == "TRANSPOSE_CONV" and len(ins) > 2 and len(shapes[ins[1]]) == 4:
        w = shapes[ins[1]]
        macs = _numel(shapes[ins[2]]) * w[0] * w[1] * w[2]
    elif name in ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D"):
        kernel = (int(options.get("FilterHeight", 1)), int(options.get("FilterWidth", 1)))
        macs = _numel(out_shape) * kernel[0] * kernel[1]
    elif name in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN") and data_in:
        macs = _numel(shapes[data_in[0]])
    else:
        macs = out_elems * _PER_ELEMENT.get(name, 1)
    moved = sum(_tensor_bytes(raw, t) for t in data_in) + sum(_tensor_bytes(raw, t) for t in outputs)
    weight_bytes = sum(_tensor_bytes(raw, t) for t in weights)
    return ModelOp(
        index,
        name,
        code,
        version,
        code == CUSTOM,
        list(inputs),
        list(outputs),
        [raw.tensors[t].name for t in outputs],
        dtype,
        int(macs),
        moved + weight_bytes,
        weight_bytes,
        dict(options),
        kernel,
        int(options.get("StrideW", 1) or 1),
    )
