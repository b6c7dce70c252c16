"""API views of fusion sweeps and plans: thin wrappers that scope jobs to the caller's team and
call ``server.fusion.services``.

A sweep or plan is a job: its id is the job's, ``GET /api/jobs/`` lists it (``?kind=``), and
``POST /api/jobs/{id}/cancel/`` cancels it; these views add how to queue one and what it stored.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from server.api.fusion_filters import FusionJobFilterSet, FusionRowFilterSet
from server.api.fusion_requests import (
    FusionPlanCreateSerializer,
    FusionPlanRequest,
    FusionSweepCreateSerializer,
    FusionSweepRequest,
)
from server.api.fusion_serializers import (
    FusionJobSerializer,
    FusionPlanDetailSerializer,
    FusionRowSerializer,
    FusionSweepDetailSerializer,
)
from server.api.parsers import FastJSONParser
from server.fusion.models import FusionMeasurement, FusionSweepResult
from server.fusion.services import submit_fusion_plan, submit_fusion_sweep, sweep_rows
from server.profiling.models import JobKind, ProfilingJob

# The schema's examples: a small sweep (three kinds, pairs, two networks; a few minutes on a CPU's
# OpenCL driver) and figure 11's two MobileNet-V2 planned without a sweep.
SWEEP_EXAMPLE = {
    "device": 2,
    "zoo": ["mobilenet_v2", "squeezenet_1_0"],
    "spec": {"sizes": [2], "kinds": ["C_1x1", "DWC_s1", "EW"], "runs": 10, "warmup": 2, "identical_counts": [1, 2]},
}
PLAN_EXAMPLE = {"device": 2, "zoo": ["mobilenet_v2", "mobilenet_v2"], "options": {"runs": 10}, "sweep": False}
BAD_REQUEST = OpenApiResponse(
    description="bad fields, or a device that is not an online OpenCL device, a model that is not your team's "
    "ready one, more networks than a job takes, a time budget over the task limit; each message names its field"
)


class _FusionJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The team's jobs of one fusion kind, newest first."""

    job_kind: str = ""
    parser_classes = [FastJSONParser]  # the bodies are JSON objects: a form could not send them
    filterset_class = FusionJobFilterSet

    def get_queryset(self) -> QuerySet[ProfilingJob]:
        """Only the caller's team's jobs of this kind: another team's ids, and other kinds, answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return ProfilingJob.objects.none()
        jobs = ProfilingJob.objects.for_team(self.request.team).filter(kind=self.job_kind).select_related("device")
        if self.action == "retrieve":
            jobs = jobs.select_related("fusion_sweep" if self.job_kind == JobKind.FUSION_SWEEP else "fusion_plan")
        return jobs

    def _created(self, job: ProfilingJob, serializer: type[BaseSerializer]) -> Response:
        body = serializer(job, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED)


@extend_schema_view(
    list=extend_schema(summary="List your team's fusion sweeps", description="Newest first; `?state=`, `?device=`."),
    retrieve=extend_schema(
        summary="A fusion sweep: its job, progress and result summary",
        description="`result` is null until the sweep succeeded; then it holds what was measured (networks, wave "
        "size, spec, combinations planned and sampled, notes, timings) and `row_counts`. The rows are at "
        "`links.rows`.",
    ),
)
class FusionSweepViewSet(_FusionJobViewSet):
    """Fusion sweeps of your team (seed paper 000, figures 8 to 10)."""

    job_kind = JobKind.FUSION_SWEEP

    @property
    def filterset_class(self) -> type[Any]:  # type: ignore[override]
        """The rows' parameters on the rows, the list's elsewhere (what the schema documents)."""
        return FusionRowFilterSet if getattr(self, "action", None) == "rows" else FusionJobFilterSet

    def get_serializer_class(self) -> type[BaseSerializer]:
        """The result summary on the detail page."""
        return FusionSweepDetailSerializer if self.action == "retrieve" else FusionJobSerializer

    @extend_schema(
        summary="Queue a fusion sweep",
        description="Measures 2- and 3-combinations of operator kinds, and N identical operators (figure 9), "
        "sequential against fused, with and without rounding to the wave, on an OpenCL device. Without `zoo` and "
        "`models`, the six networks of ParallelFusion's table 1. Cancel it with POST /api/jobs/{id}/cancel/.",
        request=FusionSweepCreateSerializer,
        examples=[OpenApiExample("Pairs of three kinds in two networks", value=SWEEP_EXAMPLE, request_only=True)],
        responses={201: FusionSweepDetailSerializer, 400: BAD_REQUEST},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a sweep on a device."""
        incoming = FusionSweepCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data: FusionSweepRequest = incoming.validated_data
        raw = {k: v for k, v in data.items() if k != "device"}
        job = submit_fusion_sweep(request.team, data["device"], raw, user=request.user)
        return self._created(job, FusionSweepDetailSerializer)

    @extend_schema(
        summary="A fusion sweep's rows",
        description="One row per set of operators and fused variant, in the sweep's order (pairs, triples, then "
        "identical operators); empty until the sweep succeeded. Each row's whole data (raw samples) only with "
        "`?detail=true`.",
        responses={200: FusionRowSerializer(many=True)},
        filters=True,
    )
    @action(detail=True, methods=["get"])
    def rows(self, request: Request, pk: str | None = None) -> Response:
        """The sweep's rows, filtered and paginated."""
        # Not get_object(): it would run this action's filters (the rows') on the jobs.
        job = get_object_or_404(self.get_queryset(), pk=pk)
        self.check_object_permissions(request, job)
        query = FusionRowFilterSet(request.query_params, queryset=FusionMeasurement.objects.none(), request=request)
        if not query.is_valid():
            # A bad ``detail`` parameter's message is the answer's ``detail`` string, as in every
            # error answer of the API; the other parameters' are lists under their names.
            raise ValidationError({k: " ".join(v) if k == "detail" else v for k, v in query.errors.items()})
        sweep = FusionSweepResult.objects.filter(job=job).first()
        rows = FusionMeasurement.objects.none() if sweep is None else sweep_rows(sweep, **query.sweep_rows_arguments())
        page = self.paginate_queryset(rows)
        context = {**self.get_serializer_context(), "detail": query.wants_detail}
        return self.get_paginated_response(FusionRowSerializer(page, many=True, context=context).data)


@extend_schema_view(
    list=extend_schema(summary="List your team's fusion plans", description="Newest first; `?state=`, `?device=`."),
    retrieve=extend_schema(
        summary="A fusion plan: its job, progress and comparison",
        description="`result` is null until the plan succeeded; then it holds the networks' end-to-end time run "
        "together sequentially, as planned and fusing everything possible, the ratios and the output checks.",
    ),
)
class FusionPlanViewSet(_FusionJobViewSet):
    """Fusion plans of your team: networks run together, kernels grouped by the planner."""

    job_kind = JobKind.FUSION_PLAN

    def get_serializer_class(self) -> type[BaseSerializer]:
        """The comparison on the detail page."""
        return FusionPlanDetailSerializer if self.action == "retrieve" else FusionJobSerializer

    @extend_schema(
        summary="Queue a fusion plan",
        description="Plans which independent kernels of the networks to fuse at each step, from a sweep's "
        "measurements (`sweep`) and a latency model, and runs sequential, the plan and fuse-all end to end with "
        "checked outputs. Without `zoo` and `models`, two MobileNet-V2 (figure 11).",
        request=FusionPlanCreateSerializer,
        examples=[OpenApiExample("Two MobileNet-V2, no sweep", value=PLAN_EXAMPLE, request_only=True)],
        responses={201: FusionPlanDetailSerializer, 400: BAD_REQUEST},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a plan on a device."""
        incoming = FusionPlanCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data: FusionPlanRequest = incoming.validated_data
        raw = {k: v for k, v in data.items() if k != "device"}
        job = submit_fusion_plan(request.team, data["device"], raw, user=request.user)
        return self._created(job, FusionPlanDetailSerializer)
