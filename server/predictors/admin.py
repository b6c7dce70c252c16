"""Admin pages for predictors, imported measurements and lookup tables."""

from __future__ import annotations

from django.contrib import admin

from server.predictors.models import ArchitectureTable, ImportedMeasurement, Predictor


@admin.register(Predictor)
class PredictorAdmin(admin.ModelAdmin):
    """Predictor versions; training writes them, so what it produced is read-only here."""

    list_display = ["id", "device", "method", "version", "state", "e2e_mape", "n_test", "n_train", "team", "created_at"]
    list_filter = ["state", "method", "source", "device"]
    search_fields = ["device__name", "scenario_key", "failure_reason", "artifact_sha256"]
    readonly_fields = [
        "state",
        "progress_message",
        "failure_reason",
        "artifact",
        "artifact_sha256",
        "evaluation",
        "e2e_mape",
        "meta",
        "n_train",
        "n_test",  # from the evaluation: whether the predictor can be ranked follows from it
        "created_at",
        "started_at",
        "trained_at",
    ]
    list_select_related = ["device", "team"]


@admin.register(ImportedMeasurement)
class ImportedMeasurementAdmin(admin.ModelAdmin):
    """Networks measured elsewhere, per device."""

    list_display = ["network", "device", "source", "e2e_ms", "updated_at"]
    list_filter = ["source", "device"]
    search_fields = ["network", "device__name"]
    readonly_fields = ["data_sha256", "imported_at", "updated_at"]
    list_select_related = ["device"]


@admin.register(ArchitectureTable)
class ArchitectureTableAdmin(admin.ModelAdmin):
    """Precomputed answers of a predictor for a NAS space."""

    list_display = ["predictor", "space", "computed", "seconds", "created_at"]
    list_filter = ["space"]
    search_fields = ["artifact_sha256"]
    exclude = ["values"]
    readonly_fields = ["predictor", "space", "artifact_sha256", "computed", "seconds", "warnings", "created_at"]
