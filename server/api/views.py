"""API views: thin wrappers that scope rows to the caller's team and call the services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from server.api.filters import DeviceFilterSet, JobFilterSet
from server.api.parsers import FastJSONParser
from server.api.serializers import (
    DeviceSerializer,
    GraphDocumentSerializer,
    JobCreateSerializer,
    JobDetailSerializer,
    JobRequest,
    JobSerializer,
    ModelUploadSerializer,
    NetworkModelDetailSerializer,
    NetworkModelSerializer,
)
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.networks.services import UploadTooLarge, check_upload_size, upload_model
from server.profiling.models import OperatorTiming, ProfilingJob
from server.profiling.services import cancel_job, submit_profiling_job

# Multipart framing and the form's other fields ride on top of the model file itself.
_MULTIPART_SLACK = 64 * 1024


@extend_schema_view(
    list=extend_schema(summary="List your team's models"),
    retrieve=extend_schema(summary="A model with its operator table"),
)
class NetworkModelViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Networks your team uploaded."""

    parser_classes = [MultiPartParser, FastJSONParser]

    def get_queryset(self) -> QuerySet[NetworkModel]:
        """Only the caller's team's models: another team's ids answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return NetworkModel.objects.none()
        return NetworkModel.objects.for_team(self.request.team).select_related("created_by")

    def get_serializer_class(self) -> type[BaseSerializer]:
        """The operator table only on the detail page."""
        return NetworkModelDetailSerializer if self.action in ("retrieve", "create") else NetworkModelSerializer

    @extend_schema(
        summary="Upload a model",
        description="Send the file as multipart field `file` (ONNX, TFLite or graph JSON; optional `name`), or send "
        "a graph JSON document (schema_version 1) as the request body. The same bytes uploaded again "
        "return the existing model with 200.",
        request={"multipart/form-data": ModelUploadSerializer, "application/json": GraphDocumentSerializer},
        parameters=[OpenApiParameter("name", str, description="display name, for a JSON body")],
        responses={
            201: NetworkModelDetailSerializer,
            200: NetworkModelDetailSerializer,
            400: OpenApiResponse(
                description="the file is missing, empty or not a network we can read; "
                "`detail` says why and `error` names node, op and reason"
            ),
            413: OpenApiResponse(description="the file is over LATENCYLAB_MAX_UPLOAD_BYTES"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Upload a network file or a graph JSON body."""
        limit = settings.LATENCYLAB_MAX_UPLOAD_BYTES
        try:
            declared = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            declared = 0
        if declared > limit + _MULTIPART_SLACK:
            # Refuse before reading the body: no point receiving 2 GB to say it is too big.
            raise UploadTooLarge(
                f"the upload is {declared} bytes; the limit is {limit} bytes (LATENCYLAB_MAX_UPLOAD_BYTES)"
            )
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        if content_type == "application/json":
            data = request.body  # the raw bytes: their hash is what makes a re-upload the same model
            filename = "graph.json"
            name = request.query_params.get("name")
        elif content_type == "multipart/form-data":
            upload = request.FILES.get("file")
            if upload is None:
                raise ValidationError(
                    {
                        "file": "no file was sent: put the model in the multipart field 'file' "
                        "(or send a graph JSON document as an application/json body)"
                    }
                )
            check_upload_size(upload.size or 0)
            data = upload.read()
            filename = upload.name or "model"
            name = request.data.get("name")
        else:
            raise UnsupportedMediaType(
                content_type or "(none)",
                detail=f"unsupported content type {content_type or '(none)'!r}: send "
                "multipart/form-data with a 'file' field, or application/json",
            )
        model, created = upload_model(request.team, request.user, data, filename, name=name)
        body = NetworkModelDetailSerializer(model, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


@extend_schema_view(
    list=extend_schema(summary="List the lab's devices"),
    retrieve=extend_schema(summary="A device"),
)
class DeviceViewSet(viewsets.ReadOnlyModelViewSet):
    """The lab's devices; they are shared by every team."""

    serializer_class = DeviceSerializer
    queryset = Device.objects.all()
    filterset_class = DeviceFilterSet


@extend_schema_view(
    list=extend_schema(summary="List your team's jobs"),
    retrieve=extend_schema(summary="A job with its result and per-operator timings"),
)
class JobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Profiling jobs of your team."""

    filterset_class = JobFilterSet

    def get_queryset(self) -> QuerySet[ProfilingJob]:
        """Only the caller's team's jobs: another team's ids answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return ProfilingJob.objects.none()
        jobs: QuerySet[ProfilingJob] = ProfilingJob.objects.for_team(self.request.team).select_related(
            "model", "device"
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
        if not cancel_job(job):
            return Response(
                {"detail": f"job #{job.pk} already {job.state}; only queued or running jobs can be cancelled"},
                status=status.HTTP_409_CONFLICT,
            )
        return Response(JobSerializer(job, context=self.get_serializer_context()).data)
