"""App config for multi-tenant sharing experiments."""

from __future__ import annotations

from django.apps import AppConfig


class TenancyConfig(AppConfig):
    """Sharing sweeps (jobs of kind ``sharing_sweep``) and their rows."""

    name = "server.tenancy"
    label = "tenancy"
    verbose_name = "Multi-tenant sharing"
