"""The lab API (``/api/lab/...``): the calls of the lab protocol (``devicelab.lab_protocol``), for
lab tokens only. Each view reads its record, calls one service of ``server.labs.protocol`` and
answers its record; a payload that is not the record is 400 naming the key, something that is not
the machine's own is 403, and a revoked token is 401 with the revocation's message."""

from __future__ import annotations

from typing import Any

from django.http import FileResponse, HttpResponseBase
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from devicelab import lab_protocol as wire
from devicelab.wire import PayloadError
from server.api.parsers import TypedJSONParser
from server.api.schema import AutoSchema
from server.api.wire_schema import json_schema
from server.labs import protocol
from server.labs.authentication import IsLabMachine, LabTokenAuthentication
from server.labs.models import LabMachine

TAG = "lab machines"

_REFUSALS = {
    400: OpenApiResponse(description="The body is not the record: the message names the key."),
    401: OpenApiResponse(description="No lab token, an unknown one, or a revoked one (the message says when)."),
    403: OpenApiResponse(description="Not a lab token, or the device, job or file is not this machine's."),
    # Not throttled, but a lab token is checked after the lockout of addresses that sent too many
    # bad tokens (server/accounts/authentication.py), as a user's API token is.
    429: OpenApiResponse(description="Too many bad tokens from this address; retry later."),
}


def lab_schema(request: type | None, response: type | None, summary: str, code: int = 200) -> Any:
    """The OpenAPI description of a lab call: its records' schemas, under the lab tag."""
    responses: dict[int, Any] = {code: json_schema(response) if response else None, **_REFUSALS}
    return extend_schema(
        tags=[TAG],
        summary=summary,
        request={"application/json": json_schema(request)} if request else None,
        responses=responses,
    )


class LabSchema(AutoSchema):
    """The OpenAPI operation of a lab call, whose record body is required: drf-spectacular marks
    a body given as a plain schema (``json_schema``) optional, and an empty one is a 400."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any
    ) -> dict[str, Any] | None:
        """The operation, its body required when its record has required keys."""
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        body = (operation or {}).get("requestBody")
        if body and any(media["schema"].get("required") for media in body["content"].values()):
            body["required"] = True
        return operation


class LabView(APIView):
    """A call of the lab protocol: lab tokens only, never throttled as users are."""

    schema = LabSchema()
    authentication_classes = [LabTokenAuthentication]
    permission_classes = [IsLabMachine]
    parser_classes = [TypedJSONParser]
    throttle_classes: list[Any] = []

    def lab(self, request: Request) -> LabMachine:
        """The calling machine."""
        assert isinstance(request.auth, LabMachine)
        return request.auth

    def read(self, request: Request, record: Any) -> Any:
        """The body as ``record``; 400 naming the key when it is not."""
        try:
            return record.from_dict(request.data)
        except PayloadError as exc:
            raise exceptions.ValidationError({"detail": str(exc)}) from None

    def handle_exception(self, exc: Exception) -> Response:
        """What is not the machine's own is 403; a bad result record is 400."""
        if isinstance(exc, protocol.NotYours):
            exc = exceptions.PermissionDenied(str(exc))
        elif isinstance(exc, PayloadError):
            exc = exceptions.ValidationError({"detail": str(exc)})
        return super().handle_exception(exc)


class HelloView(LabView):
    """``GET /api/lab/hello``."""

    @lab_schema(None, wire.Hello, "Check the lab token; the machine's name")
    def get(self, request: Request) -> Response:
        """The machine the token belongs to."""
        return Response(wire.as_json(wire.Hello(self.lab(request).name)))


class RegisterDevices(LabView):
    """``POST /api/lab/devices``."""

    @lab_schema(wire.Registration, wire.Registered, "Register the devices a lab machine found")
    def post(self, request: Request) -> Response:
        """Register (or refresh) devices."""
        answer = protocol.register_lab_devices(self.lab(request), self.read(request, wire.Registration))
        return Response(wire.as_json(answer))


class HeartbeatView(LabView):
    """``POST /api/lab/heartbeat``."""

    @lab_schema(wire.Heartbeat, wire.HeartbeatAnswer, "Heart-beat a lab machine's devices")
    def post(self, request: Request) -> Response:
        """The devices are alive."""
        return Response(wire.as_json(protocol.beat(self.lab(request), self.read(request, wire.Heartbeat))))


class DevicesGoneView(LabView):
    """``POST /api/lab/devices/gone``."""

    @lab_schema(wire.DevicesGone, wire.Outcome, "Devices that left the machine go offline now")
    def post(self, request: Request) -> Response:
        """Take devices offline with reasons."""
        answer = protocol.devices_gone(self.lab(request), self.read(request, wire.DevicesGone))
        return Response(wire.as_json(answer))


class FailRunningView(LabView):
    """``POST /api/lab/devices/<pk>/fail-running``."""

    @lab_schema(wire.Ending, wire.Outcome, "A device's process died: fail this run's running jobs on it")
    def post(self, request: Request, pk: int) -> Response:
        """Fail the run's running jobs on a device."""
        answer = protocol.fail_running_for_lab(self.lab(request), pk, self.read(request, wire.Ending))
        return Response(wire.as_json(answer))


class ClaimView(LabView):
    """``POST /api/lab/jobs/<id>/claim``."""

    @lab_schema(wire.Claim, wire.ClaimAnswer, "Claim a job its device's queue delivered")
    def post(self, request: Request, pk: int) -> Response:
        """The conditional claim, and the claimed job's payload."""
        answer = protocol.claim_for_lab(self.lab(request), pk, self.read(request, wire.Claim))
        return Response(wire.as_json(answer))


class ProgressView(LabView):
    """``POST /api/lab/jobs/<id>/progress``."""

    @lab_schema(wire.Progress, wire.ProgressAnswer, "Report a claimed job's progress")
    def post(self, request: Request, pk: int) -> Response:
        """Record progress; ``go_on`` false: stop."""
        go_on = protocol.progress_for_lab(self.lab(request), pk, self.read(request, wire.Progress))
        return Response(wire.as_json(wire.ProgressAnswer(go_on)))


class ResultView(LabView):
    """``POST /api/lab/jobs/<id>/result``."""

    @lab_schema(wire.ResultPost, wire.ResultAnswer, "Post the result of a claimed attempt (idempotent)", code=201)
    def post(self, request: Request, pk: int) -> Response:
        """Store the result once; a repeat is answered 200 ``already-stored``."""
        answer = protocol.store_result(self.lab(request), pk, self.read(request, wire.ResultPost))
        code = status.HTTP_201_CREATED if answer.outcome == "stored" else status.HTTP_200_OK
        return Response(wire.as_json(answer), status=code)


class ResultBatchView(LabView):
    """``POST /api/lab/results``."""

    @lab_schema(wire.ResultBatch, wire.ResultBatchAnswer, "Post several results at once, each answered (idempotent)")
    def post(self, request: Request) -> Response:
        """Store the results in one transaction; one answer per result, in the batch's order."""
        answer = protocol.store_results(self.lab(request), self.read(request, wire.ResultBatch))
        return Response(wire.as_json(answer))


class FailView(LabView):
    """``POST /api/lab/jobs/<id>/fail``."""

    @lab_schema(wire.Ending, wire.Outcome, "A claimed job failed on the machine")
    def post(self, request: Request, pk: int) -> Response:
        """Fail the job with its reason."""
        return Response(wire.as_json(protocol.fail_for_lab(self.lab(request), pk, self.read(request, wire.Ending))))


class RetryView(LabView):
    """``POST /api/lab/jobs/<id>/retry``."""

    @lab_schema(wire.Ending, wire.Outcome, "A claimed attempt was lost to the device: queue the job again")
    def post(self, request: Request, pk: int) -> Response:
        """Give the job back for another attempt."""
        answer = protocol.retry_for_lab(self.lab(request), pk, self.read(request, wire.Ending))
        return Response(wire.as_json(answer))


class ModelFileView(LabView):
    """``GET /api/lab/files/<sha256>``."""

    @extend_schema(
        tags=[TAG],
        summary="Download the model file of a job the machine holds, by its SHA-256",
        responses={200: OpenApiResponse(description="The file's bytes."), **_REFUSALS},
    )
    def get(self, request: Request, sha256: str) -> HttpResponseBase:
        """Stream the file; its hash travels in ``X-Checksum-Sha256``."""
        model = protocol.model_for_lab(self.lab(request), sha256)
        response = FileResponse(model.file.open("rb"), content_type="application/octet-stream")
        response["X-Checksum-Sha256"] = model.sha256
        return response
