"""Read a model file of any supported format into the IR, choosing the reader by content.

Every reader takes the import's ``ImportLimits`` (``devicelab.graph.limits``): what a model may
describe and what its import may compute, checked before it is allocated.
"""

from __future__ import annotations

from pathlib import Path

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph
from devicelab.graph.limits import DEFAULT_LIMITS, ImportLimits

FORMATS = ("onnx", "tflite", "json")

# Larger files are refused before parsing: protobuf cannot hold more than 2 GiB, and a file
# that claims to be that large is more likely corrupt than a network we can profile.
MAX_MODEL_BYTES = 2**31 - 1


def detect_format(data: bytes, filename: str | None = None) -> str:
    """``onnx``, ``tflite`` or ``json``, from the bytes (and the file name when they are ambiguous)."""
    if not data:
        raise GraphError("the file is empty")
    if data[4:8] == b"TFL3":
        return "tflite"
    if data.lstrip()[:1] == b"{":
        return "json"
    suffix = Path(filename).suffix.lower() if filename else ""
    if suffix == ".tflite":
        return "tflite"
    if suffix == ".json":
        return "json"
    # ONNX has no magic number: a serialized ModelProto starts with field 1 (ir_version, varint)
    # or another field tag; anything else is rejected by the parser with a clear error.
    return "onnx"


def load_graph(
    data: bytes, filename: str | None = None, fmt: str | None = None, limits: ImportLimits = DEFAULT_LIMITS
) -> Graph:
    """Parse model bytes (ONNX, TFLite or graph JSON) into a checked ``Graph`` within ``limits``."""
    if len(data) > MAX_MODEL_BYTES:
        raise GraphError(f"the file is {len(data)} bytes; the limit is {MAX_MODEL_BYTES}")
    fmt = fmt or detect_format(data, filename)
    name = Path(filename).stem if filename else None
    if fmt == "json":
        from devicelab.graph.jsonio import graph_from_json

        return graph_from_json(data, limits)
    if fmt == "onnx":
        from devicelab.graph.onnx import graph_from_onnx_bytes

        return graph_from_onnx_bytes(data, name=name, limits=limits)
    if fmt == "tflite":
        from devicelab.graph.tflite import graph_from_tflite_bytes

        return graph_from_tflite_bytes(data, name=name, limits=limits)
    raise GraphError(f"unknown model format {fmt!r}; expected one of {list(FORMATS)}")


def load_graph_file(path: str | Path, limits: ImportLimits = DEFAULT_LIMITS) -> Graph:
    """Read a model file from disk (within ``limits``)."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise GraphError(f"cannot read {path}: {exc.strerror}") from None
    if size > MAX_MODEL_BYTES:
        raise GraphError(f"{path} is {size} bytes; the limit is {MAX_MODEL_BYTES}")
    return load_graph(path.read_bytes(), filename=path.name, limits=limits)
