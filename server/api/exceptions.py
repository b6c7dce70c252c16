"""Turn domain errors into API answers a person can act on."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from server.networks.services import BadModel, UploadTooLarge


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus: Django ``ValidationError`` -> 400 (field errors or ``detail``),
    ``UploadTooLarge`` / ``RequestDataTooBig`` -> 413, a form of too many fields or files -> 400,
    ``BadModel`` -> 400 with node/op/reason,
    ``RecursionError`` (a body nested too deeply for the code that reads it) -> 400."""
    if isinstance(exc, UploadTooLarge):
        return Response({"detail": " ".join(exc.messages)}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, RequestDataTooBig):
        from django.conf import settings

        return Response(
            {
                "detail": f"the request body is over the limit of {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} "
                "bytes (LATENCYLAB_MAX_UPLOAD_BYTES)"
            },
            status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
        )
    if isinstance(exc, (TooManyFieldsSent, TooManyFilesSent)):
        # Django's own answer would be its HTML 400 page; the API's errors are JSON.
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, BadModel):
        body: dict[str, Any] = {"detail": " ".join(exc.messages)}
        if exc.graph_error is not None:
            body["error"] = exc.graph_error.as_dict()
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RecursionError):
        # A body nested deeper than the parser walks (see server/api/parsers.py) reached code
        # that recurses: the request is at fault, not the server.
        return Response(
            {"detail": "the request body is nested too deeply to process"}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, DjangoValidationError):
        if hasattr(exc, "error_dict"):
            return Response(exc.message_dict, status=status.HTTP_400_BAD_REQUEST)
        return Response({"detail": " ".join(exc.messages)}, status=status.HTTP_400_BAD_REQUEST)
    return drf_exception_handler(exc, context)
