"""App config for fusion experiments."""

from __future__ import annotations

from django.apps import AppConfig


class FusionConfig(AppConfig):
    """Fusion sweeps and plans (jobs of kind ``fusion_sweep`` and ``fusion_plan``) and their rows."""

    name = "server.fusion"
    label = "fusion"
    verbose_name = "Fusion experiments"
