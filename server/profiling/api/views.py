"""The profiling jobs' API views: thin wrappers that scope jobs to the caller's team and call the services."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from server.api.parsers import FastJSONParser
from server.profiling.api.filters import JobFilterSet
from server.profiling.api.serializers import JobCreateSerializer, JobDetailSerializer, JobRequest, JobSerializer
from server.profiling.models import OperatorTiming, ProfilingJob
from server.profiling.services import cancel_job, submit_profiling_job


@extend_schema_view(
    list=extend_schema(summary="List your team's jobs"),
    retrieve=extend_schema(summary="A job with its result and per-operator timings"),
)
class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Profiling jobs of your team."""

    filterset_class = JobFilterSet
    # A job's settings are a JSON object: a form could not send them (415, not a job without them).
    parser_classes = [FastJSONParser]

    def get_queryset(self) -> QuerySet[ProfilingJob]:
        """Only the caller's team's jobs: another team's ids answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return ProfilingJob.objects.none()
        # A job shows its model's name: the model's parsed graph (megabytes) stays in the database.
        jobs: QuerySet[ProfilingJob] = (
            ProfilingJob.objects.for_team(self.request.team)
            .select_related("model", "device")
            .defer("model__graph", "model__summary")
        )
        if self.action == "retrieve":
            ordered = Prefetch("result__operators", queryset=OperatorTiming.objects.order_by("pk"))
            jobs = jobs.select_related("result").prefetch_related(ordered)
        return jobs

    def get_serializer_class(self) -> type[BaseSerializer]:
        """Results only on the detail page."""
        return JobDetailSerializer if self.action in ("retrieve", "create") else JobSerializer

    @extend_schema(
        summary="Queue a profiling job",
        request=JobCreateSerializer,
        examples=[
            OpenApiExample(
                "30 timed runs on one thread",
                value={"model": 1, "device": 1, "settings": {"threads": 1, "warmup_runs": 5, "runs": 30}},
                request_only=True,
            )
        ],
        responses={
            201: JobDetailSerializer,
            400: OpenApiResponse(
                description="unknown model or device, device offline, or bad settings; the field's message says which"
            ),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a job for one of your models on a device."""
        incoming = JobCreateSerializer(data=request.data, context={"team": request.team})
        incoming.is_valid(raise_exception=True)
        data: JobRequest = incoming.validated_data
        job = submit_profiling_job(request.team, data["model"], data["device"], data["settings"], user=request.user)
        body = JobDetailSerializer(job, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Cancel a queued or running job",
        request=None,
        responses={200: JobSerializer, 409: OpenApiResponse(description="the job already finished")},
    )
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """Cancel; a running job stops at its worker's next progress report."""
        job = self.get_object()
        if not cancel_job(job, user=request.user):
            return Response(
                {"detail": f"job #{job.pk} already {job.state}; only queued or running jobs can be cancelled"},
                status=status.HTTP_409_CONFLICT,
            )
        return Response(JobSerializer(job, context=self.get_serializer_context()).data)
