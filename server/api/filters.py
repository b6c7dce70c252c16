"""Query filters of the list endpoints, declared once: the same FilterSet filters and documents.

``DjangoFilterBackend`` (``REST_FRAMEWORK["DEFAULT_FILTER_BACKENDS"]``) applies a view's
``filterset_class`` and answers a bad value with 400 naming the parameter; drf-spectacular reads
the same declarations into ``/api/schema/``.
"""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError

from server.devices.models import Device, DeviceKind, DeviceQuerySet, DeviceStatus
from server.predictors.models import Predictor, PredictorMethod, PredictorState
from server.profiling.models import JobState, ProfilingJob


class _IdField(forms.IntegerField):
    """A row id in a query string: ASCII digits only, so ``?device=²`` is a 400 and not a crash."""

    def to_python(self, value: Any) -> int | None:
        """The id, or a ``ValidationError`` whose message shows the value given."""
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if not (text.isascii() and text.isdigit()):
            raise ValidationError(self.error_messages["invalid"], code="invalid", params={"value": value})
        return int(text)


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


class DeviceFilterSet(django_filters.FilterSet):
    """``GET /api/devices/?kind=&status=``."""

    kind = choice_filter("kind", DeviceKind.choices, "only devices of this kind")
    status = choice_filter(
        "status",
        DeviceStatus.choices,
        "`online`: reachable devices, idle or running a job; `busy`: those running a job; "
        "`offline`: those not heart-beating",
        method="filter_status",
    )

    class Meta:
        model = Device
        fields = ["kind", "status"]

    def filter_status(self, queryset: DeviceQuerySet, name: str, value: str) -> DeviceQuerySet:
        """``online`` means reachable (busy devices are online too); the others are exact."""
        if value == DeviceStatus.ONLINE:
            return queryset.online()
        return queryset.filter(status=value)


class JobFilterSet(django_filters.FilterSet):
    """``GET /api/jobs/?state=&device=&model=``."""

    state = choice_filter("state", JobState.choices, "only jobs in this state")
    device = id_filter("device", "only jobs on this device")
    model = id_filter("model", "only jobs of this model")

    class Meta:
        model = ProfilingJob
        fields = ["state", "device", "model"]


class PredictorFilterSet(django_filters.FilterSet):
    """``GET /api/predictors/?device=&method=&state=``."""

    device = id_filter("device", "only predictors of this device")
    method = choice_filter("method", PredictorMethod.choices, "only this method")
    state = choice_filter("state", PredictorState.choices, "only predictors in this state")

    class Meta:
        model = Predictor
        fields = ["device", "method", "state"]
