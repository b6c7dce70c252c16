"""The prediction answers written by orjson.

An answer for 1,000 architectures is 1,000 results with their warnings (and, with ``breakdown``,
80,000 kernels for NAS-Bench-201 cells): the standard library's encoder, DRF's default, spent
50 ms on the plain answer and most of a second on a breakdown, orjson a tenth of that. The
document is the same JSON (compact, UTF-8); what orjson cannot write itself (a lazy translation,
a date, a decimal) goes through DRF's own encoder."""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_fallback = JSONEncoder()


def _default(obj: Any) -> Any:
    return _fallback.default(obj)


class FastJSONRenderer(JSONRenderer):
    """``application/json`` through orjson (non-finite floats are written as null)."""

    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: dict[str, Any] | None = None
    ) -> bytes:
        """The answer as compact UTF-8 JSON (an empty body for ``None``, as DRF's renderer)."""
        if data is None:
            return b""
        return orjson.dumps(data, default=_default)
