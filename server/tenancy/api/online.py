"""The online-scheduling API: ``/api/sharing/online/``. A run is a job (kind ``online_schedule``):
``GET /api/jobs/?kind=online_schedule`` lists it and ``POST /api/jobs/{id}/cancel/`` cancels it;
these views queue one and show what it stored (the comparison of the policies on one trace)."""

from __future__ import annotations

from typing import Any, TypedDict, cast

from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.request import Request
from rest_framework.response import Response

from devicelab.tenancy.online_spec import OnlineSpec
from server.api.fields import IdField
from server.api.requests import NestedObjectSerializer, ObjectRequestSerializer
from server.api.spec_fields import check_whole, spec_fields
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.profiling.api.experiment_jobs import (
    ExperimentJobSerializer,
    ExperimentJobViewSet,
    job_links,
    stored_result,
    url_of,
)
from server.profiling.models import JobKind, ProfilingJob
from server.tenancy.api.filters import SharingJobFilterSet
from server.tenancy.models import OnlineRunResult
from server.tenancy.services import submit_online_run

ONLINE_EXAMPLE = {"device": 2, "spec": {"workload": "256x128x1152", "tenants": 4, "load": 0.8, "duration_s": 2}}


class OnlineSpecSerializer(NestedObjectSerializer):
    """What an online-scheduling run replays (``devicelab.tenancy.online_spec.OnlineSpec``)."""

    def get_fields(self) -> dict[str, serializers.Field]:
        """``OnlineSpec``'s fields as it declares them."""
        return spec_fields(OnlineSpec)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The spec's rules across its fields (a network-only policy needs a network)."""
        check_whole(OnlineSpec, attrs)
        return attrs


class OnlineRunRequest(TypedDict, total=False):
    """A validated ``POST /api/sharing/online/`` body."""

    device: Device
    spec: dict[str, Any]


class OnlineRunCreateSerializer(ObjectRequestSerializer):
    """What a client sends to queue an online-scheduling run on an OpenCL device."""

    device = IdField("device", help_text="Id of an online OpenCL device (GET /api/devices/?kind=opencl).")
    spec = OnlineSpecSerializer(required=False, help_text="What to replay; keys left out take their defaults.")

    def validate_device(self, value: int) -> Device:
        """A registered device (the service checks it is an online OpenCL one)."""
        return existing_device(value)

    def run_validation(self, data: Any = empty) -> OnlineRunRequest:
        """The request (keys left out stay out: the service fills in the defaults)."""
        return cast(OnlineRunRequest, super().run_validation(data))


class OnlineLinksSerializer(serializers.Serializer):
    """Where to read more of a run, and how to cancel it."""

    self = serializers.URLField()
    job = serializers.URLField(help_text="The job (GET /api/jobs/{id}/).")
    cancel = serializers.URLField(help_text="POST here to cancel it while queued or running.")


class OnlineJobSerializer(ExperimentJobSerializer):
    """A run as listed: the job's state and progress, its settings."""

    settings = serializers.JSONField(read_only=True, help_text="As checked at submission: the complete spec.")

    @extend_schema_field(OnlineLinksSerializer)
    def get_links(self, obj: ProfilingJob) -> dict[str, Any]:
        """URLs of this run, its job and its cancel."""
        request = self.context.get("request")
        return {"self": url_of("online-run-detail", obj.pk, request), **job_links(obj.pk, request)}


class OnlineRunSummarySerializer(serializers.ModelSerializer):
    """What a finished run measured: t1 and the units it set, and every policy on the same trace."""

    device = serializers.JSONField(help_text="The OpenCL device as the worker described it.")
    spec = serializers.JSONField(help_text="The complete spec the worker ran (OnlineSpec).")
    comparison = serializers.JSONField(
        help_text="Per policy: policy, status, attainment (share of requests within target), per_s, goodput_per_s, "
        "gflops, p50_ms, p99_ms, mean_batch, outputs_correct."
    )
    policies = serializers.JSONField(
        help_text="Per policy: overall, per_tenant, batches, checks (no per-request list)."
    )
    trace = serializers.JSONField(help_text="The trace's seed, tenants' loads and summary.")
    notes = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = OnlineRunResult
        fields = [
            "attempt",
            "device_name",
            "device",
            "spec",
            "t1_ms",
            "target_ms",
            "window_ms",
            "offered_per_s",
            "comparison",
            "policies",
            "trace",
            "notes",
            "elapsed_s",
            "created_at",
        ]
        read_only_fields = fields


class OnlineRunDetailSerializer(OnlineJobSerializer):
    """A run with its result (null until it succeeded)."""

    result = serializers.SerializerMethodField()

    class Meta(OnlineJobSerializer.Meta):
        fields = [*OnlineJobSerializer.Meta.fields, "result"]
        read_only_fields = fields

    @extend_schema_field(OnlineRunSummarySerializer(allow_null=True))
    def get_result(self, obj: ProfilingJob) -> dict[str, Any] | None:
        """The stored run, or None."""
        return stored_result(obj, "online_run", OnlineRunSummarySerializer)


@extend_schema_view(
    list=extend_schema(summary="List your team's online-scheduling runs", description="Newest first."),
    retrieve=extend_schema(
        summary="An online-scheduling run: its job, progress and result",
        description="`result` is null until the run succeeded; then t1 (one request alone), the target and "
        "window it set, and every policy's attainment, throughput and latency on the same trace.",
    ),
)
class OnlineRunViewSet(ExperimentJobViewSet):
    """Online-scheduling runs of your team: one arrival trace replayed under every policy (seed 003, section 4)."""

    job_kind = JobKind.ONLINE_SCHEDULE
    result_relation = "online_run"
    list_serializer = OnlineJobSerializer
    detail_serializer = OnlineRunDetailSerializer
    job_filterset = SharingJobFilterSet

    @extend_schema(
        summary="Queue an online-scheduling run",
        description="Measures t1 (one request of one tenant alone) on an OpenCL device, then replays one seeded "
        "Poisson trace of R tenants under time-only, space-only and space-time (and space_time_native for a "
        "network), every output checked against the tenant's exclusive run.",
        request=OnlineRunCreateSerializer,
        examples=[OpenApiExample("Four tenants at 0.8 load", value=ONLINE_EXAMPLE, request_only=True)],
        responses={
            201: OnlineRunDetailSerializer,
            400: OpenApiResponse(description="bad fields, or a device that is not an online OpenCL device"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a run on a device."""
        return self.queue_on_device(request, OnlineRunCreateSerializer, submit_online_run)


__all__ = ["OnlineRunCreateSerializer", "OnlineRunDetailSerializer", "OnlineRunViewSet"]
