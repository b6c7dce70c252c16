"""Routes of the networks' API: ``/api/models/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.networks.api.views import NetworkModelViewSet

router = AppRouter()
router.register("models", NetworkModelViewSet, basename="model")

urlpatterns = router.urls
