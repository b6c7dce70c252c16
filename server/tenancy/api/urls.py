"""Routes of the multi-tenant sharing API: ``/api/sharing/sweeps/`` and ``/api/sharing/online/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.tenancy.api.online import OnlineRunViewSet
from server.tenancy.api.views import SharingSweepViewSet

router = AppRouter()
router.register("sharing/sweeps", SharingSweepViewSet, basename="sharing-sweep")
router.register("sharing/online", OnlineRunViewSet, basename="online-run")

urlpatterns = router.urls
