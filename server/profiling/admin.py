"""Admin pages for jobs, results and operator timings."""

from __future__ import annotations

from django.contrib import admin

from server.profiling.models import JobResult, OperatorTiming, ProfilingJob


@admin.register(ProfilingJob)
class ProfilingJobAdmin(admin.ModelAdmin):
    """Jobs with their state; state changes go through the services, so it is read-only here."""

    list_display = ["id", "model", "device", "team", "state", "progress", "attempts", "created_at", "finished_at"]
    list_filter = ["state", "device", "team"]
    search_fields = ["model__name", "device__name", "failure_reason", "claimed_by"]
    readonly_fields = [
        "state",
        "progress",
        "progress_message",
        "progress_at",
        "attempts",
        "claimed_by",
        "failure_reason",
        "moved_from",
        "created_at",
        "started_at",
        "finished_at",
    ]
    list_select_related = ["model", "device", "team"]


@admin.register(JobResult)
class JobResultAdmin(admin.ModelAdmin):
    """End-to-end results, one per job."""

    list_display = [
        "job",
        "attempt",
        "e2e_mean",
        "e2e_median",
        "e2e_p90",
        "e2e_cv",
        "noisy",
        "load_ms",
        "first_run_ms",
        "created_at",
    ]
    list_filter = ["noisy", "job__device"]
    search_fields = ["job__model__name", "job__device__name"]
    raw_id_fields = ["job"]


@admin.register(OperatorTiming)
class OperatorTimingAdmin(admin.ModelAdmin):
    """Per-operator timings."""

    list_display = ["result", "index", "name", "op_type", "kernel", "mean", "median", "std", "n", "fused_into"]
    list_filter = ["op_type"]
    search_fields = ["name", "op_type", "kernel"]
    raw_id_fields = ["result"]
