"""API views of predictors and predictions: thin wrappers around ``server.predictors``."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from server.api.parsers import FastJSONParser
from server.api.predict_serializers import (
    PredictorCreateSerializer,
    PredictorDetailSerializer,
    PredictorSerializer,
    PredictRequestSerializer,
    PredictResponseSerializer,
    as_int,
)
from server.devices.models import Device
from server.predictors.models import Predictor, PredictorMethod, PredictorState
from server.predictors.services import request_predictor
from server.predictors.serving import (
    ArchitectureErrors,
    PredictorNotFound,
    PredictorUnavailable,
    gc_paused,
    predict_for_team,
)


@extend_schema_view(
    list=extend_schema(
        summary="List the predictors you can use (your team's and the shared ones)",
        parameters=[
            OpenApiParameter("device", int, description="only predictors of this device"),
            OpenApiParameter("method", str, enum=PredictorMethod.values, description="only this method"),
            OpenApiParameter("state", str, enum=PredictorState.values, description="only predictors in this state"),
        ],
    ),
    retrieve=extend_schema(summary="A predictor with its evaluation and how it was made"),
)
class PredictorViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Latency predictor versions."""

    def get_queryset(self) -> QuerySet[Predictor]:
        """The team's and the shared predictors: another team's ids answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return Predictor.objects.none()
        rows = Predictor.objects.visible_to(self.request.team).select_related("device").defer("artifact")
        if self.action == "list":
            rows = rows.defer("artifact", "meta")
            params = self.request.query_params
            device = params.get("device")
            if device:
                if not device.isdigit():
                    raise ValidationError({"device": f"device must be an id (a positive integer), got {device!r}"})
                rows = rows.filter(device_id=int(device))
            method = params.get("method")
            if method:
                if method not in PredictorMethod.values:
                    raise ValidationError(
                        {"method": f"unknown method {method!r}; expected one of {PredictorMethod.values}"}
                    )
                rows = rows.filter(method=method)
            state = params.get("state")
            if state:
                if state not in PredictorState.values:
                    raise ValidationError(
                        {"state": f"unknown state {state!r}; expected one of {PredictorState.values}"}
                    )
                rows = rows.filter(state=state)
        return rows

    def get_serializer_class(self) -> type[BaseSerializer]:
        """Evaluation and meta only on the detail page."""
        return PredictorDetailSerializer if self.action in ("retrieve", "create") else PredictorSerializer

    @extend_schema(
        summary="Train a new predictor version",
        request=PredictorCreateSerializer,
        responses={
            202: PredictorDetailSerializer,
            400: OpenApiResponse(description="unknown device, too little data to train on, or bad parameters"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue the training of the next version; the trainer process picks it up."""
        incoming = PredictorCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data = incoming.validated_data
        device = Device.objects.filter(pk=data["device"]).first()
        if device is None:
            raise ValidationError({"device": f"there is no device #{data['device']} (GET /api/devices/)"})
        row = request_predictor(
            request.team,
            device,
            method=data["method"],
            threads=data["threads"],
            seed=data["seed"],
            search=data["search"],
            overhead=data["overhead"],
            user=request.user,
        )
        body = PredictorDetailSerializer(row, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


class PredictView(APIView):
    """Predicted latency of a batch of architectures."""

    parser_classes = [FastJSONParser]

    @extend_schema(
        summary="Predict the latency of architectures",
        description="Give a `device` (its ready predictor with the lowest end-to-end MAPE answers, optionally of "
        "one `method`) or a `predictor`. Each architecture has a `name` and one of `graph` (graph JSON), `nb201` "
        "(a NAS-Bench-201 cell string) or `onnx_base64`. Nothing is predicted when any architecture is bad: the "
        "400 answer lists each bad one by index and name with the reason.",
        request=PredictRequestSerializer,
        responses={
            200: PredictResponseSerializer,
            400: OpenApiResponse(description="bad request or bad architectures (`errors`: index, name, error)"),
            404: OpenApiResponse(description="no such device or predictor for your team"),
            409: OpenApiResponse(description="no ready predictor for the device, or it cannot be loaded"),
        },
    )
    def post(self, request: Request) -> Response:
        """Answer one batch."""
        with gc_paused():
            try:
                return self._answer(request)
            finally:
                # The parsed batch (a million small objects) goes now, while the collector is
                # still off: alive when it comes back on, the first collection would walk it all.
                request._data = request._full_data = {}

    def _answer(self, request: Request) -> Response:
        body = request.data
        if not isinstance(body, dict):
            raise ValidationError("the request body must be a JSON object")
        unknown = sorted(set(body) - {"device", "predictor", "method", "architectures", "breakdown"})
        if unknown:
            raise ValidationError(
                f"unknown key(s) {unknown}; expected device or predictor, method, architectures, breakdown"
            )
        try:
            device_id = as_int(body.get("device"), "device")
            predictor_id = as_int(body.get("predictor"), "predictor")
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        method = body.get("method")
        if method is not None and method not in PredictorMethod.values:
            raise ValidationError({"method": f"unknown method {method!r}; expected one of {PredictorMethod.values}"})
        breakdown = body.get("breakdown", False)
        if not isinstance(breakdown, bool):
            raise ValidationError({"breakdown": f"breakdown must be true or false, got {breakdown!r}"})
        if device_id is None and predictor_id is None:
            raise ValidationError("give a device or a predictor")
        try:
            answer = predict_for_team(
                request.team, body.get("architectures"), device_id, predictor_id, method, breakdown=breakdown
            )
        except PredictorNotFound as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
        except PredictorUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except ArchitectureErrors as exc:
            return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(answer)
