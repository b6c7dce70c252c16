"""The request body that queues a sharing sweep: one serializer that both validates it (the view
calls ``is_valid``) and documents it in ``/api/schema/``.

It checks the wire format as ``SharingSpec`` declares it (``server.api.spec_fields``): JSON types
as sent, bounds, no unknown keys, no item twice in a list, a shape or a network. Whether the
device is an online OpenCL device and the time budget within the task's limit is the service's
answer
(``server.tenancy.services.submit_sharing_sweep``). Either way the answer is a 400 whose messages
name the field; inside ``spec`` they are one flat list naming the key (``spec.tenants[1] must be
between 1 and 4096, got 0``), as the fusion requests' are.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from rest_framework import serializers
from rest_framework.fields import empty

from devicelab.graph import zoo
from devicelab.spec import declared
from devicelab.tenancy.spec import SharingSpec
from server.api.fields import IdField
from server.api.requests import (
    FlatErrors,
    NestedObjectSerializer,
    ObjectRequestSerializer,
    StrictNumberField,
    UniqueListField,
)
from server.api.spec_fields import check_whole, spec_fields
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.tenancy.services import time_limit_budget

# A list left null reads as what it is (DRF's own message, "This field may not be null.", would
# follow the key: "spec.networks This field ...").
LIST_NULL = {"null": "must be a list, got None"}
# The zoo's names as fusion's requests list them: one choice set, one enum in the schema (ZooEnum).
ZOO_NAMES = tuple(sorted(zoo.entries()))


class SharingSpecSerializer(NestedObjectSerializer):
    """What a sharing sweep measures (``devicelab.tenancy.sweep.SharingSpec``); keys left out take
    their defaults (see docs/tenancy.md, "Sharing sweeps as jobs")."""

    def get_fields(self) -> dict[str, serializers.Field]:
        """``SharingSpec``'s fields as it declares them; its networks, through the API, zoo names."""
        networks = UniqueListField(
            error_messages=LIST_NULL,
            child=serializers.ChoiceField(
                choices=list(ZOO_NAMES),
                error_messages={
                    "invalid_choice": "is not a zoo model, got {input!r} (`latencylab zoo list` lists them)"
                },
            ),
            required=False,
            help_text=declared(SharingSpec, "networks").help,
        )
        return spec_fields(SharingSpec, networks=networks)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The spec's rules across its fields (``SharingSpec``'s own: a shape or a network)."""
        check_whole(SharingSpec, attrs)
        return attrs


class SharingTimeBudgetField(FlatErrors, StrictNumberField):
    """Seconds a sharing sweep may spend measuring: at most what ``time_limit_budget()`` allows
    (read for every request, like the settings it comes from); its messages name it."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1.0)
        kwargs.setdefault("max_value", time_limit_budget())
        super().__init__(**kwargs)


class SharingSweepRequest(TypedDict, total=False):
    """A validated ``POST /api/sharing/sweeps/`` body: the device, and the keys the service reads."""

    device: Device
    spec: dict[str, Any]
    time_budget_s: float | None


class SharingSweepCreateSerializer(ObjectRequestSerializer):
    """What a client sends to queue a sharing sweep on an OpenCL device."""

    device = IdField("device", help_text="Id of an online OpenCL device (GET /api/devices/?kind=opencl).")
    spec = SharingSpecSerializer(required=False, help_text="What to measure; keys left out take their defaults.")
    time_budget_s = SharingTimeBudgetField(
        required=False,
        allow_null=True,
        help_text="Stop measuring after this many seconds and keep the (workload, R) units measured (the result "
        "says which were not); default and maximum: LATENCYLAB_TASK_TIME_LIMIT less 300 s.",
    )

    def validate_device(self, value: int) -> Device:
        """A registered device (the service checks it is an online OpenCL one)."""
        return existing_device(value)

    def run_validation(self, data: Any = empty) -> SharingSweepRequest:
        """The request (keys left out stay out: the service fills in the defaults)."""
        return cast(SharingSweepRequest, super().run_validation(data))


__all__ = [
    "ZOO_NAMES",
    "SharingSpecSerializer",
    "SharingSweepCreateSerializer",
    "SharingSweepRequest",
]
