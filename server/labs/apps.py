"""App config for lab machines."""

from __future__ import annotations

from django.apps import AppConfig


class LabsConfig(AppConfig):
    """Lab-machine identities: a worker name and a hashed, revocable lab token."""

    name = "server.labs"
    label = "labs"
    verbose_name = "Lab machines"

    def ready(self) -> None:
        """Describe the lab token scheme in the OpenAPI schema (the extension registers on import)."""
        from server.labs import schema  # noqa: F401
