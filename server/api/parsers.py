"""Request body parsers: large JSON batches (``POST /api/predict/``) read with orjson.

A batch of 1,000 graph JSON documents is ~12 MB; the standard library's reader spends most of
the request's time budget building its objects, orjson a fraction of it. The answer for a bad
body is the same 400 with the reader's reason as DRF's own JSON parser gives.
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class FastJSONParser(JSONParser):
    """``application/json`` bodies parsed by orjson (strict JSON: no NaN or Infinity)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        """The decoded body, or ``ParseError`` saying where it is malformed."""
        try:
            return orjson.loads(stream.read())
        except orjson.JSONDecodeError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
