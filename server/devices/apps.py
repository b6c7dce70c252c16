"""App config for devices."""

from __future__ import annotations

from django.apps import AppConfig


class DevicesConfig(AppConfig):
    """Devices that workers register and heart-beat."""

    name = "server.devices"
    label = "devices"
    verbose_name = "Devices"
