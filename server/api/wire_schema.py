"""OpenAPI schemas of the records that cross the wire as dataclasses (``devicelab.wire``), read
from the same type hints ``from_json`` checks a payload against, so the documented shape and the
accepted one cannot drift apart."""

from __future__ import annotations

import dataclasses
import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

from devicelab.wire import NanAsNull, OwnJson

_SCALARS: dict[object, dict[str, Any]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
}


def json_schema(hint: Any) -> dict[str, Any]:
    """The OpenAPI (3.0) schema of a type as ``devicelab.wire`` reads it."""
    origin = get_origin(hint)
    if origin is Annotated:
        base = get_args(hint)[0]
        own = next((m for m in hint.__metadata__ if isinstance(m, OwnJson)), None)
        if any(isinstance(m, NanAsNull) for m in hint.__metadata__):
            return {**json_schema(base), "nullable": True, "description": "null: not reported"}
        if own is not None:
            return {"type": "object", "additionalProperties": True, "description": f"{own.what} (its own JSON)"}
        return json_schema(base)
    if hint is Any:
        return {}
    if hint is type(None):
        return {"nullable": True}
    if hint in _SCALARS:
        return dict(_SCALARS[hint])
    if origin is Literal:
        values = list(get_args(hint))
        return {"type": "string" if all(isinstance(v, str) for v in values) else "integer", "enum": values}
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        nullable = len(options) < len(get_args(hint))
        schema = json_schema(options[0]) if len(options) == 1 else {"oneOf": [json_schema(a) for a in options]}
        return {**schema, "nullable": True} if nullable else schema
    if origin in (list, tuple):
        args = [a for a in get_args(hint) if a is not Ellipsis]
        return {"type": "array", "items": json_schema(args[0]) if args else {}}
    if origin is dict:
        value = get_args(hint)[1] if get_args(hint) else Any
        return {"type": "object", "additionalProperties": json_schema(value) or True}
    if dataclasses.is_dataclass(hint) or is_typeddict(hint):
        return _object_schema(hint)
    return {}


def _object_schema(cls: Any) -> dict[str, Any]:
    hints = get_type_hints(cls, include_extras=True)
    if dataclasses.is_dataclass(cls):
        names = [f.name for f in dataclasses.fields(cls)]
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
    else:
        names = list(hints)
        required = sorted(getattr(cls, "__required_keys__", ()))
    schema: dict[str, Any] = {
        "type": "object",
        "title": getattr(cls, "json_name", "") or cls.__name__,
        "properties": {name: json_schema(hints[name]) for name in names},
        "additionalProperties": False,
    }
    doc = (cls.__doc__ or "").strip()
    if doc:
        schema["description"] = " ".join(doc.split())
    if required:
        schema["required"] = required
    return schema


__all__ = ["json_schema"]
