"""The devices' API views: the lab's devices, read-only (workers register them)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_view
from rest_framework import viewsets

from server.devices.api.filters import DeviceFilterSet
from server.devices.api.serializers import DeviceSerializer
from server.devices.models import Device


@extend_schema_view(
    list=extend_schema(
        summary="List the lab's devices",
        description="`?kind=android` lists the phones (with their model, SoC, ABI, Android version, CPU clusters, "
        "GPU and RAM in `hardware`, their delegates and core clusters in `capabilities`); `?status=offline` "
        "the unreachable devices, each with its `offline_reason` (no heartbeat, unplugged, adb 'offline' or "
        "'unauthorized').",
    ),
    retrieve=extend_schema(summary="A device"),
)
class DeviceViewSet(viewsets.ReadOnlyModelViewSet):
    """The lab's devices; they are shared by every team."""

    serializer_class = DeviceSerializer
    queryset = Device.objects.all()
    filterset_class = DeviceFilterSet
