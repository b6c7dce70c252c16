"""Routes of the REST API, its schema and its docs page."""

from __future__ import annotations

from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.permissions import AllowAny
from rest_framework.routers import DefaultRouter

from server.api.fusion_views import FusionPlanViewSet, FusionSweepViewSet
from server.api.network_probe_views import NetworkProbeView
from server.api.predict_views import PredictorViewSet, PredictView, SideBySideView
from server.api.remote_views import RemoteRunViewSet
from server.api.selection_views import NetworkProfileView, SelectView, SimulationViewSet
from server.api.sharing_views import SharingSweepViewSet
from server.api.views import DeviceViewSet, JobViewSet, NetworkModelViewSet, not_found

router = DefaultRouter()
router.register("models", NetworkModelViewSet, basename="model")
router.register("jobs", JobViewSet, basename="job")
router.register("devices", DeviceViewSet, basename="device")
router.register("predictors", PredictorViewSet, basename="predictor")
router.register("fusion/sweeps", FusionSweepViewSet, basename="fusion-sweep")
router.register("fusion/plans", FusionPlanViewSet, basename="fusion-plan")
router.register("sharing/sweeps", SharingSweepViewSet, basename="sharing-sweep")
router.register("selection/simulations", SimulationViewSet, basename="selection-simulation")
router.register("remote/runs", RemoteRunViewSet, basename="remote-run")

urlpatterns = [
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
    path("predict/", PredictView.as_view(), name="predict"),
    path("predict/side-by-side/", SideBySideView.as_view(), name="predict-side-by-side"),
    path("select/", SelectView.as_view(), name="select"),
    path("network-profiles/", NetworkProfileView.as_view(), name="network-profiles"),
    path("network-probe/", NetworkProbeView.as_view(), name="network-probe"),
    path("", include(router.urls)),
    # Any other path under /api/ that ends in a slash (``/api/jobs/0.5/``: the router's ids have no
    # dot) is a JSON 404 like the API's own, not Django's HTML page. Paths without the slash are
    # left to APPEND_SLASH's redirect.
    re_path(r"^.*/$", not_found),
]
