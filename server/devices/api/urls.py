"""Routes of the devices' API: ``/api/devices/``."""

from __future__ import annotations

from server.api.routers import AppRouter
from server.devices.api.views import DeviceViewSet

router = AppRouter()
router.register("devices", DeviceViewSet, basename="device")

urlpatterns = router.urls
