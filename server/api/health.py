"""``GET /api/health/``: whether the web server answers and reaches its database, for probes.

A readiness probe (``latencylab up``, the compose file's healthcheck, a load balancer) asks it
every few seconds, so it must stay cheap and say nothing about the installation: a plain Django
view (no DRF: no authentication, no throttle that a busy probe could exhaust, no browsable page),
one ``SELECT 1``, and a fixed body. It is left out of the OpenAPI schema on purpose: it is not
part of the API a client programs against, and none of the API's error answers (401, 403, 429)
can come from it.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError, connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

log = logging.getLogger(__name__)


@never_cache
@require_safe
def health(request: HttpRequest) -> JsonResponse:
    """200 ``{"status": "ok"}`` when the database answers a trivial query, else 503 ``{"status": "unavailable"}``."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except DatabaseError:
        # The cause goes to the log, never to an unauthenticated caller.
        log.exception("health check: the database did not answer")
        return JsonResponse({"status": "unavailable"}, status=503)
    return JsonResponse({"status": "ok"})
