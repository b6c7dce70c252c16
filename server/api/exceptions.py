"""Turn domain errors into API answers a person can act on."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from server.api.parsers import MAX_JSON_DEPTH

logger = logging.getLogger(__name__)

# Refusals of a caller that is not (yet) authenticated.
_ANONYMOUS_REFUSALS = (exceptions.NotAuthenticated, exceptions.AuthenticationFailed, exceptions.PermissionDenied)


def _throttled_instead(exc: Exception, context: dict[str, Any]) -> exceptions.Throttled | None:
    """The throttle's 429 for a refused anonymous request that is over the view's rate, else None.

    DRF checks a view's throttles after its permissions, so an anonymous request that the
    permissions refuse never reached the anonymous rate: a burst of them was answered 401 without
    end. Counting it here charges each refused request once (it never reaches the throttles)."""
    request, view = context.get("request"), context.get("view")
    if not isinstance(exc, _ANONYMOUS_REFUSALS) or request is None or view is None:
        return None
    if getattr(request, "user", None) is not None and request.user.is_authenticated:
        return None
    try:
        view.check_throttles(request)
    except exceptions.Throttled as throttled:
        return throttled
    return None


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, plus: Django ``ValidationError`` -> 400 (field errors or ``detail``; a domain's
    subclass may answer another ``http_status`` and add ``api_details()`` beside ``detail``, as
    ``server.networks.services``' ``UploadTooLarge`` (413) and ``BadModel`` (node/op/reason) do),
    ``RequestDataTooBig`` -> 413, a form of too many fields or files -> 400,
    ``RecursionError`` (a body nested too deeply for the code that reads it) -> 400 naming the
    depth limit, logged as one warning; a refused anonymous request over the anonymous rate -> 429."""
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
        # that recurses: the request is at fault, not the server, so no traceback at ERROR.
        request = context.get("request")
        logger.warning(
            "%s %s: refused a body nested too deeply to process (%s)",
            getattr(request, "method", "?"),
            getattr(request, "path", "?"),
            exc,
        )
        return Response(
            {"detail": f"the request body nests more than {MAX_JSON_DEPTH} levels deep (the API's depth limit)"},
            status=status.HTTP_400_BAD_REQUEST,
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
    return drf_exception_handler(_throttled_instead(exc, context) or exc, context)
