"""App config for remote runs."""

from __future__ import annotations

from django.apps import AppConfig


class RemoteConfig(AppConfig):
    """Remote runs (jobs of kind ``remote_scenario``) and what they measured per network profile."""

    name = "server.remote"
    label = "remote"
    verbose_name = "Remote inference"
