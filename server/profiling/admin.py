"""Admin pages for jobs, results and operator timings."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from server.profiling.models import JobResult, OperatorTiming, ProfilingJob


class FrozenOnceFinishedAdmin(admin.ModelAdmin):
    """Rows of a finished job (succeeded, failed, cancelled) can be viewed, not changed: the job
    and its results are the record of what ran, and the dashboard, the API and the predictors
    read them as measured. Deleting stays possible, to clear a lab out."""

    def job_of(self, obj: Any) -> ProfilingJob:
        """The job the row belongs to."""
        raise NotImplementedError

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and self.job_of(obj).is_finished:
            return False
        return super().has_change_permission(request, obj)


@admin.register(ProfilingJob)
class ProfilingJobAdmin(FrozenOnceFinishedAdmin):
    """Jobs with their state; state changes go through the services, so it is read-only here,
    and a finished job is read-only as a whole."""

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

    def job_of(self, obj: ProfilingJob) -> ProfilingJob:
        return obj


@admin.register(JobResult)
class JobResultAdmin(FrozenOnceFinishedAdmin):
    """End-to-end results, one per job; read-only once the job finished."""

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

    def job_of(self, obj: JobResult) -> ProfilingJob:
        return obj.job


@admin.register(OperatorTiming)
class OperatorTimingAdmin(FrozenOnceFinishedAdmin):
    """Per-operator timings; read-only once the job finished."""

    list_display = ["result", "index", "name", "op_type", "kernel", "median", "p90", "mean", "std", "n", "fused_into"]
    list_filter = ["op_type"]
    search_fields = ["name", "op_type", "kernel"]
    raw_id_fields = ["result"]

    def job_of(self, obj: OperatorTiming) -> ProfilingJob:
        return obj.result.job
