"""Whether a device can run a model that holds operators outside the graph IR (``opaque`` ones).

A phone runs a ``.tflite`` as uploaded, so a model whose ARG_MAX or custom operator the IR only
keeps by name still runs there; a backend that executes the IR itself (OpenCL's kernels, the CPU
backend's ONNX export of a graph uploaded in another format) has nothing to run for it. The
server asks this at submission, so such a job is refused with the operator named instead of
failing on the worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from devicelab.graph import ops


def opaque_refusal(operators: Sequence[dict[str, Any]], model_format: str, device_formats: Sequence[str]) -> str | None:
    """Why a device that executes ``device_formats`` cannot run a model uploaded as
    ``model_format`` whose graph has these operators (graph-JSON operator dicts), or None when it
    can: it has no opaque operator, or the device runs the uploaded file itself."""
    if model_format in device_formats:
        return None
    opaque = [o for o in operators if o.get("type") == ops.OPAQUE]
    if not opaque:
        return None
    first = opaque[0]
    attrs = first.get("attrs") or {}
    kind = "custom operator" if attrs.get("custom") else "operator"
    more = f" (and {len(opaque) - 1} more such operator(s))" if len(opaque) > 1 else ""
    runs = ", ".join(device_formats) or "nothing declared"
    return (
        f"the model's {kind} {attrs.get('op', '?')} (node {first.get('name')!r}){more} has no equivalent in the "
        f"graph IR, and this device runs the IR or another format ({runs}), not the uploaded "
        f"{model_format} file; profile it on a device that runs {model_format} files as uploaded (a phone)"
    )
