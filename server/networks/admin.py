"""Admin pages for uploaded networks."""

from __future__ import annotations

from django.contrib import admin

from server.networks.models import NetworkModel


@admin.register(NetworkModel)
class NetworkModelAdmin(admin.ModelAdmin):
    """Uploaded networks with their costs."""

    list_display = ["name", "team", "format", "num_operators", "macs", "params", "size_bytes", "created_at"]
    list_filter = ["format", "team"]
    search_fields = ["name", "sha256", "team__name"]
    readonly_fields = [
        "sha256",
        "size_bytes",
        "graph",
        "summary",
        "macs",
        "flops",
        "params",
        "num_operators",
        "created_by",
        "created_at",
    ]
