"""Routes of the profiling API: ``/api/jobs/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.profiling.api.views import JobViewSet

router = AppRouter()
router.register("jobs", JobViewSet, basename="job")

urlpatterns = router.urls
