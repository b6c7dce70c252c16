"""Admin pages for devices."""

from __future__ import annotations

from django.contrib import admin

from server.devices.models import Device


@admin.register(Device)
class DeviceAdmin(admin.ModelAdmin):
    """Devices, with their worker and reachability."""

    list_display = ["name", "kind", "status", "worker", "last_heartbeat", "identity"]
    list_filter = ["kind", "status", "worker"]
    search_fields = ["name", "identity", "worker", "signature"]
    readonly_fields = ["signature", "registered_at", "offline_since"]
