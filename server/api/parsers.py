"""Request body parsers: JSON read with orjson, and refused when nested too deeply.

A batch of 1,000 graph JSON documents is ~12 MB; the standard library's reader spends most of
the request's time budget building its objects, orjson a fraction of it. The answer for a bad
body is the same 400 with the reader's reason as DRF's own JSON parser gives.

Nesting: the standard library's reader (DRF's default) dies of Python's recursion limit on a
body nested ~1,000 deep, and so may any code that walks such a body recursively. orjson refuses
more than 1,024 levels itself; a body of up to ``DEPTH_CHECKED_BYTES`` is also walked (cheaply,
without recursion) and refused past ``MAX_JSON_DEPTH`` levels, which no document of ours comes
near. Bigger bodies (prediction batches, graph uploads) are not walked, as that would cost a
fifth of a 1,000-architecture request; their readers check types level by level, and the API
answers a ``RecursionError`` with a 400 as a last resort. Every refusal for depth names
``MAX_JSON_DEPTH``, the limit a client must keep (not orjson's, nor Python's).
"""

from __future__ import annotations

from typing import Any

import orjson
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_JSON_DEPTH = 64
DEPTH_CHECKED_BYTES = 1 << 20
TOO_DEEP = f"JSON parse error - the body nests more than {MAX_JSON_DEPTH} levels deep"
# How orjson's message starts when a document nests past its own limit of 1,024 levels.
ORJSON_DEPTH_ERROR = "depth limit exceeded"


def json_depth_exceeds(doc: Any, limit: int) -> bool:
    """Whether the decoded JSON ``doc`` nests containers more than ``limit`` levels deep."""
    stack = [(doc, 1)]
    while stack:
        obj, depth = stack.pop()
        if depth > limit:
            return True
        children = obj.values() if type(obj) is dict else obj if type(obj) is list else ()
        stack.extend((child, depth + 1) for child in children if type(child) in (dict, list))
    return False


class FastJSONParser(JSONParser):
    """``application/json`` bodies parsed by orjson (strict JSON: no NaN or Infinity)."""

    # bodies up to this size are walked for their depth
    depth_checked_bytes = DEPTH_CHECKED_BYTES

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        """The decoded body, or ``ParseError`` saying where it is malformed or that it nests too deeply."""
        raw = stream.read()
        try:
            doc = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            if str(exc).startswith(ORJSON_DEPTH_ERROR):
                # orjson's own limit (1,024) is not the API's: the client is told the one it must keep.
                raise ParseError(TOO_DEEP) from None
            raise ParseError(f"JSON parse error - {exc}") from None
        if len(raw) <= self.depth_checked_bytes and json_depth_exceeds(doc, MAX_JSON_DEPTH):
            raise ParseError(TOO_DEEP)
        return doc


class TypedJSONParser(FastJSONParser):
    """For bodies read field by field by their declared types (``devicelab.wire``), as the lab
    API's are: the reader descends no deeper than the types do, so the depth walk (3 ms of a
    300-operator profile's post) is left out; orjson still refuses more than 1,024 levels."""

    depth_checked_bytes = 0
