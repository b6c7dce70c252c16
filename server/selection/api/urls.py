"""Routes of the model-selection API: ``/api/select/``, the network profiles and their probe,
``/api/selection/simulations/``."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from server.api.routers import AppRouter
from server.selection.api.network_probe_views import NetworkProbeView
from server.selection.api.views import NetworkProfileView, SelectTableView, SelectView, SimulationViewSet

router = AppRouter()
router.register("selection/simulations", SimulationViewSet, basename="selection-simulation")

urlpatterns: list[URLPattern | URLResolver] = [
    path("select/", SelectView.as_view(), name="select"),
    path("select/table/", SelectTableView.as_view(), name="select-table"),
    path("network-profiles/", NetworkProfileView.as_view(), name="network-profiles"),
    path("network-probe/", NetworkProbeView.as_view(), name="network-probe"),
    *router.urls,
]
