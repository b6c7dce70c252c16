"""``POST /api/predictors/adapt/``: an adapted predictor for a device from a few measured networks
(``server.predictors.adapt``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from devicelab.backends.base import PRECISIONS
from devicelab.predict.predictor import BACKENDS
from server.api.fields import IdField, StrictCharField, StrictFloatField, StrictIntegerField
from server.api.parsers import FastJSONParser
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.predictors.adapt import MAX_SHOTS, request_adapted_predictor
from server.predictors.api.serializers import PredictorDetailSerializer
from server.predictors.models import PredictorMethod


class NewDeviceSerializer(serializers.Serializer):
    """A device that is not in the lab: a user's own phone."""

    name = StrictCharField(max_length=200)
    soc = StrictCharField(max_length=200, required=False, default="", allow_blank=True)
    gpu = StrictCharField(
        max_length=200, required=False, default="", allow_blank=True, help_text="e.g. Adreno 640, Mali-G76"
    )


class ShotSerializer(serializers.Serializer):
    """One measured network: a lab profiling job, or a model (id or zoo name) with its latency."""

    job = StrictIntegerField(required=False, min_value=1, help_text="A profiling job of your team with a result.")
    model = serializers.JSONField(required=False, help_text="A model id of your team, or a zoo name.")
    latency_ms = StrictFloatField(required=False, min_value=0.0, help_text="Measured end-to-end latency (ms).")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A job, or a model with a latency."""
        if "job" not in attrs and ("model" not in attrs or "latency_ms" not in attrs):
            raise serializers.ValidationError("give job, or model and latency_ms")
        return attrs


class AdaptRequestSerializer(serializers.Serializer):
    """What a client sends to adapt a predictor."""

    device = IdField("device", required=False, help_text="Id of a lab device (GET /api/devices/).")
    new_device = NewDeviceSerializer(required=False, help_text="Or a device that is not in the lab.")
    shots = ShotSerializer(many=True, min_length=3, max_length=MAX_SHOTS)
    sources = serializers.ListField(
        child=StrictIntegerField(min_value=1),
        required=False,
        max_length=100,
        help_text="Predictor ids to adapt from (default: the best ready one of every other device of this "
        "backend and precision).",
    )
    # a checked string, not a ChoiceField: the schema has a "backend" enum already (GET predictors)
    backend = StrictCharField(
        default="tflite_gpu", max_length=32, help_text=f"The scenario backend, one of {list(BACKENDS)}."
    )
    precision = serializers.ChoiceField(choices=list(PRECISIONS), default="fp16")
    method = serializers.ChoiceField(
        choices=PredictorMethod.choices, default="rf", help_text="The stored predictor's per-kernel models."
    )
    seed = StrictIntegerField(default=0, min_value=0, max_value=2**32 - 1)

    def validate_device(self, value: int) -> Device:
        """A registered device."""
        return existing_device(value)

    def validate_backend(self, value: str) -> str:
        """One of the predictor backends."""
        if value not in BACKENDS:
            raise serializers.ValidationError(f"unknown backend {value!r}; expected one of {list(BACKENDS)}")
        return value


class AdaptView(APIView):
    """Adapt a predictor for a device from a few measured networks and other devices' predictors."""

    parser_classes = [FastJSONParser]

    @extend_schema(
        summary="Adapt a predictor for a new device from a few measured networks",
        description="The target (`device`, or `new_device` with its SoC and GPU), k measured end-to-end latencies "
        "(`shots`: profiling jobs, or models with `latency_ms`) and the `sources` (other devices' predictors). "
        "The trainer fits per-kernel-group scales of the sources' predictions on the shots and stores a predictor "
        "that answers `POST /api/predict/` like any other; its `e2e_mape` is the leave-one-out error on the shots.",
        request=AdaptRequestSerializer,
        examples=[
            OpenApiExample(
                "A user's phone measured on three zoo models",
                value={
                    "new_device": {"name": "my phone", "soc": "Snapdragon 855", "gpu": "Adreno 640"},
                    "shots": [
                        {"model": "mobilenet_v2", "latency_ms": 7.1},
                        {"model": "resnet18", "latency_ms": 14.2},
                        {"model": "squeezenet_1_1", "latency_ms": 3.9},
                    ],
                },
                request_only=True,
            )
        ],
        responses={
            202: PredictorDetailSerializer,
            400: OpenApiResponse(description="bad target, shots or sources, or no source to adapt from"),
        },
    )
    def post(self, request: Request) -> Response:
        """Queue the adapted predictor; the trainer fits and stores it."""
        incoming = AdaptRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        row = request_adapted_predictor(
            request.team,
            data.get("device"),
            [dict(s) for s in data["shots"]],
            sources=data.get("sources"),
            new_device=dict(data["new_device"]) if data.get("new_device") else None,
            backend=data["backend"],
            precision=data["precision"],
            method=data["method"],
            seed=data["seed"],
            user=request.user,
        )
        body = PredictorDetailSerializer(row, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


__all__ = ["AdaptRequestSerializer", "AdaptView"]
