"""The network probe: transfers of known sizes between a client and the lab server, which the
client times to record a network profile of the path between them (``latencylab network record``).

``GET /api/network-probe/?bytes=N`` answers N incompressible bytes; ``POST /api/network-probe/``
reads and drops its body and answers how many bytes arrived. Neither touches the database, so a
transfer's time is the network's and the server's fixed cost per request (the fitted line's
latency), not a query's.
"""

from __future__ import annotations

import os
from functools import cache

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

MAX_PROBE_BYTES = 8 * 1024 * 1024  # a transfer of more says nothing a few of this size don't
READ_CHUNK = 64 * 1024


@cache
def _random_block() -> bytes:
    """MAX_PROBE_BYTES random bytes, made once per process: a download must not pay for making
    them, and no gzip on the way can shrink them."""
    return os.urandom(MAX_PROBE_BYTES)


class _AnyBody(BaseParser):
    """Declares the upload's body in the schema; the view reads the stream itself and never parses it."""

    media_type = "application/octet-stream"


def probe_size(raw: str | None) -> int:
    """The download size asked for, ``ValidationError`` naming the parameter."""
    if raw is None:
        raise ValidationError({"bytes": "give the size to download: ?bytes=N"})
    try:
        n = int(raw)
    except ValueError:
        raise ValidationError({"bytes": f"{raw[:40]!r} is not a whole number of bytes"}) from None
    if not 1 <= n <= MAX_PROBE_BYTES:
        raise ValidationError({"bytes": f"bytes must be between 1 and {MAX_PROBE_BYTES}, got {n}"})
    return n


class NetworkProbeView(APIView):
    """Transfers of a given size, to be timed by the client."""

    parser_classes = [_AnyBody]

    @extend_schema(
        summary="Download N bytes (to time the network to the lab)",
        parameters=[
            OpenApiParameter(
                "bytes",
                {"type": "integer", "minimum": 1, "maximum": MAX_PROBE_BYTES},
                required=True,
                description=f"1 .. {MAX_PROBE_BYTES}: the size to send",
            )
        ],
        responses={
            (200, "application/octet-stream"): OpenApiResponse(OpenApiTypes.BINARY, description="N random bytes"),
            400: OpenApiResponse(description="a missing or out-of-range size"),
        },
    )
    def get(self, request: Request) -> HttpResponse:
        """N random bytes, never cached and never compressed."""
        n = probe_size(request.query_params.get("bytes"))
        response = HttpResponse(_random_block()[:n], content_type="application/octet-stream")
        response["Cache-Control"] = "no-store"
        response["Content-Encoding"] = "identity"  # GZipMiddleware leaves an encoded answer alone
        return response

    @extend_schema(
        summary="Upload bytes (to time the network to the lab)",
        request={"application/octet-stream": OpenApiTypes.BINARY},
        responses={
            200: OpenApiResponse(description="{bytes: how many arrived}"),
            400: OpenApiResponse(description="a body larger than the probe takes"),
        },
    )
    def post(self, request: Request) -> Response:
        """Read the body to its end and drop it; how many bytes came."""
        received = 0
        stream = request.stream
        while stream is not None:
            chunk = stream.read(READ_CHUNK)
            if not chunk:
                break
            received += len(chunk)
            if received > MAX_PROBE_BYTES:
                raise ValidationError({"bytes": f"an upload probe is at most {MAX_PROBE_BYTES} bytes"})
        return Response({"bytes": received})


__all__ = ["MAX_PROBE_BYTES", "NetworkProbeView", "probe_size"]
