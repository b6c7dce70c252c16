"""The dashboard app: server-rendered pages with plotly figures, scoped to the user's team."""

from __future__ import annotations

from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """Pages for people; the REST API in ``server.api`` is for programs."""

    name = "dashboard"
    verbose_name = "Dashboard"
