"""App config for predictors."""

from __future__ import annotations

from django.apps import AppConfig


class PredictorsConfig(AppConfig):
    """Latency predictors, the measurements imported for them, and their lookup tables."""

    name = "server.predictors"
    label = "predictors"
    verbose_name = "Predictors"
