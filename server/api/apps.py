"""App config for the REST API."""

from __future__ import annotations

from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API (no models of its own)."""

    name = "server.api"
    label = "api"
    verbose_name = "API"

    def ready(self) -> None:
        """Register the OpenAPI description of our token authentication."""
        from server.api import schema  # noqa: F401
