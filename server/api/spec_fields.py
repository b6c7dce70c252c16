"""Serializer fields derived from a devicelab spec's declaration (``devicelab.spec``).

``spec_fields(ProfileSettings)`` gives one ``DeclaredField`` per field of the dataclass: it takes
the JSON value as sent and refuses it with the declaration's own message (``must be between 1
and 1024, got 0``), and ``/api/schema/`` documents it with the declaration's type, bounds, enum,
length and help. A serializer never restates a bound or a choice, so it cannot drift from what
the worker checks.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers
from rest_framework.settings import api_settings

from devicelab.spec import Rule, Setting, SpecError, described, settings_of


class DeclaredField(serializers.Field):
    """A field of a devicelab spec: validated by its declaration's rule, documented from it.

    Left out, it stays out (the service fills in the defaults: some, like a job's backend, are
    the device's). A wrong item of a list is reported under its index (``spec.tenants[1] ...``
    once flattened)."""

    def __init__(self, setting: Setting, **kwargs: Any) -> None:
        self.setting = setting
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", setting.rule.nullable)
        kwargs.setdefault("help_text", described(setting))
        super().__init__(**kwargs)
        self.error_messages["null"] = f"must be {setting.rule.describe()}, got None"

    def to_internal_value(self, data: Any) -> Any:
        """The value as sent, or a ``ValidationError`` with the declaration's reason."""
        wrong = self.setting.rule.problem(data)
        if wrong is not None:
            where, reason = wrong
            detail: Any = [reason]
            for index in reversed(where):
                detail = {index: detail}
            raise serializers.ValidationError(detail)
        return data

    def to_representation(self, value: Any) -> Any:
        """Plain JSON: tuples as lists."""
        return _plain(value)


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, list | tuple) else value


def rule_schema(rule: Rule) -> dict[str, Any]:
    """The OpenAPI schema of a value the rule takes (``nullable`` is the field's, added by
    drf-spectacular)."""
    if rule.is_list:
        assert rule.item is not None
        schema: dict[str, Any] = {"type": "array", "items": rule_schema(rule.item)}
        if rule.min_items is not None:
            schema["minItems"] = rule.min_items
        if rule.max_items is not None:
            schema["maxItems"] = rule.max_items
        if rule.unique:
            schema["uniqueItems"] = True
        return schema
    if rule.type is bool:
        return {"type": "boolean"}
    if rule.type is str:
        schema = {"type": "string"}
        if rule.choices:
            schema["enum"] = [*rule.choices, *([""] if rule.blank else [])]
        return schema
    schema = {"type": "integer"} if rule.type is int else {"type": "number", "format": "double"}
    if rule.ge is not None:
        schema["minimum"] = rule.ge
    if rule.le is not None:
        schema["maximum"] = rule.le
    return schema


class DeclaredFieldExtension(OpenApiSerializerFieldExtension):
    """drf-spectacular's schema of a ``DeclaredField``: its declaration's type, bounds, enum and
    length (the help and ``nullable`` come from the field as for any other)."""

    target_class = DeclaredField
    match_subclasses = True

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        """The declared value's schema."""
        return rule_schema(self.target.setting.rule)


def spec_fields(
    spec: type, field_class: type[DeclaredField] = DeclaredField, **overrides: serializers.Field
) -> dict[str, serializers.Field]:
    """A serializer field per field of the spec dataclass ``spec``, in its order; ``overrides``
    replace some (a field whose wire format is more than its declaration, such as a job's cores,
    which may name a core cluster); ``field_class``: a ``DeclaredField`` with errors of its own shape."""
    return {s.name: overrides[s.name] if s.name in overrides else field_class(s) for s in settings_of(spec)}


def check_whole(spec: type, attrs: dict[str, Any]) -> None:
    """Build the spec from a body's validated keys, so that its rules across fields (a sweep
    with nothing to measure) answer in the serializer too; a ``ValidationError`` naming the key."""
    try:
        spec(**attrs)
    except SpecError as exc:
        raise serializers.ValidationError({exc.key: [exc.reason]}) from None
    except ValueError as exc:
        raise serializers.ValidationError({api_settings.NON_FIELD_ERRORS_KEY: [str(exc)]}) from None
