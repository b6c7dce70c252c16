"""API views of sharing sweeps: thin wrappers that scope jobs to the caller's team and call
``server.tenancy.services``.

A sweep is a job: its id is the job's, ``GET /api/jobs/?kind=sharing_sweep`` lists it, and
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

from server.api.parsers import FastJSONParser
from server.api.sharing_filters import SharingJobFilterSet, SharingRowFilterSet
from server.api.sharing_requests import SharingSweepCreateSerializer, SharingSweepRequest
from server.api.sharing_serializers import SharingJobSerializer, SharingRowSerializer, SharingSweepDetailSerializer
from server.profiling.models import JobKind, ProfilingJob
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
class SharingSweepViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Sharing sweeps of your team: R tenants on one OpenCL device, four ways (seed 003, table 1)."""

    parser_classes = [FastJSONParser]  # the body is a JSON object: a form could not send it

    @property
    def filterset_class(self) -> type[Any]:
        """The rows' parameters on the rows, the list's elsewhere (what the schema documents)."""
        return SharingRowFilterSet if getattr(self, "action", None) == "rows" else SharingJobFilterSet

    def get_queryset(self) -> QuerySet[ProfilingJob]:
        """Only the caller's team's sharing sweeps: another team's ids, and other kinds, answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return ProfilingJob.objects.none()
        jobs = ProfilingJob.objects.for_team(self.request.team).filter(kind=JobKind.SHARING_SWEEP)
        jobs = jobs.select_related("device")
        return jobs.select_related("sharing_sweep") if self.action == "retrieve" else jobs

    def get_serializer_class(self) -> type[BaseSerializer]:
        """The result summary on the detail page."""
        return SharingSweepDetailSerializer if self.action == "retrieve" else SharingJobSerializer

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
        incoming = SharingSweepCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data: SharingSweepRequest = incoming.validated_data
        raw = {k: v for k, v in data.items() if k != "device"}
        job = submit_sharing_sweep(request.team, data["device"], raw, user=request.user)
        body = SharingSweepDetailSerializer(job, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED)

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
        # Not get_object(): it would run this action's filters (the rows') on the jobs.
        job = get_object_or_404(self.get_queryset(), pk=pk)
        self.check_object_permissions(request, job)
        query = SharingRowFilterSet(request.query_params, queryset=SharingMeasurement.objects.none(), request=request)
        if not query.is_valid():
            # A bad ``detail`` parameter's message is the answer's ``detail`` string, as in every
            # error answer of the API; the other parameters' are lists under their names.
            raise ValidationError({k: " ".join(v) if k == "detail" else v for k, v in query.errors.items()})
        sweep = SharingSweepResult.objects.filter(job=job).first()
        rows = (
            SharingMeasurement.objects.none()
            if sweep is None
            else sharing_rows(sweep, **query.sharing_rows_arguments())
        )
        page = self.paginate_queryset(rows)
        context = {**self.get_serializer_context(), "detail": query.wants_detail}
        return self.get_paginated_response(SharingRowSerializer(page, many=True, context=context).data)
