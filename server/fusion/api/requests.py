"""The request bodies that queue fusion sweeps and plans: one serializer per body that both
validates it (the view calls ``is_valid``) and documents it in ``/api/schema/``.

They check the wire format: JSON types as sent, bounds, no unknown keys, and a list's items at
most once where the schema says ``uniqueItems``. Whether the device is an online OpenCL device,
the model ids the team's ready models, the networks at most ``MAX_NETWORKS`` and the time budget
within the task's limit is the service's answer (``server.fusion.services``). Either way the
answer is a 400 whose messages name the field; inside ``spec`` and ``options``, and in the lists,
they are one flat list naming the key (``spec.sizes[1] must be between 1 and 8, got 9``), as the
service's are and as ``settings`` errors of profiling jobs are.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from django.conf import settings as django_settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from devicelab.fusion.spec import PRECISIONS, PlanOptions, SweepSpec
from devicelab.graph import zoo
from devicelab.spec import declared
from server.api.fields import MAX_ID, IdField, StrictIntegerField
from server.api.requests import ListOfField, NestedObjectSerializer, ObjectRequestSerializer, StrictNumberField
from server.api.spec_fields import check_whole, spec_fields
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.fusion.services import MAX_NETWORKS, TIME_LIMIT_MARGIN_S


class TimeBudgetField(StrictNumberField):
    """Seconds a sweep may spend measuring: at most the task's time limit less the margin the
    worker keeps to store the rows (read when the request comes, like every setting)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("min_value", 1.0)
        kwargs.setdefault("max_value", float(django_settings.LATENCYLAB_TASK_TIME_LIMIT - TIME_LIMIT_MARGIN_S))
        super().__init__(**kwargs)


class FusionSpecSerializer(NestedObjectSerializer):
    """What a sweep measures and how (``devicelab.fusion.sweep.SweepSpec``); keys left out take
    their defaults (see docs/fusion.md)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        """``SweepSpec``'s fields as it declares them; the time budget also within the task's limit."""
        return spec_fields(
            SweepSpec,
            time_budget_s=TimeBudgetField(
                required=False, allow_null=True, help_text=declared(SweepSpec, "time_budget_s").help
            ),
        )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The spec's rules across its fields (``SweepSpec``'s own)."""
        check_whole(SweepSpec, attrs)
        return attrs


class _NetworksRequestSerializer(ObjectRequestSerializer):
    """The keys every fusion request has: the device, the networks and the precision. Keys left out
    stay out of ``validated_data``: the service chooses the default networks only when neither
    ``zoo`` nor ``models`` is given."""

    device = IdField("device", help_text="Id of an online OpenCL device (GET /api/devices/?kind=opencl).")
    zoo = ListOfField(
        child=serializers.ChoiceField(
            choices=sorted(zoo.entries()),
            error_messages={"invalid_choice": "is not a zoo model, got {input!r} (`latencylab zoo list` lists them)"},
        ),
        required=False,
        max_length=MAX_NETWORKS,
        help_text="Zoo networks by name (`latencylab zoo list`); a name may repeat (two networks run together).",
    )
    models = ListOfField(
        child=StrictIntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        max_length=MAX_NETWORKS,
        help_text=f"Ids of your team's ready models. With zoo, 1 to {MAX_NETWORKS} networks in all.",
    )
    precision = serializers.ChoiceField(
        choices=list(PRECISIONS),
        required=False,
        help_text="Default fp32.",
        error_messages={"invalid_choice": f"{{input!r}} is not one of {list(PRECISIONS)}"},
    )

    def validate_device(self, value: int) -> Device:
        """A registered device (the service checks it is an online OpenCL one)."""
        return existing_device(value)


class FusionSweepRequest(TypedDict, total=False):
    """A validated ``POST /api/fusion/sweeps/`` body: the device, and the keys the service reads."""

    device: Device
    zoo: list[str]
    models: list[int]
    precision: str
    spec: dict[str, Any]


class FusionSweepCreateSerializer(_NetworksRequestSerializer):
    """What a client sends to queue a fusion sweep on an OpenCL device."""

    spec = FusionSpecSerializer(required=False, help_text="What to measure; keys left out take their defaults.")

    def run_validation(self, data: Any = empty) -> FusionSweepRequest:
        """The request (keys left out stay out: without zoo and models, the six table-1 networks)."""
        return cast(FusionSweepRequest, super().run_validation(data))


class FusionPlanOptionsSerializer(NestedObjectSerializer):
    """How the planner groups kernels and how the three strategies are timed
    (``devicelab.fusion.spec.PlanOptions``); keys left out take their defaults."""

    def get_fields(self) -> dict[str, serializers.Field]:
        """``PlanOptions``'s fields as it declares them."""
        return spec_fields(PlanOptions)


@extend_schema_field(
    {
        "oneOf": [
            {"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID},
            {"type": "boolean", "enum": [False]},
        ],
        "description": "A succeeded sweep's job id whose measurements the planner uses; false: none (the latency "
        "model alone); left out: the team's newest succeeded sweep on the device.",
    }
)
class PlanSweepField(serializers.Field):
    """A sweep's job id, or ``false``."""

    default_error_messages = {"invalid": "sweep must be a sweep's job id (a positive integer) or false, got {value!r}"}

    def to_internal_value(self, data: Any) -> int | bool:
        """The id, or False."""
        if data is False:
            return False
        if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= MAX_ID:
            self.fail("invalid", value=data)
        return int(data)

    def to_representation(self, value: Any) -> Any:
        """As stored."""
        return value


class FusionPlanRequest(TypedDict, total=False):
    """A validated ``POST /api/fusion/plans/`` body."""

    device: Device
    zoo: list[str]
    models: list[int]
    precision: str
    options: dict[str, Any]
    sweep: int | bool


class FusionPlanCreateSerializer(_NetworksRequestSerializer):
    """What a client sends to plan and run fusion for networks run together on an OpenCL device."""

    options = FusionPlanOptionsSerializer(required=False, help_text="Keys left out take the planner's defaults.")
    sweep = PlanSweepField(required=False)

    def run_validation(self, data: Any = empty) -> FusionPlanRequest:
        """The request (without zoo and models: two MobileNet-V2, figure 11)."""
        return cast(FusionPlanRequest, super().run_validation(data))


__all__ = [
    "FusionPlanCreateSerializer",
    "FusionPlanRequest",
    "FusionSpecSerializer",
    "FusionSweepCreateSerializer",
    "FusionSweepRequest",
]
