"""Query parameters of the fusion endpoints, declared once: they validate and document.

``FusionJobFilterSet`` filters the sweep and plan lists like ``JobFilterSet`` does the jobs.
``FusionRowFilterSet`` declares and checks the parameters of a sweep's rows; the view hands its
cleaned values to ``server.fusion.services.sweep_rows`` (the one place rows are filtered), so it
has no model of its own and filters nothing itself.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError

from devicelab.fusion.spec import KINDS, MAX_FUSED
from devicelab.fusion.sweep import COMBINATION, IDENTICAL, VARIANTS
from server.api.filters import StrictFilterSet, boolean_filter, choice_filter, documented, id_filter
from server.profiling.models import JobState, ProfilingJob

# A row fuses at most as many operators as a sweep's spec may ask for.
MAX_KINDS_IN_FILTER = MAX_FUSED
_KIND = "(" + "|".join(sorted(KINDS, key=len, reverse=True)) + ")"
KINDS_PATTERN = f"^{_KIND}(,{_KIND}){{0,{MAX_KINDS_IN_FILTER - 1}}}$"


class FusionJobFilterSet(StrictFilterSet):
    """``GET /api/fusion/sweeps/?state=&device=`` (and the plans)."""

    state = choice_filter("state", JobState.choices, "only sweeps or plans in this state")
    device = id_filter("device", "only those on this device")

    class Meta:
        model = ProfilingJob
        fields = ["state", "device"]


class _KindListField(forms.Field):
    """Comma-separated operator kinds (``C,DWC``); an unknown one is named in the 400."""

    def to_python(self, value: Any) -> list[str] | None:
        """The kinds in the order given, or None when the parameter is empty."""
        text = "" if value in self.empty_values else str(value).strip()
        if not text:
            return None
        kinds = [k.strip() for k in text.split(",")]
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            raise ValidationError(
                self.error_messages["unknown"], code="unknown", params={"unknown": unknown, "kinds": list(KINDS)}
            )
        if len(kinds) > MAX_KINDS_IN_FILTER:
            raise ValidationError(self.error_messages["too_many"], code="too_many", params={"count": len(kinds)})
        return kinds


class KindListFilter(django_filters.Filter):
    """A comma-separated list of operator kinds (applied by ``sweep_rows``)."""

    field_class = _KindListField


def kind_list_filter(param: str, help_text: str) -> KindListFilter:
    """A kind-list parameter whose 400 names the parameter and the unknown kinds."""
    declared = KindListFilter(
        field_name=param,
        help_text=help_text,
        error_messages={
            "unknown": f"{param}: unknown kind(s) %(unknown)s; the kinds are %(kinds)s",
            "too_many": f"{param}: %(count)s kinds; at most {MAX_KINDS_IN_FILTER}",
        },
    )
    return documented(declared, {"type": "string", "pattern": KINDS_PATTERN}, help_text)


class _SizeField(forms.Field):
    """How many operators a row fuses: 1 .. ``MAX_KINDS_IN_FILTER``, ASCII digits only."""

    def to_python(self, value: Any) -> int | None:
        """The size, or None when the parameter is empty."""
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 3) or not 1 <= int(text) <= MAX_KINDS_IN_FILTER:
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})
        return int(text)


class SizeFilter(django_filters.Filter):
    """The number of fused operators."""

    field_class = _SizeField


class FusionRowFilterSet(StrictFilterSet):
    """``GET /api/fusion/sweeps/{id}/rows/?experiment=&size=&variant=&kinds=&contains=&errors=&detail=``."""

    experiment = choice_filter(
        "experiment",
        [(COMBINATION, "combinations of kinds (figure 8)"), (IDENTICAL, "N identical operators (figure 9)")],
        "only rows of this experiment",
    )
    size = documented(
        SizeFilter(
            field_name="size",
            help_text="only rows that fuse this many operators",
            error_messages={"invalid": f"size must be an integer 1 .. {MAX_KINDS_IN_FILTER}, got %(value)r"},
        ),
        {"type": "integer", "minimum": 1, "maximum": MAX_KINDS_IN_FILTER},
        "only rows that fuse this many operators",
    )
    variant = choice_filter(
        "variant",
        [
            (VARIANTS[True], "rounded to the wave"),
            (VARIANTS[False], "not rounded"),
            (f"paper {VARIANTS[True]}", "the paper's layout, rounded (a sweep that asked for it besides the default)"),
            (f"paper {VARIANTS[False]}", "the paper's layout, not rounded"),
        ],
        "only this fused variant",
    )
    kinds = kind_list_filter(
        "kinds", "only this combination of kinds, comma-separated in any order (C,DWC is DWC,C; C,C is two C)"
    )
    contains = kind_list_filter("contains", "only rows that contain every one of these kinds, comma-separated")
    errors = boolean_filter("errors", "true: only the sets the fuser or driver refused; false: only measured rows")
    detail = boolean_filter(
        "detail", "true: each row with its whole data (raw samples, statistics, the check); large. Filters nothing."
    )

    def sweep_rows_arguments(self) -> dict[str, Any]:
        """The cleaned parameters as ``sweep_rows`` keyword arguments (call after ``is_valid()``)."""
        data = self.form.cleaned_data
        return {
            "experiment": data.get("experiment") or None,
            "size": data.get("size"),
            "variant": data.get("variant") or None,
            "kinds": data.get("kinds"),
            "contains": data.get("contains"),
            "errors": data.get("errors"),
        }

    @property
    def wants_detail(self) -> bool:
        """Whether each row's whole data was asked for."""
        return bool(self.form.cleaned_data.get("detail"))
