"""The request body that queues a sharing sweep: one serializer that both validates it (the view
calls ``is_valid``) and documents it in ``/api/schema/``.

It checks the wire format: JSON types as sent, bounds, no unknown keys, no item twice in a list.
Whether the device is an online OpenCL device, the spec names at least one shape or network, and
the time budget is within the task's limit is the service's answer
(``server.tenancy.services.submit_sharing_sweep``). Either way the answer is a 400 whose messages
name the field; inside ``spec`` they are one flat list naming the key (``spec.tenants[1] must be
between 1 and 4096, got 0``), as the fusion requests' are.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from rest_framework import serializers
from rest_framework.fields import empty

from devicelab.backends.base import MAX_RUNS, MAX_WARMUP_RUNS
from devicelab.fusion.sweep import MAX_SEED
from devicelab.graph import zoo
from devicelab.tenancy.sweep import MAX_TENANTS, STRATEGIES
from server.api.fields import IdField, StrictBooleanField, StrictIntegerField
from server.api.fusion_requests import (
    ListOfField,
    StrictNumberField,
    UniqueListField,
    _FlatErrors,
    _NestedObjectSerializer,
)
from server.api.predict_serializers import _ObjectRequestSerializer
from server.api.serializers import existing_device
from server.devices.models import Device
from server.tenancy.services import time_limit_budget

# An SGEMM dimension: a bound well past the paper's largest (1152). At 8192 one fp32 operand is
# already 256 MiB, and the host's float64 check of a tenant's output against numpy 512 MiB.
MAX_DIMENSION = 8192
MAX_SHAPES = 16
MAX_TENANT_COUNTS = 64  # R values in one sweep: the paper's are 10
MAX_MEMORY_CAP_BYTES = 2**62
# A list left null reads as what it is (DRF's own message, "This field may not be null.", would
# follow the key: "spec.shapes This field ...").
LIST_NULL = {"null": "must be a list, got None"}
# The zoo's names as fusion's requests list them: one choice set, one enum in the schema (ZooEnum).
ZOO_NAMES = tuple(sorted(zoo.entries()))


class ShapeField(ListOfField):
    """An SGEMM shape as ``[m, n, k]``: three positive sizes."""

    default_error_messages = {
        "null": "must be three sizes [m, n, k], got None",
        "sizes": "must be three sizes [m, n, k], got {count}",
        "min_length": "must be three sizes [m, n, k]",
        "max_length": "must be three sizes [m, n, k]",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("child", StrictIntegerField(min_value=1, max_value=MAX_DIMENSION))
        kwargs.setdefault("min_length", 3)
        kwargs.setdefault("max_length", 3)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> list[int]:
        """The sizes, or a ``ValidationError`` saying a shape is three of them."""
        if isinstance(data, list) and len(data) != 3:
            self.fail("sizes", count=len(data))
        return list(super().to_internal_value(data))


class SharingSpecSerializer(_NestedObjectSerializer):
    """What a sharing sweep measures (``devicelab.tenancy.sweep.SharingSpec``); keys left out take
    their defaults (see docs/tenancy.md, "Sharing sweeps as jobs")."""

    shapes = UniqueListField(
        error_messages=LIST_NULL,
        child=ShapeField(),
        required=False,
        max_length=MAX_SHAPES,
        help_text="SGEMM shapes [m, n, k] (default: the paper's three, [[512, 1, 512], [256, 128, 1152], "
        "[256, 256, 256]]); [] with networks: networks only.",
    )
    networks = UniqueListField(
        error_messages=LIST_NULL,
        child=serializers.ChoiceField(
            choices=list(ZOO_NAMES),
            error_messages={"invalid_choice": "is not a zoo model, got {input!r} (`latencylab zoo list` lists them)"},
        ),
        required=False,
        help_text="Zoo networks every tenant runs one inference of (resnet18, mobilenet_v2, ...; default none).",
    )
    tenants = UniqueListField(
        error_messages=LIST_NULL,
        child=StrictIntegerField(min_value=1, max_value=MAX_TENANTS),
        required=False,
        min_length=1,
        max_length=MAX_TENANT_COUNTS,
        help_text="The R values: how many tenants share the device (default [1, 2, 4, 8, 10, 16, 20, 32, 64, 120]).",
    )
    strategies = UniqueListField(
        error_messages=LIST_NULL,
        child=serializers.ChoiceField(
            choices=list(STRATEGIES),
            error_messages={
                "invalid_choice": f"is not a strategy, got {{input!r}}; the strategies are {list(STRATEGIES)}"
            },
        ),
        required=False,
        min_length=1,
        help_text="Default: all but space_time_clblast (CLBlast's batched GEMM, optional on the worker).",
    )
    warmup = StrictIntegerField(
        required=False, min_value=0, max_value=MAX_WARMUP_RUNS, help_text="Rounds dropped per (workload, R); default 3."
    )
    runs = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_RUNS, help_text="Rounds kept per (workload, R); default 20."
    )
    seed = StrictIntegerField(
        required=False, min_value=0, max_value=MAX_SEED, help_text="Seeds every tenant's data; default 0."
    )
    memory_cap_bytes = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_MEMORY_CAP_BYTES,
        help_text="A memory budget below the device's global memory (default null: the device's); a strategy "
        "whose footprint is over it is a memory_bound row.",
    )
    ceiling = StrictBooleanField(
        required=False, help_text="Measure numpy's SGEMM on the worker's cores beside (default true)."
    )


class SharingTimeBudgetField(_FlatErrors, StrictNumberField):
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


class SharingSweepCreateSerializer(_ObjectRequestSerializer):
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
    "MAX_DIMENSION",
    "ZOO_NAMES",
    "SharingSpecSerializer",
    "SharingSweepCreateSerializer",
    "SharingSweepRequest",
]
