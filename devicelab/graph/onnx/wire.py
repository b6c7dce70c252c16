"""Read ONNX bytes: refuse what is not a ModelProto before protobuf sees it, and decode node values.

A top-level field whose length runs past the end of the file (truncated, or a header claiming
~2 GB) is refused by a scan of the top-level fields with a message that names the field; every
protobuf parser error becomes a ``GraphError`` too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from google.protobuf.message import DecodeError

from devicelab.graph.errors import GraphError

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


def short_float(value: Any, dtype: Any = np.float32) -> float:
    """A number as the shortest decimal that its storage type holds (float32 0.1 -> 0.1)."""
    x = np.asarray(value).astype(dtype).reshape(-1)[0]
    if np.issubdtype(x.dtype, np.floating):
        return float(str(x))
    return float(x)


def node_attrs(node: onnx.NodeProto) -> dict[str, Any]:
    """A node's attributes as plain Python values (floats as their shortest decimal)."""
    out: dict[str, Any] = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        if a.type == onnx.AttributeProto.FLOAT:
            v = short_float(v)
        elif a.type == onnx.AttributeProto.STRING:
            v = v.decode("utf-8", "replace")
        elif a.type == onnx.AttributeProto.INTS:
            v = [int(i) for i in v]
        elif a.type == onnx.AttributeProto.FLOATS:
            v = [short_float(f) for f in v]
        out[a.name] = v
    return out
