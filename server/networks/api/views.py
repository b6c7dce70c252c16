"""The networks' API views: list and show the team's models, upload one, set its accuracy."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.files.uploadedfile import UploadedFile
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import UnsupportedMediaType
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer

from server.api.parsers import FastJSONParser
from server.networks.api.serializers import (
    GRAPH_EXAMPLE,
    GraphDocumentSerializer,
    ModelAccuracySerializer,
    ModelUploadSerializer,
    NetworkModelDetailSerializer,
    NetworkModelSerializer,
)
from server.networks.models import ModelState, NetworkModel
from server.networks.services import check_declared_size, receive_model


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
        models = NetworkModel.objects.for_team(self.request.team).select_related("created_by")
        # A list never reads the parsed graph (megabytes per model); the detail reads it only to
        # build an operator table it shows (operator_table_shown).
        return models.defer("graph") if self.action == "retrieve" else models.listed()

    def get_serializer_class(self) -> type[BaseSerializer]:
        """The operator table only on the detail page."""
        return NetworkModelDetailSerializer if self.action in ("retrieve", "create") else NetworkModelSerializer

    @extend_schema(
        summary="Upload a model",
        description="Send the file as multipart field `file` (ONNX, TFLite or graph JSON; optional `name`), or send "
        "a graph JSON document (schema_version 1) as the request body. The same bytes uploaded again "
        "return the existing model with 200. A file up to LATENCYLAB_PARSE_INLINE_MAX_BYTES is parsed "
        "before the answer (201 with its operator table); a bigger one is stored and answered at once "
        "with 202 and `state` `parsing` (no operators yet, named by `name` or the file's name): the "
        "trainer parses it, and GET /api/models/{id}/ shows it `ready`, or `failed` with "
        "`failure_reason` (the refusal a smaller file gets, node named).",
        request={"multipart/form-data": ModelUploadSerializer, "application/json": GraphDocumentSerializer},
        parameters=[
            OpenApiParameter(
                "name", str, description="display name, for a JSON body (its first 200 characters are kept)"
            )
        ],
        examples=[
            OpenApiExample("A graph JSON body", value=GRAPH_EXAMPLE, request_only=True, media_type="application/json")
        ],
        responses={
            201: NetworkModelDetailSerializer,
            202: NetworkModelDetailSerializer,
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
        # Refuse before reading the body: no point receiving 2 GB to say it is too big.
        check_declared_size(request.META.get("CONTENT_LENGTH"))
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        data: bytes | UploadedFile
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
            data = upload  # a big one stays spooled on disk: receive_model moves it into storage
            filename = upload.name or "model"
            name = request.data.get("name")
        else:
            raise UnsupportedMediaType(
                content_type or "(none)",
                detail=f"unsupported content type {content_type or '(none)'!r}: send "
                "multipart/form-data with a 'file' field, or application/json",
            )
        if name and "\x00" in name:  # PostgreSQL text cannot hold it: a 500 at the save
            raise ValidationError({"name": "the name must not contain NUL characters"})
        model, created = receive_model(request.team, request.user, data, filename, name=name)
        body = NetworkModelDetailSerializer(model, context=self.get_serializer_context()).data
        if not created:
            return Response(body, status=status.HTTP_200_OK)
        parsing = model.state == ModelState.PARSING
        return Response(body, status=status.HTTP_202_ACCEPTED if parsing else status.HTTP_201_CREATED)

    @extend_schema(
        summary="Set a model's accuracy",
        description="`top1_accuracy` and `top5_accuracy` in percent (null forgets one): what model selection "
        "(POST /api/select/) trades against latency. A model named like a zoo model uses the zoo's published "
        "numbers while it has none of its own.",
        request={"application/json": ModelAccuracySerializer},
        responses={
            200: NetworkModelSerializer,
            400: OpenApiResponse(description="`detail` says which value is wrong"),
            415: OpenApiResponse(description="not a JSON body"),
        },
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """PATCH: the accuracy fields only, as JSON (numbers, not form strings)."""
        content_type = (request.content_type or "").split(";")[0].strip().lower()
        # no body changes nothing, whatever type a server gave it (wsgiref says text/plain)
        empty = request.META.get("CONTENT_LENGTH") in (None, "", "0")
        if content_type != "application/json" and not empty:
            raise UnsupportedMediaType(content_type or "(none)", detail="send the accuracy as an application/json body")
        model = self.get_object()
        form = ModelAccuracySerializer(data={} if empty else request.data)
        form.is_valid(raise_exception=True)
        for field, value in form.validated_data.items():
            setattr(model, field, value)
        if (
            model.top1_accuracy is not None
            and model.top5_accuracy is not None
            and model.top5_accuracy < model.top1_accuracy
        ):
            raise ValidationError({"top5_accuracy": "top-5 cannot be below top-1"})
        if form.validated_data:  # an empty PATCH changes nothing
            model.save(update_fields=list(form.validated_data))
        return Response(NetworkModelSerializer(model, context=self.get_serializer_context()).data)
