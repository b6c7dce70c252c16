"""Routes of the remote-inference API: ``/api/remote/runs/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.remote.api.views import RemoteRunViewSet

router = AppRouter()
router.register("remote/runs", RemoteRunViewSet, basename="remote-run")

urlpatterns = router.urls
