"""Architectures in the wire form of ``POST /api/predict/`` (a graph, an NB-201 cell, ONNX bytes),
and the batches they are sent in."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from latencylab.client.errors import InputError

_WIRE_KEYS = ("graph", "nb201", "onnx_base64")


def is_graph(obj: Any) -> bool:
    from devicelab.graph import Graph

    return isinstance(obj, Graph)


def _read_json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON file ({exc})") from None


def encode_architecture(item: Any, index: int = 0) -> dict[str, Any]:
    """One architecture in the wire form of ``POST /api/predict/``: ``{"name", "graph"|"nb201"|"onnx_base64"}``.

    ``item`` is a devicelab ``Graph``, an NB-201 cell string (it starts with ``|``), a path to an
    ``.onnx``, graph ``.json`` or ``.tflite`` file, ONNX or graph-JSON bytes, a graph JSON dict, or a
    dict already in the wire form (its name defaults to ``arch<index>``).
    """
    default = f"arch{index}"
    if isinstance(item, dict):
        if any(k in item for k in _WIRE_KEYS):
            return {"name": default, **item}
        if "operators" in item:
            return {"name": str(item.get("name") or default), "graph": item}
        raise InputError(
            f"architecture {index}: a dict must hold one of {list(_WIRE_KEYS)} (or be a graph JSON document)"
        )
    if isinstance(item, str) and item.strip().startswith("|"):
        return {"name": item.strip(), "nb201": item.strip()}
    if isinstance(item, bytes | bytearray):
        data = bytes(item)
        if data.lstrip()[:1] == b"{":
            try:
                return encode_architecture(json.loads(data), index)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise InputError(f"architecture {index}: bytes that start with '{{' but are not JSON ({exc})") from None
        return {"name": default, "onnx_base64": base64.b64encode(data).decode("ascii")}
    if isinstance(item, str | os.PathLike):
        path = Path(item)
        if not path.is_file():
            raise InputError(
                f"architecture {index}: {str(item)!r} is neither an NB-201 cell string (they start with '|') "
                "nor an existing file"
            )
        suffix = path.suffix.lower()
        if suffix == ".onnx":
            return {"name": path.stem, "onnx_base64": base64.b64encode(path.read_bytes()).decode("ascii")}
        if suffix == ".json":
            doc = _read_json_file(path)
            if not isinstance(doc, dict):
                raise InputError(f"{path}: a graph JSON file holds an object, not {type(doc).__name__}")
            return {"name": str(doc.get("name") or path.stem), "graph": doc}
        if suffix == ".tflite":
            # The predict API reads graph JSON, ONNX and NB-201: a TFLite file is converted here.
            from devicelab.graph import GraphError, graph_to_dict, load_graph_file

            try:
                return {"name": path.stem, "graph": graph_to_dict(load_graph_file(path))}
            except GraphError as exc:
                raise InputError(f"{path}: {exc}") from None
        raise InputError(f"{path}: unknown model file type {suffix or '(none)'!r}; expected .onnx, .json or .tflite")
    if is_graph(item):
        from devicelab.graph import graph_to_dict

        return {"name": item.name, "graph": graph_to_dict(item)}
    raise InputError(
        f"architecture {index}: cannot send a {type(item).__name__}; pass a Graph, an NB-201 string, a file "
        "path, or a dict in the wire form"
    )


def chunks(items: list[dict[str, Any]], max_items: int, max_bytes: int) -> Iterator[tuple[int, list[dict[str, Any]]]]:
    """``(offset, chunk)`` pairs of at most ``max_items`` items and about ``max_bytes`` of JSON each."""
    start, size = 0, 0
    for i, item in enumerate(items):
        n = len(json.dumps(item, separators=(",", ":")))
        if i > start and (i - start >= max_items or size + n > max_bytes):
            yield start, items[start:i]
            start, size = i, 0
        size += n
    if start < len(items):
        yield start, items[start:]


__all__ = ["chunks", "encode_architecture", "is_graph"]
