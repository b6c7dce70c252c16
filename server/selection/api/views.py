"""API views of model selection: thin wrappers around ``server.selection``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from server.api.parsers import FastJSONParser
from server.selection.api.serializers import (
    SelectRequestSerializer,
    SelectResponseSerializer,
    SelectTableRequestSerializer,
    SimulationCreateSerializer,
    SimulationDetailSerializer,
    SimulationSerializer,
)
from server.selection.models import SelectionSimulation
from server.selection.services import network_profiles, select_for_request, select_table, store_network_profile
from server.selection.simulations import submit_simulation


class SelectView(APIView):
    """CNNSelect for one request."""

    parser_classes = [FastJSONParser]

    @extend_schema(
        summary="Choose the model for one inference request (CNNSelect)",
        description="Candidates are your team's models with an accuracy (their own, or a zoo model's published "
        "top-1) and a latency profile on `device`: the newest succeeded profile job's samples, else the device's "
        "best predictor. T_input is `input_ms`, or the mean transfer of `input_bytes` under `network_profile` "
        "(a preset: campus_wifi, lte, cellular_hotspot, prototype_wifi; or one of your team's). The answer "
        "has the chosen model, every candidate's probability, the base model, M_E, the time range and why.",
        request=SelectRequestSerializer,
        examples=[
            OpenApiExample(
                "Three candidates over LTE",
                value={"device": 1, "models": [1, 2, 3], "sla_ms": 400, "network_profile": "lte", "threshold_ms": 20},
                request_only=True,
            )
        ],
        responses={
            200: SelectResponseSerializer,
            400: OpenApiResponse(description="a bad field, an unknown model, a model without accuracy or profile"),
        },
    )
    def post(self, request: Request) -> Response:
        """Answer one request."""
        return Response(select_for_request(request.team, request.data))


class SelectTableView(APIView):
    """The developer's question over a range of SLAs."""

    parser_classes = [FastJSONParser]

    @extend_schema(
        summary="Per model and policy, the chance of meeting each SLA and the accuracy it buys",
        description="For your team's `models` served on `device` over `network_profile`, and with `on_device` "
        "run on that phone or CPU itself (from the lab's own profiles there; `load_per_request` prices each "
        "request with the measured cold start), per SLA target of `sla_targets_ms`: `p_meet` (share of "
        "`requests` seeded requests whose end to end met the SLA), `expected_accuracy` and "
        "`accuracy_within_sla` (a miss counts 0); then the selection `policy` (lab or paper CNNSelect) and "
        "greedy on the same requests. `warnings` names latency profiles flagged noisy.",
        request=SelectTableRequestSerializer,
        examples=[
            OpenApiExample(
                "Three candidates over LTE",
                value={"device": 1, "models": [1, 2, 3], "network_profile": "lte", "sla_targets_ms": [200, 400, 600]},
                request_only=True,
            )
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiResponse(description="a bad field or candidate")},
    )
    def post(self, request: Request) -> Response:
        """Answer over the SLA targets."""
        return Response(select_table(request.team, request.data))


@extend_schema_view(
    list=extend_schema(summary="List your team's model-selection simulations"),
    retrieve=extend_schema(summary="A simulation with its spec and result"),
)
class SimulationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Simulations of CNNSelect against greedy, fastest and an oracle (seed 002, section 5.2)."""

    parser_classes = [FastJSONParser]

    def get_queryset(self) -> QuerySet[SelectionSimulation]:
        """Only the caller's team's simulations; the result only on the detail."""
        if getattr(self, "swagger_fake_view", False):
            return SelectionSimulation.objects.none()
        rows = SelectionSimulation.objects.filter(team=self.request.team)
        return rows if self.action == "retrieve" else rows.defer("spec", "result")

    def get_serializer_class(self) -> type[BaseSerializer]:
        """Spec and result on the detail."""
        return SimulationDetailSerializer if self.action in ("retrieve", "create") else SimulationSerializer

    @extend_schema(
        summary="Run a simulation",
        description='`{"scenario": "paper"}` runs table 5\'s models; `{"device": id, "models": [ids]}` runs your '
        "models with their profiles on the device, frozen at submission. SLA targets, network profiles (presets or "
        "your stored ones), requests per point (default 10,000), seed, T_threshold and policies complete it. The "
        "trainer runs it; GET the simulation for its state and result.",
        request=SimulationCreateSerializer,
        examples=[
            OpenApiExample(
                "The paper's scenario",
                value={"scenario": "paper", "profiles": ["campus_wifi", "lte"], "requests": 10000},
                request_only=True,
            )
        ],
        responses={
            202: SimulationDetailSerializer,
            400: OpenApiResponse(description="a bad field, or a model without accuracy or profile"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue a simulation."""
        row = submit_simulation(request.team, request.data, user=request.user)
        return Response(SimulationDetailSerializer(row).data, status=status.HTTP_202_ACCEPTED)


class NetworkProfileView(APIView):
    """Network conditions: the paper's presets and the team's own."""

    parser_classes = [FastJSONParser]

    @extend_schema(
        summary="List the network profiles (presets, then your team's)",
        responses={200: OpenApiResponse(description="each profile with its mean transfer of 330 KB")},
    )
    def get(self, request: Request) -> Response:
        """Every profile a selection or simulation can name."""
        return Response({"results": network_profiles(request.team)})

    @extend_schema(
        summary="Store a network profile",
        description="Recorded: `{name, transfers: [[bytes, seconds], ...]}` from real transfers (the line of "
        "time on size and the spread are fitted). Custom: `{name, latency_ms, throughput_mbps, cv}`.",
        request=OpenApiTypes.OBJECT,
        examples=[
            OpenApiExample(
                "A custom profile",
                value={"name": "home wifi", "latency_ms": 15, "throughput_mbps": 50, "cv": 0.2},
                request_only=True,
            )
        ],
        responses={201: OpenApiResponse(description="the stored profile"), 400: OpenApiResponse(description="why")},
    )
    def post(self, request: Request) -> Response:
        """Store one profile for the team."""
        row = store_network_profile(request.team, request.data)
        return Response({**row.data, "id": row.pk, "stored_kind": row.kind}, status=status.HTTP_201_CREATED)
