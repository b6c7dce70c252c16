"""What every experiment job of the API shares (fusion sweeps and plans, sharing sweeps): the job's
fields as listed, its links, its stored result on the detail page, rows whose whole data is shown
only on request, and the views that list, show, queue and page through them.

An experiment is a job (``ProfilingJob`` of its kind): its id, state and progress are the job's,
and ``POST /api/jobs/{id}/cancel/`` cancels it. Each kind's module declares what differs: its
settings' help text, its links, its result serializer and its row filters.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Model, QuerySet
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.generics import get_object_or_404
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.serializers import BaseSerializer

from server.api.parsers import FastJSONParser
from server.profiling.models import ProfilingJob

# The job's fields every experiment lists, in the order the API shows them.
JOB_FIELDS = [
    "id",
    "kind",
    "title",
    "state",
    "progress",
    "progress_message",
    "failure_reason",
    "attempts",
    "device",
    "device_name",
    "settings",
    "created_at",
    "started_at",
    "finished_at",
    "links",
]


def url_of(name: str, pk: int, request: Request | None) -> str:
    """The absolute URL of route ``name`` for ``pk`` (relative without a request)."""
    return str(reverse(name, args=[pk], request=request))


def job_links(pk: int, request: Request | None) -> dict[str, str]:
    """The links every experiment has: its job, and where to cancel it."""
    return {"job": url_of("job-detail", pk, request), "cancel": url_of("job-cancel", pk, request)}


def stored_result(job: ProfilingJob, relation: str, serializer: type[BaseSerializer]) -> dict[str, Any] | None:
    """The job's stored result (the reverse one-to-one ``relation``) serialized, or None before it
    is stored."""
    try:
        stored = getattr(job, relation)
    except ObjectDoesNotExist:
        return None
    return dict(serializer(stored).data)


class ExperimentJobSerializer(serializers.ModelSerializer):
    """An experiment as listed: the job's state and progress, its device and settings, its links
    (each kind declares ``settings`` with its help text and ``get_links``)."""

    device_name = serializers.CharField(source="device.name", read_only=True)
    links = serializers.SerializerMethodField()

    class Meta:
        model = ProfilingJob
        fields = JOB_FIELDS
        read_only_fields = fields


class RowSerializer(serializers.ModelSerializer):
    """A stored row whose whole ``data`` is shown only when the context asks for it
    (``?detail=true``: raw samples make it large)."""

    def to_representation(self, instance: Model) -> dict[str, Any]:
        """The row, with ``data`` only when the context asks for it."""
        body = dict(super().to_representation(instance))
        if not self.context.get("detail"):
            body.pop("data", None)
        return body


class SubmitOnDevice(Protocol):
    """A service that queues a team's job on a device from the rest of its request body
    (``submit_fusion_sweep``, ``submit_sharing_sweep``)."""

    def __call__(self, team: Any, device: Any, raw: Mapping[str, Any], user: Any = None) -> ProfilingJob: ...


class ExperimentJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The team's jobs of one experiment kind, newest first; a kind with rows pages through them
    with ``rows_response``."""

    job_kind: ClassVar[str] = ""
    result_relation: ClassVar[str] = ""  # the stored result's reverse one-to-one, read on the detail page
    job_filterset: ClassVar[type[Any] | None] = None
    row_filterset: ClassVar[type[Any] | None] = None
    list_serializer: ClassVar[type[BaseSerializer]]  # a job as listed
    detail_serializer: ClassVar[type[BaseSerializer]]  # a job with its stored result
    parser_classes = [FastJSONParser]  # the bodies are JSON objects: a form could not send them

    @property
    def filterset_class(self) -> type[Any] | None:
        """The rows' parameters on the rows, the list's elsewhere (what the schema documents)."""
        if self.row_filterset is not None and getattr(self, "action", None) == "rows":
            return self.row_filterset
        return self.job_filterset

    def get_queryset(self) -> QuerySet[ProfilingJob]:
        """Only the caller's team's jobs of this kind: another team's ids, and other kinds, answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return ProfilingJob.objects.none()
        jobs = ProfilingJob.objects.for_team(self.request.team).filter(kind=self.job_kind).select_related("device")
        return jobs.select_related(self.result_relation) if self.action == "retrieve" else jobs

    def get_serializer_class(self) -> type[BaseSerializer]:
        """The stored result on the detail page."""
        return self.detail_serializer if self.action == "retrieve" else self.list_serializer

    def request_body(self, request: Request, incoming: type[BaseSerializer]) -> dict[str, Any]:
        """The request's body as ``incoming`` validates it (with the caller's team in its
        context); a 400 naming the field otherwise."""
        body = incoming(data=request.data, context={"team": request.team})
        body.is_valid(raise_exception=True)
        return dict(body.validated_data)

    def queue_on_device(self, request: Request, incoming: type[BaseSerializer], submit: SubmitOnDevice) -> Response:
        """Queue the job the body asks for: ``submit`` takes its ``device`` and the rest."""
        data = self.request_body(request, incoming)
        return self.created(submit(request.team, data.pop("device"), data, user=request.user))

    def created(self, job: ProfilingJob, answer: int = status.HTTP_201_CREATED) -> Response:
        """The answer to a queued job: its detail (201 unless ``answer`` says otherwise)."""
        body = self.detail_serializer(job, context=self.get_serializer_context()).data
        return Response(body, status=answer)

    def rows_of(self, stored: Any, query: Any) -> QuerySet[Any]:
        """A stored result's rows as ``query`` (a valid ``row_filterset``) narrows them."""
        raise NotImplementedError

    def rows_response(
        self, request: Request, pk: str | None, result_model: type[Model], serializer: type[BaseSerializer]
    ) -> Response:
        """One page of the job's rows (none until its ``result_model`` row is stored), filtered;
        each row's ``data`` only with ``?detail=true``."""
        assert self.row_filterset is not None, "rows need the kind's row_filterset"
        # Not get_object(): it would run this action's filters (the rows') on the jobs.
        job = get_object_or_404(self.get_queryset(), pk=pk)
        self.check_object_permissions(request, job)
        model = serializer.Meta.model  # type: ignore[attr-defined]
        query = self.row_filterset(request.query_params, queryset=model.objects.none(), request=request)
        if not query.is_valid():
            # A bad ``detail`` parameter's message is the answer's ``detail`` string, as in every
            # error answer of the API; the other parameters' are lists under their names.
            raise ValidationError({k: " ".join(v) if k == "detail" else v for k, v in query.errors.items()})
        stored = result_model._default_manager.filter(job=job).first()
        rows = model.objects.none() if stored is None else self.rows_of(stored, query)
        page = self.paginate_queryset(rows)
        context = {**self.get_serializer_context(), "detail": query.wants_detail}
        return self.get_paginated_response(serializer(page, many=True, context=context).data)


__all__ = [
    "JOB_FIELDS",
    "ExperimentJobSerializer",
    "ExperimentJobViewSet",
    "RowSerializer",
    "SubmitOnDevice",
    "job_links",
    "stored_result",
    "url_of",
]
