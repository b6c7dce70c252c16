"""Query filters of the device list."""

from __future__ import annotations

from server.api.filters import StrictFilterSet, choice_filter
from server.devices.models import Device, DeviceKind, DeviceQuerySet, DeviceStatus


class DeviceFilterSet(StrictFilterSet):
    """``GET /api/devices/?kind=&status=``."""

    kind = choice_filter("kind", DeviceKind.choices, "only devices of this kind")
    status = choice_filter(
        "status",
        DeviceStatus.choices,
        "`online`: reachable devices, idle or running a job; `busy`: those running a job; "
        "`offline`: those not heart-beating",
        method="filter_status",
    )

    class Meta:
        model = Device
        fields = ["kind", "status"]

    def filter_status(self, queryset: DeviceQuerySet, name: str, value: str) -> DeviceQuerySet:
        """``online`` means reachable (busy devices are online too); the others are exact."""
        if value == DeviceStatus.ONLINE:
            return queryset.online()
        return queryset.filter(status=value)
