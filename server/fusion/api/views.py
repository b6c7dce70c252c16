"""API views of fusion sweeps and plans: thin wrappers that scope jobs to the caller's team and
call ``server.fusion.services``.

A sweep or plan is a job: its id is the job's, ``GET /api/jobs/`` lists it (``?kind=``), and
``POST /api/jobs/{id}/cancel/`` cancels it; these views add how to queue one and what it stored.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from server.fusion.api.filters import FusionJobFilterSet, FusionRowFilterSet
from server.fusion.api.requests import FusionPlanCreateSerializer, FusionSweepCreateSerializer
from server.fusion.api.serializers import (
    FusionJobSerializer,
    FusionPlanDetailSerializer,
    FusionRowSerializer,
    FusionSweepDetailSerializer,
)
from server.fusion.models import FusionMeasurement, FusionSweepResult
from server.fusion.services import submit_fusion_plan, submit_fusion_sweep, sweep_rows
from server.profiling.api.experiment_jobs import ExperimentJobViewSet
from server.profiling.models import JobKind

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


@extend_schema_view(
    list=extend_schema(summary="List your team's fusion sweeps", description="Newest first; `?state=`, `?device=`."),
    retrieve=extend_schema(
        summary="A fusion sweep: its job, progress and result summary",
        description="`result` is null until the sweep succeeded; then it holds what was measured (networks, wave "
        "size, spec, combinations planned and sampled, notes, timings) and `row_counts`. The rows are at "
        "`links.rows`.",
    ),
)
class FusionSweepViewSet(ExperimentJobViewSet):
    """Fusion sweeps of your team (seed paper 000, figures 8 to 10)."""

    job_kind = JobKind.FUSION_SWEEP
    result_relation = "fusion_sweep"
    list_serializer = FusionJobSerializer
    detail_serializer = FusionSweepDetailSerializer
    job_filterset = FusionJobFilterSet
    row_filterset = FusionRowFilterSet

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
        return self.queue_on_device(request, FusionSweepCreateSerializer, submit_fusion_sweep)

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
        return self.rows_response(request, pk, FusionSweepResult, FusionRowSerializer)

    def rows_of(self, stored: FusionSweepResult, query: FusionRowFilterSet) -> QuerySet[FusionMeasurement]:
        """The sweep's rows as the rows' parameters narrow them."""
        return sweep_rows(stored, **query.sweep_rows_arguments())


@extend_schema_view(
    list=extend_schema(summary="List your team's fusion plans", description="Newest first; `?state=`, `?device=`."),
    retrieve=extend_schema(
        summary="A fusion plan: its job, progress and comparison",
        description="`result` is null until the plan succeeded; then it holds the networks' end-to-end time run "
        "together sequentially, as planned and fusing everything possible, the ratios and the output checks.",
    ),
)
class FusionPlanViewSet(ExperimentJobViewSet):
    """Fusion plans of your team: networks run together, kernels grouped by the planner."""

    job_kind = JobKind.FUSION_PLAN
    result_relation = "fusion_plan"
    list_serializer = FusionJobSerializer
    detail_serializer = FusionPlanDetailSerializer
    job_filterset = FusionJobFilterSet

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
        return self.queue_on_device(request, FusionPlanCreateSerializer, submit_fusion_plan)
