"""Routes of the REST API: its schema and docs pages, each app's routes (its ``api/urls.py``), the
index of the list endpoints, and a JSON 404 for the rest.

The apps' routes are included by name, so this package imports no app's API: the apps' APIs
import what it shares (fields, filters, parsers, request bodies), never the other way round.
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny
from rest_framework.routers import APIRootView
from rest_framework.urlpatterns import format_suffix_patterns

from server.api.health import health
from server.api.views import not_found

# Each app with routes under /api/, in the order they are tried (no two take the same path).
APPS = ["networks", "profiling", "devices", "predictors", "fusion", "tenancy", "selection", "remote"]

# What GET /api/ lists: each router's prefix and the name of its list route.
LIST_ROUTES = {
    "models": "model-list",
    "jobs": "job-list",
    "devices": "device-list",
    "predictors": "predictor-list",
    "fusion/sweeps": "fusion-sweep-list",
    "fusion/plans": "fusion-plan-list",
    "sharing/sweeps": "sharing-sweep-list",
    "selection/simulations": "selection-simulation-list",
    "remote/runs": "remote-run-list",
}

urlpatterns: list[URLPattern | URLResolver] = [
    # Probes' readiness check: a plain view outside the schema (server/api/health.py).
    path("health/", health, name="health"),
    path(
        "schema/", SpectacularAPIView.as_view(permission_classes=[AllowAny], authentication_classes=[]), name="schema"
    ),
    path(
        "docs/",
        SpectacularSwaggerSplitView.as_view(
            url_name="schema", permission_classes=[AllowAny], authentication_classes=[]
        ),
        name="docs",
    ),
    path(
        "redoc/",
        SpectacularRedocView.as_view(
            url_name="schema", template_name="api/redoc.html", permission_classes=[AllowAny], authentication_classes=[]
        ),
        name="redoc",
    ),
    # /api/lab/...: the lab machines' calls, first: a heartbeat or a result is resolved without
    # trying every app's routes
    path("", include("server.labs.api.protocol_urls")),
    *(path("", include(f"server.{app}.api.urls")) for app in APPS),
    path("", include("server.labs.api.staff")),  # /api/labs/: the staff's list of lab machines
    *format_suffix_patterns([path("", APIRootView.as_view(api_root_dict=LIST_ROUTES), name="api-root")]),
    # Any other path under /api/ that ends in a slash (``/api/jobs/0.5/``: the router's ids have no
    # dot) is a JSON 404 like the API's own, not Django's HTML page. Paths without the slash are
    # left to APPEND_SLASH's redirect.
    re_path(r"^.*/$", not_found),
]
