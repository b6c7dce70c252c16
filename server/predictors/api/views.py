"""API views of predictors and predictions: thin wrappers around ``server.predictors``."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils.http import parse_header_parameters
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ParseError, PermissionDenied, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import BrowsableAPIRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.serializers import BaseSerializer
from rest_framework.views import APIView

from devicelab.graph import GraphError
from devicelab.predict.errors import PredictorError
from server.api.parsers import FastJSONParser
from server.networks.api.serializers import GRAPH_EXAMPLE
from server.predictors.api.filters import PredictorFilterSet
from server.predictors.api.renderers import FastJSONRenderer
from server.predictors.api.serializers import (
    MAX_SYNTHETIC,
    MAX_TRAINING_SET_JOBS,
    PredictorCreateSerializer,
    PredictorDetailSerializer,
    PredictorRequest,
    PredictorSerializer,
    PredictRequestSerializer,
    PredictResponseSerializer,
    QedImportRequestSerializer,
    QedImportSerializer,
    SideBySideRequestSerializer,
    SideBySideResponseSerializer,
    TrainingSetRequest,
    TrainingSetRequestSerializer,
    TrainingSetSerializer,
)
from server.predictors.models import Predictor
from server.predictors.phones import side_by_side
from server.predictors.qed_import import QedImport, import_qed, import_qed_files
from server.predictors.services import request_predictor
from server.predictors.serving import (
    ArchitectureErrors,
    PredictorNotFound,
    PredictorUnavailable,
    gc_paused,
    predict_for_team,
)
from server.predictors.trainset import build_training_set


@extend_schema_view(
    list=extend_schema(summary="List the predictors you can use (your team's and the shared ones)"),
    retrieve=extend_schema(summary="A predictor with its evaluation and how it was made"),
)
class PredictorViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Latency predictor versions."""

    filterset_class = PredictorFilterSet
    parser_classes = [FastJSONParser]  # JSON bodies only, as the schema says

    def get_queryset(self) -> QuerySet[Predictor]:
        """The team's and the shared predictors: another team's ids answer 404."""
        if getattr(self, "swagger_fake_view", False):  # schema generation has no team
            return Predictor.objects.none()
        rows = Predictor.objects.visible_to(self.request.team).select_related("device").defer("artifact")
        if self.action == "list":
            rows = rows.defer("artifact", "meta")
        return rows

    def get_serializer_class(self) -> type[BaseSerializer]:
        """Evaluation and meta only on the detail page."""
        return PredictorDetailSerializer if self.action in ("retrieve", "create") else PredictorSerializer

    @extend_schema(
        summary="Train a new predictor version",
        request=PredictorCreateSerializer,
        examples=[
            OpenApiExample(
                "A Lasso predictor, quick search",
                value={"device": 1, "method": "lasso", "search": "fast"},
                request_only=True,
            )
        ],
        responses={
            202: PredictorDetailSerializer,
            400: OpenApiResponse(description="unknown device, too little data to train on, or bad parameters"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Queue the training of the next version; the trainer process picks it up."""
        incoming = PredictorCreateSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)
        data: PredictorRequest = incoming.validated_data
        row = request_predictor(
            request.team,
            data["device"],
            method=data["method"],
            threads=data["threads"],
            seed=data["seed"],
            search=data["search"],
            overhead=data["overhead"],
            cores=data["cores"],
            precision=data["precision"],
            delegate=data["delegate"],
            user=request.user,
        )
        body = PredictorDetailSerializer(row, context=self.get_serializer_context()).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


_CELL_EXAMPLE = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|"


def _body_bytes(request: Request) -> int | None:
    """The request body's declared length (None when it has none: a chunked body)."""
    try:
        return int(request.META["CONTENT_LENGTH"])
    except (KeyError, ValueError):
        return None


class PredictView(APIView):
    """Predicted latency of a batch of architectures."""

    parser_classes = [FastJSONParser]
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        summary="Predict the latency of architectures",
        description="Give a `device` (its best predictor answers, optionally of one `method`: the rankable one "
        "with the lowest end-to-end MAPE, or, when it has none, its lowest-MAPE unranked one, `chosen_as: "
        "unranked`) or a `predictor`. The answer's `predictor` says which answered, its test MAPE (`e2e_mape`, "
        "`n_test`) and whether it is rankable; each result's `warnings` name kernels outside the predictor's "
        "training range and kernels another type's model priced. Each architecture has a `name` and one of "
        "`graph` (graph JSON), `nb201` (a NAS-Bench-201 cell string) or `onnx_base64`. Nothing is predicted when "
        "any architecture is bad: the 400 answer lists each bad one by index and name with the reason.",
        request=PredictRequestSerializer,
        examples=[
            OpenApiExample(
                "A NAS-Bench-201 cell and a graph, for a device",
                value={
                    "device": 1,
                    "architectures": [
                        {"name": "cell", "nb201": _CELL_EXAMPLE},
                        {"name": "tiny", "graph": GRAPH_EXAMPLE},
                    ],
                    "breakdown": True,
                },
                request_only=True,
            )
        ],
        responses={
            200: PredictResponseSerializer,
            400: OpenApiResponse(description="bad request or bad architectures (`errors`: index, name, error)"),
            404: OpenApiResponse(description="no such device or predictor for your team"),
            409: OpenApiResponse(description="no ready predictor for the device, or it cannot be loaded"),
        },
    )
    def post(self, request: Request) -> Response:
        """Answer one batch."""
        with gc_paused(_body_bytes(request)):
            try:
                return self._answer(request)
            finally:
                # The parsed batch (a million small objects) goes now, while the collector is
                # still off: alive when it comes back on, the first collection would walk it all.
                request._data = request._full_data = {}

    def _answer(self, request: Request) -> Response:
        # run_validation, not is_valid(): a serializer given data= keeps it, and its fields point
        # back at it (a reference cycle), so the batch would outlive the request (see post()).
        body = PredictRequestSerializer().run_validation(request.data)
        try:
            answer = predict_for_team(
                request.team,
                body["architectures"],
                body["device"],
                body["predictor"],
                body["method"],
                breakdown=body["breakdown"],
            )
        except PredictorNotFound as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
        except PredictorUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        except ArchitectureErrors as exc:
            return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(answer)


class SideBySideView(APIView):
    """Phones of one model side by side: a measured phone and the qed phones of its model (or the reverse)."""

    parser_classes = [FastJSONParser]
    renderer_classes = [FastJSONRenderer, BrowsableAPIRenderer]

    @extend_schema(
        summary="Compare the predictors of phones of one model",
        description="For `device` and every other phone of its model (measured phones and phones imported from the "
        "qed data are matched by model: `Pixel 4` and qed's `pixel4`, `SM-G973F` and `s10`): the ready predictor "
        "that answers (optionally of one `method` and scenario `backend`), and, when `architectures` are given, "
        "its predictions. A device without a predictor that can answer has `predictor: null` and a `detail`.",
        request=SideBySideRequestSerializer,
        examples=[
            OpenApiExample(
                "GPU predictors of a phone and its qed twin",
                value={
                    "device": 1,
                    "backend": "tflite_gpu",
                    "architectures": [{"name": "cell", "nb201": _CELL_EXAMPLE}],
                },
                request_only=True,
            )
        ],
        responses={
            200: SideBySideResponseSerializer,
            400: OpenApiResponse(description="bad request or bad architectures (`errors`: index, name, error)"),
            404: OpenApiResponse(description="no such device"),
        },
    )
    def post(self, request: Request) -> Response:
        """Answer for the device and the phones of its model (a batch is read and answered with
        the collector paused, as ``PredictView`` does, for the same reason)."""
        with gc_paused(_body_bytes(request)):
            try:
                return self._answer(request)
            finally:
                request._data = request._full_data = {}

    def _answer(self, request: Request) -> Response:
        body = SideBySideRequestSerializer().run_validation(request.data)
        try:
            answer = side_by_side(
                request.team, body["device"], body["architectures"], body["method"], body["backend"], body["breakdown"]
            )
        except PredictorNotFound as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_404_NOT_FOUND)
        except ArchitectureErrors as exc:
            return Response({"detail": str(exc), "errors": exc.errors}, status=status.HTTP_400_BAD_REQUEST)
        return Response(answer)


class TrainingSetView(APIView):
    """A training set: networks uploaded as the team's own and profiled through ordinary jobs."""

    parser_classes = [FastJSONParser]

    @extend_schema(
        summary="Profile a training set for a predictor",
        description="Uploads `synthetic` NAS samples (drawn with `seed`, from index `first_sample` on) and the named "
        "zoo models as your team's models, and queues `rounds` profiling jobs per network on `device` (a cpu, "
        "opencl or android device), less the jobs your team already has of a network with the same settings: a "
        "re-run fills the gaps. Answers once every job is queued; follow them with GET /api/jobs/, then train with "
        f"POST /api/predictors/. One request holds a server thread while it uploads and queues, so it takes at "
        f"most {MAX_SYNTHETIC} synthetic samples and {MAX_TRAINING_SET_JOBS} jobs, (synthetic + zoo models) x "
        "rounds (the probe graphs aside), a few seconds of the server's time; a bigger set is several requests: "
        "the samples split with `first_sample` (samples 0-99, 100-199, ... are the networks one request of 900 "
        "would draw) and the zoo models between them. `latencylab trainset build` and the Python client's "
        "`build_training_set` split a set so by themselves.",
        request=TrainingSetRequestSerializer,
        examples=[
            OpenApiExample(
                "Ten synthetic samples and one zoo model, three rounds",
                value={"device": 1, "synthetic": 10, "zoo": ["mobilenet_v2"], "rounds": 3},
                request_only=True,
            )
        ],
        responses={
            202: TrainingSetSerializer,
            400: OpenApiResponse(
                description="unknown device or zoo model, settings the device cannot run, or more than "
                f"{MAX_TRAINING_SET_JOBS} jobs in one request"
            ),
        },
    )
    def post(self, request: Request) -> Response:
        """Upload the set's networks and queue their jobs."""
        body: TrainingSetRequest = TrainingSetRequestSerializer().run_validation(request.data)
        device = body["device"]
        try:
            built = build_training_set(
                request.team,
                device,
                body["synthetic"],
                body["zoo"],
                first_sample=body["first_sample"],
                threads=body["threads"],
                runs=body["runs"],
                warmup_runs=body["warmup_runs"],
                seed=body["seed"],
                probes=body["probes"],
                user=request.user,
                rounds=body["rounds"],
                delegate=body["delegate"],
            )
        except GraphError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        answer = {
            "device": device.pk,
            "device_name": device.name,
            "networks": len({job.model_id for job in built.jobs}),
            "submitted": [job.pk for job in built.submitted],
            "reused": [job.pk for job in built.reused],
        }
        return Response(TrainingSetSerializer(answer).data, status=status.HTTP_202_ACCEPTED)


class NamedPartsMultiPartParser(MultiPartParser):
    """A multipart body whose parts are all named. Django skips a part without a form-data name,
    so a body of such parts (a JSON array sent as multipart, say: the schema refuses it) would
    read as no files at all, and import the server's copy."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        """The form's fields and files, or a ``ParseError`` (400) when parts were skipped."""
        parsed = super().parse(stream, media_type, parser_context)
        if not parsed.data and not parsed.files:
            _, params = parse_header_parameters(media_type or "")
            empty_form = len(f"--{params.get('boundary', '')}--\r\n")  # the closing boundary alone
            request = (parser_context or {})["request"]
            if int(request.META.get("CONTENT_LENGTH") or 0) > empty_form:
                raise ParseError(
                    "the multipart body has parts without a form-data name; send the files as the parts ops and "
                    "e2e, or no body to import the server's copy"
                )
        return parsed


class QedImportView(APIView):
    """The six phones of the public qed measurements as devices, with their GPU measurements."""

    parser_classes = [NamedPartsMultiPartParser, FastJSONParser]

    @extend_schema(
        summary="Import the qed phones and their measurements",
        description="Without files, the server reads its own copy of the qed data (LATENCYLAB_QED_DATA, else "
        "the shared/data folder beside its checkout). With the multipart files `ops` and `e2e` (one pair of the "
        "names the data is published under, sent as named), it reads those: a lab admin's (staff) request only, "
        "since the phones and their rows are shared by every team. Creates the six phones as devices of kind "
        "`imported` and stores their measurements; re-running changes nothing unless the files changed.",
        request={"multipart/form-data": QedImportRequestSerializer, "application/json": None},
        responses={
            200: QedImportSerializer,
            400: OpenApiResponse(
                description="the files are missing, misnamed or not qed data, or `ops` / `e2e` is not a file part; "
                "the answer says why"
            ),
            403: OpenApiResponse(description="files were sent by a user who is not a lab admin"),
        },
    )
    def post(self, request: Request) -> Response:
        """Import the server's copy, or the files sent."""
        # What the schema refuses is refused here too: `ops` or `e2e` sent as anything but a file
        # (a text field, even an empty one; a JSON value) is a 400, not an import of the server's
        # copy that ignores it.
        incoming = QedImportRequestSerializer(data=request.data)
        incoming.is_valid(raise_exception=True)  # a body that is not an object, a JSON value where a file goes
        sent_as_text = [key for key in ("ops", "e2e") if key in request.data and key not in request.FILES]
        if sent_as_text:  # a form's empty text field, which the serializer reads as no file
            raise ValidationError(
                {key: ["must be a file (a multipart file part), got a text value"] for key in sent_as_text}
            )
        uploads = {key: incoming.validated_data.get(key) for key in ("ops", "e2e")}
        try:
            if not any(uploads.values()):
                return self._answer(import_qed())
            if not request.user.is_staff:
                raise PermissionDenied(
                    "only a lab admin (a staff user) imports qed files of their own: the phones and their "
                    "measurements are shared by every team; import without files to read the server's copy"
                )
            missing = [key for key, upload in uploads.items() if upload is None]
            if missing:
                return Response(
                    {"detail": f"send both qed files, ops and e2e: {' and '.join(missing)} is missing"},
                    status=status.HTTP_400_BAD_REQUEST,
                )
            files = {str(u.name).rsplit("/", 1)[-1]: u.chunks() for u in uploads.values() if u is not None}
            return self._answer(import_qed_files(files))
        except PredictorError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)

    def _answer(self, outcome: QedImport) -> Response:
        body = {
            "files": [path.name for path in outcome.files],
            "devices": [
                {
                    "device": d.device.pk,
                    "name": d.device.name,
                    "gpu": str((d.device.hardware or {}).get("gpu_name", "")),
                    "device_created": d.device_created,
                    "networks": d.networks,
                    "created": d.created,
                    "updated": d.updated,
                    "unchanged": d.unchanged,
                }
                for d in outcome.devices
            ],
        }
        return Response(QedImportSerializer(body).data)
