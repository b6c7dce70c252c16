"""App config for model selection (CNNSelect) and its simulations."""

from __future__ import annotations

from django.apps import AppConfig


class SelectionConfig(AppConfig):
    """CNNSelect answers, its simulations against greedy, and the network profiles they use."""

    name = "server.selection"
    label = "selection"
    verbose_name = "Model selection"
