"""Turn domain errors into API answers a person can act on."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus: Django ``ValidationError`` -> 400 (field errors or ``detail``; a domain's
    subclass may answer another ``http_status`` and add ``api_details()`` beside ``detail``, as
    ``server.networks.services``' ``UploadTooLarge`` (413) and ``BadModel`` (node/op/reason) do),
    ``RequestDataTooBig`` -> 413, a form of too many fields or files -> 400,
    ``RecursionError`` (a body nested too deeply for the code that reads it) -> 400."""
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
    if isinstance(exc, RecursionError):
        # A body nested deeper than the parser walks (see server/api/parsers.py) reached code
        # that recurses: the request is at fault, not the server.
        return Response(
            {"detail": "the request body is nested too deeply to process"}, status=status.HTTP_400_BAD_REQUEST
        )
    if isinstance(exc, DjangoValidationError):
        # The domain's own error says how it is answered, so this module imports no domain.
        answer = getattr(exc, "http_status", status.HTTP_400_BAD_REQUEST)
        if hasattr(exc, "error_dict"):
            return Response(exc.message_dict, status=answer)
        body: dict[str, Any] = {"detail": " ".join(exc.messages)}
        details = getattr(exc, "api_details", None)
        if details is not None:
            body.update(details())
        return Response(body, status=answer)
    return drf_exception_handler(exc, context)
