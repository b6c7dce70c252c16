"""Query parameters of the sharing endpoints, declared once: they validate and document.

``SharingJobFilterSet`` filters the sweep list like ``JobFilterSet`` does the jobs.
``SharingRowFilterSet`` declares and checks the parameters of a sweep's rows; the view hands its
cleaned values to ``server.tenancy.services.sharing_rows`` (the one place rows are filtered), so
it has no model of its own and filters nothing itself.
"""

from __future__ import annotations

import re
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError

from devicelab.tenancy.spec import MAX_TENANTS, STRATEGIES
from server.api.filters import StrictFilterSet, boolean_filter, choice_filter, documented, id_filter
from server.profiling.models import JobState, ProfilingJob
from server.tenancy.models import SharingStatus

# A workload is a shape's MxNxK or a zoo network's name (letters, digits, ``_``, ``.``, ``-``);
# anything else names no row (and a NUL byte could not even be sent to PostgreSQL).
WORKLOAD_PATTERN = r"^[A-Za-z0-9_.\-]{1,200}$"
_WORKLOAD = re.compile(WORKLOAD_PATTERN)


class SharingJobFilterSet(StrictFilterSet):
    """``GET /api/sharing/sweeps/?state=&device=``."""

    state = choice_filter("state", JobState.choices, "only sweeps in this state")
    device = id_filter("device", "only sweeps on this device")

    class Meta:
        model = ProfilingJob
        fields = ["state", "device"]


class _WorkloadField(forms.Field):
    """A workload's name as stored: ``256x128x1152`` or ``resnet18``."""

    def to_python(self, value: Any) -> str | None:
        """The name, or None when the parameter is empty."""
        if value in self.empty_values:
            return None
        text = str(value)
        if not _WORKLOAD.match(text):
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})
        return text


class WorkloadFilter(django_filters.Filter):
    """A workload's name (applied by ``sharing_rows``)."""

    field_class = _WorkloadField


class _TenantsField(forms.Field):
    """R: 1 .. ``MAX_TENANTS``, ASCII digits only."""

    def to_python(self, value: Any) -> int | None:
        """The tenant count, or None when the parameter is empty."""
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 5) or not 1 <= int(text) <= MAX_TENANTS:
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})
        return int(text)


class TenantsFilter(django_filters.Filter):
    """How many tenants shared the device (applied by ``sharing_rows``)."""

    field_class = _TenantsField


class SharingRowFilterSet(StrictFilterSet):
    """``GET /api/sharing/sweeps/{id}/rows/?workload=&strategy=&tenants=&status=&detail=``."""

    workload = documented(
        WorkloadFilter(
            field_name="workload",
            help_text="only rows of this workload: a shape's MxNxK (256x128x1152) or a network's name (resnet18)",
            error_messages={"invalid": "workload must be a shape MxNxK or a network's name, got %(value)r"},
        ),
        {"type": "string", "pattern": WORKLOAD_PATTERN},
        "only rows of this workload: a shape's MxNxK (256x128x1152) or a network's name (resnet18)",
    )
    strategy = choice_filter("strategy", [(s, s) for s in STRATEGIES], "only rows of this strategy")
    tenants = documented(
        TenantsFilter(
            field_name="tenants",
            help_text="only rows at this R",
            error_messages={"invalid": f"tenants must be an integer 1 .. {MAX_TENANTS}, got %(value)r"},
        ),
        {"type": "integer", "minimum": 1, "maximum": MAX_TENANTS},
        "only rows at this R (the number of tenants)",
    )
    status = choice_filter(
        "status",
        SharingStatus.choices,
        "only rows with this status: ok (measured), memory_bound, unsupported, error",
    )
    detail = boolean_filter(
        "detail",
        "true: each row with its whole data (samples per round and tenant, statistics, memory, checks); large. "
        "Filters nothing.",
    )

    def sharing_rows_arguments(self) -> dict[str, Any]:
        """The cleaned parameters as ``sharing_rows`` keyword arguments (call after ``is_valid()``)."""
        data = self.form.cleaned_data
        return {
            "workload": data.get("workload") or None,
            "strategy": data.get("strategy") or None,
            "tenants": data.get("tenants"),
            "status": data.get("status") or None,
        }

    @property
    def wants_detail(self) -> bool:
        """Whether each row's whole data was asked for."""
        return bool(self.form.cleaned_data.get("detail"))
