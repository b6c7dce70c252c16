"""The building blocks of every app's request bodies: a body that is a JSON object with no
unknown keys, an object nested in it (``spec``, ``options``), lists whose errors are one flat
list of messages naming the key (``spec.sizes[1] must be between 1 and 8, got 9``), strict
numbers and lists of distinct items (``uniqueItems`` in the schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings


class ObjectRequestSerializer(serializers.Serializer):
    """A request body that must be a JSON object with no keys but the serializer's fields."""

    default_error_messages = {"invalid": "the request body must be a JSON object, got {datatype}"}
    expected_keys: str | None = None  # how the unknown-key error names the keys (default: the fields)

    def run_validation(self, data: Any = empty) -> Any:
        """The request; a null body is refused like any body that is not an object."""
        if data is None:
            raise serializers.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: [self.error_messages["invalid"].format(datatype="null")]}
            )
        return super().run_validation(data)

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """Refuse keys the request does not have (a typo must not be ignored) before checking the others."""
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                expected = self.expected_keys or str(sorted(self.fields))
                raise serializers.ValidationError(
                    {api_settings.NON_FIELD_ERRORS_KEY: [f"unknown key(s) {unknown}; expected {expected}"]}
                )
        return dict(super().to_internal_value(data))


def flat_errors(prefix: str, detail: Any) -> list[str]:
    """``{"runs": ["must be ..."], "sizes": {0: ["..."]}}`` under ``spec`` as ``["spec.runs must
    be ...", "spec.sizes[0] ..."]``: one flat list of messages that each name the key, as the
    service's do; the object's own errors as ``spec: unknown key(s) ...``."""
    if isinstance(detail, Mapping):
        out: list[str] = []
        for key, value in detail.items():
            if key == api_settings.NON_FIELD_ERRORS_KEY:
                out.extend(f"{prefix}: {m}" for m in flat_errors("", value))
            elif isinstance(key, int) or str(key).isdigit():
                out.extend(flat_errors(f"{prefix}[{key}]", value))
            else:
                out.extend(flat_errors(f"{prefix}.{key}", value))
        return out
    if isinstance(detail, list):
        return [m for item in detail for m in flat_errors(prefix, item)]
    return [f"{prefix} {detail}" if prefix else str(detail)]


class FlatErrors:
    """A field whose errors, inside a request, are one flat list of messages naming the key
    (``spec.runs must be ...``, ``zoo[1] is not ...``) rather than nested by key and index."""

    field_name: str
    parent: Any

    def run_validation(self, data: Any = empty) -> Any:
        """The validated value, or a ``ValidationError`` with flat messages."""
        try:
            return super().run_validation(data)  # type: ignore[misc]
        except serializers.ValidationError as exc:
            # Alone, the errors stay by key; inside a flat field, that field flattens them all.
            if self.parent is None or isinstance(self.parent, FlatErrors):
                raise
            raise serializers.ValidationError(flat_errors(self.field_name, exc.detail)) from None


class NestedObjectSerializer(FlatErrors, ObjectRequestSerializer):
    """A JSON object inside a request body (``spec``, ``options``): unknown keys refused, errors
    flat; keys left out stay out (the service fills in the defaults)."""

    default_error_messages = {"invalid": "must be a JSON object, got {datatype}"}


class ListOfField(FlatErrors, serializers.ListField):
    """A JSON list in a request body, its errors flat (``zoo[1] is not a zoo model, got 'x'``)."""

    default_error_messages = {
        "not_a_list": "must be a list, got {input_type}",
        "empty": "must not be empty",
        "min_length": "must have at least {min_length} item(s)",
        "max_length": "must have at most {max_length} items",
    }


class StrictNumberField(serializers.FloatField):
    """A JSON number (not a bool or a string), within ``min_value`` .. ``max_value``."""

    default_error_messages = {
        "invalid": "must be a number, got {value!r}",
        "null": "must be a number, got None",
        "min_value": "must be >= {min_value}, got {value!r}",
        "max_value": "must be <= {max_value}, got {value!r}",
    }

    def to_internal_value(self, data: Any) -> float:
        """The number, or a ``ValidationError`` that shows the value sent."""
        if isinstance(data, bool) or not isinstance(data, int | float) or data != data:
            self.fail("invalid", value=data)
        if self.min_value is not None and data < self.min_value:
            self.fail("min_value", min_value=self.min_value, value=data)
        if self.max_value is not None and data > self.max_value:
            self.fail("max_value", max_value=self.max_value, value=data)
        return float(data)


class UniqueListField(ListOfField):
    """A JSON list whose items are distinct (``uniqueItems`` in the schema)."""

    default_error_messages = {"repeated": "lists {value!r} twice"}

    def to_internal_value(self, data: Any) -> list[Any]:
        """The items, or a ``ValidationError`` naming one given twice."""
        values = super().to_internal_value(data)
        seen: list[Any] = []
        for value in values:
            # 1 == True in Python: items are compared by type too.
            if any(type(v) is type(value) and v == value for v in seen):
                self.fail("repeated", value=value)
            seen.append(value)
        return values


class UniqueListFieldExtension(OpenApiSerializerFieldExtension):
    """drf-spectacular's array schema of a ``UniqueListField``, with ``uniqueItems``."""

    target_class = UniqueListField

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        """The list's schema as drf-spectacular maps a ListField, plus ``uniqueItems: true``."""
        schema: dict[str, Any] = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        schema["uniqueItems"] = True
        return schema


__all__ = [
    "FlatErrors",
    "ListOfField",
    "NestedObjectSerializer",
    "ObjectRequestSerializer",
    "StrictNumberField",
    "UniqueListField",
    "flat_errors",
]
