"""API views of sharing sweeps: thin wrappers that scope jobs to the caller's team and call
``server.tenancy.services``.

A sweep is a job: its id is the job's, ``GET /api/jobs/?kind=sharing_sweep`` lists it, and
``POST /api/jobs/{id}/cancel/`` cancels it; these views add how to queue one and what it stored.
"""

from __future__ import annotations

from typing import Any

from django.db.models import F, QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from server.profiling.api.experiment_jobs import ExperimentJobViewSet
from server.profiling.models import JobKind
from server.tenancy.api.filters import SharingJobFilterSet, SharingRowFilterSet
from server.tenancy.api.requests import SharingSweepCreateSerializer
from server.tenancy.api.serializers import SharingJobSerializer, SharingRowSerializer, SharingSweepDetailSerializer
from server.tenancy.models import SharingMeasurement, SharingSweepResult
from server.tenancy.services import sharing_rows, submit_sharing_sweep

# The schema's example: one of the paper's shapes, R = 1, 2, 4, 8, the four ways of sharing, few
# rounds (about a minute on a CPU's OpenCL driver).
SWEEP_EXAMPLE = {
    "device": 2,
    "spec": {
        "shapes": [[256, 128, 1152]],
        "tenants": [1, 2, 4, 8],
        "strategies": ["exclusive", "time_only", "space_only", "space_time"],
        "runs": 5,
        "warmup": 1,
        "ceiling": False,
    },
    "time_budget_s": 600,
}
BAD_REQUEST = OpenApiResponse(
    description="bad fields, or a device that is not an online OpenCL device, a spec without a shape or network, "
    "a time budget over the task limit; each message names its field"
)


@extend_schema_view(
    list=extend_schema(summary="List your team's sharing sweeps", description="Newest first; `?state=`, `?device=`."),
    retrieve=extend_schema(
        summary="A sharing sweep: its job, progress and result summary",
        description="`result` is null until the sweep succeeded; then it holds what was measured (device, spec, "
        "workloads, numpy's ceiling, table 1, the largest R per strategy, notes, whether the time budget let it "
        "complete and which units it left out, timings) and `row_counts`. The rows are at `links.rows`.",
    ),
)
class SharingSweepViewSet(ExperimentJobViewSet):
    """Sharing sweeps of your team: R tenants on one OpenCL device, four ways (seed 003, table 1)."""

    job_kind = JobKind.SHARING_SWEEP
    result_relation = "sharing_sweep"
    list_serializer = SharingJobSerializer
    detail_serializer = SharingSweepDetailSerializer
    job_filterset = SharingJobFilterSet
    row_filterset = SharingRowFilterSet

    @extend_schema(
        summary="Queue a sharing sweep",
        description="Measures R tenants sharing an OpenCL device: exclusive, exclusive batched, time-only, "
        "space-only and space-time (batched super-kernels), for SGEMM shapes and zoo networks, with every output "
        "checked against each tenant's exclusive run. Without `spec`: the paper's three shapes, R from 1 to 120, "
        "every strategy but CLBlast's. Cancel it with POST /api/jobs/{id}/cancel/.",
        request=SharingSweepCreateSerializer,
        examples=[OpenApiExample("One shape, R up to 8, four strategies", value=SWEEP_EXAMPLE, request_only=True)],
        responses={201: SharingSweepDetailSerializer, 400: BAD_REQUEST},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a sweep on a device."""
        return self.queue_on_device(request, SharingSweepCreateSerializer, submit_sharing_sweep)

    @extend_schema(
        summary="A sharing sweep's rows",
        description="One row per workload, R and strategy, in the order they were measured; empty until the sweep "
        "succeeded. Each row's whole data (samples per round and per tenant) only with `?detail=true`.",
        responses={200: SharingRowSerializer(many=True)},
        filters=True,
    )
    @action(detail=True, methods=["get"])
    def rows(self, request: Request, pk: str | None = None) -> Response:
        """The sweep's rows, filtered and paginated."""
        return self.rows_response(request, pk, SharingSweepResult, SharingRowSerializer)

    def rows_of(self, stored: SharingSweepResult, query: SharingRowFilterSet) -> QuerySet[SharingMeasurement]:
        """The sweep's rows as the rows' parameters narrow them."""
        # the row's ratio to the ceiling is small: read from data even when data itself is left out
        return sharing_rows(stored, **query.sharing_rows_arguments()).annotate(of_ceiling_json=F("data__of_ceiling"))
