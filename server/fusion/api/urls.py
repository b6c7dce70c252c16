"""Routes of the fusion API: ``/api/fusion/sweeps/`` and ``/api/fusion/plans/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.fusion.api.views import FusionPlanViewSet, FusionSweepViewSet

router = AppRouter()
router.register("fusion/sweeps", FusionSweepViewSet, basename="fusion-sweep")
router.register("fusion/plans", FusionPlanViewSet, basename="fusion-plan")

urlpatterns = router.urls
