"""App config for profiling."""

from __future__ import annotations

from django.apps import AppConfig


class ProfilingConfig(AppConfig):
    """Profiling jobs, results and operator timings."""

    name = "server.profiling"
    label = "profiling"
    verbose_name = "Profiling"
