"""API views of remote runs: thin wrappers that scope jobs to the caller's team and call
``server.remote.services``.

A remote run is a job: its id is the job's, ``GET /api/jobs/?kind=remote_scenario`` lists it, and
``POST /api/jobs/{id}/cancel/`` cancels it; these views add how to queue one and what it stored.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from server.profiling.api.experiment_jobs import ExperimentJobViewSet
from server.profiling.models import JobKind
from server.remote.api.requests import RemoteJobFilterSet, RemoteRunCreateSerializer
from server.remote.api.serializers import RemoteJobSerializer, RemoteRunDetailSerializer
from server.remote.services import submit_remote_run

# The schema's example: a model served by CPU device 1 under the paper's campus WiFi and no
# shaping, five requests each (a few seconds).
RUN_EXAMPLE = {"model": 1, "device": 1, "profiles": ["campus_wifi", "unshaped"], "requests": 5}
BAD_REQUEST = OpenApiResponse(
    description="bad fields, or a model that is not one of your team's image models, a device that is not an online "
    "CPU device, a profile that is neither a preset nor one of your team's, a run longer than a job may take; each "
    "message names its field"
)


@extend_schema_view(
    list=extend_schema(
        summary="List your team's remote runs", description="Newest first; `?state=`, `?device=`, `?model=`."
    ),
    retrieve=extend_schema(
        summary="A remote run: its job, progress and result",
        description="`result` is null until the run succeeded; then it holds the model as served (its load), the "
        "payload, one summary per network profile (upload, server, compute, download and end-to-end medians and "
        "p90 in ms, the server's stages, the network's share) and `data`, every request as measured.",
    ),
)
class RemoteRunViewSet(ExperimentJobViewSet):
    """Remote runs of your team: a model served by a lab machine, measured from a client under
    network profiles (seed 002, section 4)."""

    job_kind = JobKind.REMOTE_SCENARIO
    result_relation = "remote_scenario"
    list_serializer = RemoteJobSerializer
    detail_serializer = RemoteRunDetailSerializer
    job_filterset = RemoteJobFilterSet

    def get_queryset(self) -> Any:
        """The team's runs with their models (and, on the detail page, their stored profiles)."""
        runs = super().get_queryset().select_related("model")
        return runs.prefetch_related("remote_scenario__profiles") if self.action == "retrieve" else runs

    @extend_schema(
        summary="Queue a remote run",
        description="Serves the model on a CPU device (the lab machine; its worker starts an HTTP inference "
        "endpoint with the model loaded once) and measures it from a client on the same machine under each "
        "network profile, the profiles taking turns request by request: the lab applies a profile by pacing its "
        "own transfers on loopback (rate and one-way delay, drawn per request from the profile's spread). Answers "
        "202 with the queued job; GET it for progress and the result. Cancel it with POST /api/jobs/{id}/cancel/.",
        request=RemoteRunCreateSerializer,
        examples=[OpenApiExample("Campus WiFi and no shaping", value=RUN_EXAMPLE, request_only=True)],
        responses={202: RemoteRunDetailSerializer, 400: BAD_REQUEST},
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a run of a model on a device."""
        data = self.request_body(request, RemoteRunCreateSerializer)
        job = submit_remote_run(request.team, data.pop("model"), data.pop("device"), data, user=request.user)
        return self.created(job, status.HTTP_202_ACCEPTED)


__all__ = ["RemoteRunViewSet"]
