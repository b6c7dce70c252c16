"""The router every app's API routes its viewsets with."""

from __future__ import annotations

from rest_framework.routers import DefaultRouter


class AppRouter(DefaultRouter):
    """An app's router: its routes take format suffixes (``/api/jobs/1.json``) as every API route
    does; the one index of them all (``GET /api/``) is ``server/api/urls.py``'s."""

    include_root_view = False
