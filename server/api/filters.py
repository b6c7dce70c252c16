"""Query filters of the list endpoints, declared once: the same FilterSet filters and documents.

``DjangoFilterBackend`` (``REST_FRAMEWORK["DEFAULT_FILTER_BACKENDS"]``) applies a view's
``filterset_class`` and answers a bad value with 400 naming the parameter; drf-spectacular reads
the same declarations into ``/api/schema/``. A parameter given twice is a 400 too (which value
would count?); an empty one filters nothing (``allowEmptyValue`` in the schema).
"""

from __future__ import annotations

from typing import Any, TypeVar

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field

from server.api.fields import MAX_ID


class _IdField(forms.IntegerField):
    """A row id in a query string: ASCII digits only, so ``?device=²`` is a 400 and not a crash, and
    1 .. ``MAX_ID``, so ``?device=99999999999999999999`` is a 400 and not a database error."""

    def to_python(self, value: Any) -> int | None:
        """The id, or a ``ValidationError`` whose message shows the value given."""
        if value in self.empty_values:
            return None
        text = str(value).strip()
        # The length first: ``int()`` of a 5,000-digit string raises ValueError (CPython's digit limit).
        if not (text.isascii() and text.isdigit() and len(text) <= 30) or not 1 <= int(text) <= MAX_ID:
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})
        return int(text)


@extend_schema_field({"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.Filter):
    """Rows whose foreign key is this id; an id nothing has gives an empty list, not an error."""

    field_class = _IdField


def id_filter(param: str, help_text: str) -> IdFilter:
    """A filter on the foreign key ``param``, whose 400 says which parameter wants an id and what it got."""
    return IdFilter(
        field_name=param,
        help_text=help_text,
        error_messages={"invalid": f"{param} must be an id (a positive integer), got %(value)r"},
    )


def choice_filter(
    param: str, choices: list[tuple[str, str]], help_text: str, method: str | None = None
) -> django_filters.ChoiceFilter:
    """A filter on field ``param`` by one of ``choices``; an unknown value's 400 names the parameter and the
    allowed values."""
    values = [value for value, _ in choices]
    return django_filters.ChoiceFilter(
        field_name=param,
        choices=choices,
        help_text=help_text,
        method=method,
        error_messages={"invalid_choice": f"unknown {param} %(value)r; expected one of {values}"},
    )


class _SingleValuedForm(forms.Form):
    """The filter form of a ``FilterSet``: each parameter at most once (``?device=1&device=2`` is a 400)."""

    def clean(self) -> dict[str, Any]:
        """The cleaned values, with an error for each parameter the query string repeats."""
        cleaned = super().clean() or {}
        if isinstance(self.data, QueryDict):  # a query string; a plain dict holds one value a key
            for name in self.fields:
                count = len(self.data.getlist(name))
                if count > 1:
                    self.add_error(name, f"{name} is given {count} times; give it once")
        return cleaned


class StrictFilterSet(django_filters.FilterSet):
    """A ``FilterSet`` whose parameters may each be given once."""

    def get_form_class(self) -> type[forms.Form]:
        """Django-filter's form class for these filters, on a form that refuses repeated parameters."""
        generated = super().get_form_class()
        return type(generated.__name__, (_SingleValuedForm, generated), {})


TRUE_WORDS = ("true", "1")
FALSE_WORDS = ("false", "0")

_F = TypeVar("_F", bound=django_filters.Filter)


def documented(declared: _F, schema: dict[str, Any], help_text: str) -> _F:
    """``declared`` with its schema in ``/api/schema/`` (drf-spectacular reads the declared
    filters of the class, so the annotation on the instance is what it documents)."""
    return extend_schema_field({**schema, "description": help_text})(declared)  # type: ignore[no-any-return]


class _StrictBooleanField(forms.Field):
    """``true``/``false`` (or ``1``/``0``) in a query string; anything else is a 400."""

    def to_python(self, value: Any) -> bool | None:
        """The boolean, or None when the parameter is empty."""
        if value in self.empty_values:
            return None
        text = str(value).strip().lower()
        if text in TRUE_WORDS:
            return True
        if text in FALSE_WORDS:
            return False
        raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})


class StrictBooleanFilter(django_filters.Filter):
    """A boolean query parameter."""

    field_class = _StrictBooleanField


def boolean_filter(param: str, help_text: str) -> StrictBooleanFilter:
    """A boolean parameter whose 400 names it and shows the value given."""
    declared = StrictBooleanFilter(
        field_name=param,
        help_text=help_text,
        error_messages={"invalid": f"{param} must be true or false, got %(value)r"},
    )
    return documented(declared, {"type": "boolean"}, help_text)
