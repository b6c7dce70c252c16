"""Admin pages for uploaded networks."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from server.networks.models import NetworkModel


@admin.register(NetworkModel)
class NetworkModelAdmin(admin.ModelAdmin):
    """Uploaded networks with their state and costs; the parsed graph (megabytes) is not shown
    (the API's and the dashboard's model pages show its operators)."""

    list_display = ["name", "team", "format", "state", "num_operators", "macs", "params", "size_bytes", "created_at"]
    list_filter = ["state", "format", "team"]
    search_fields = ["name", "sha256", "team__name"]
    exclude = ["graph"]
    readonly_fields = [
        "sha256",
        "filename",
        "size_bytes",
        "state",
        "failure_reason",
        "summary",
        "macs",
        "flops",
        "params",
        "num_operators",
        "created_by",
        "created_at",
        "parsed_at",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[NetworkModel]:
        """Without the graph column: a list of networks never loads it."""
        return super().get_queryset(request).defer("graph")
