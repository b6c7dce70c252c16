"""App config for networks."""

from __future__ import annotations

from django.apps import AppConfig


class NetworksConfig(AppConfig):
    """Networks that teams upload."""

    name = "server.networks"
    label = "networks"
    verbose_name = "Networks"

    def ready(self) -> None:
        """Connect the signal that deletes a deleted network's file."""
        from server.networks import signals  # noqa: F401
