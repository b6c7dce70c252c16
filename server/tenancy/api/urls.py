"""Routes of the multi-tenant sharing API: ``/api/sharing/sweeps/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.tenancy.api.views import SharingSweepViewSet

router = AppRouter()
router.register("sharing/sweeps", SharingSweepViewSet, basename="sharing-sweep")

urlpatterns = router.urls
