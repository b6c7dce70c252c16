"""What the API answers when no app's route takes a path."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import status


@csrf_exempt  # a path that names nothing is a 404 for every method, not a CSRF 403
def not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    """A path under /api/ that no route takes: 404 with the API's JSON body."""
    return JsonResponse({"detail": "Not found."}, status=status.HTTP_404_NOT_FOUND)
