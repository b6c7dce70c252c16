"""How fusion sweeps and plans look in the API: the job with its links, a sweep's summary and
rows, a plan's comparison (the request bodies are in ``server.fusion.api.requests``).

A sweep or a plan is a job (``ProfilingJob`` of kind ``fusion_sweep`` / ``fusion_plan``): its id,
state and progress are the job's, and ``POST /api/jobs/{id}/cancel/`` cancels it. What it stored
is shown once it succeeded; a sweep's rows and headline numbers are counted and summarized by
``server.fusion.summary``, as the dashboard shows them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from devicelab.fusion.spec import KINDS
from server.fusion.models import FusionMeasurement, FusionPlanResult, FusionSweepResult
from server.fusion.summary import check_counts, headlines
from server.profiling.api.experiment_jobs import (
    ExperimentJobSerializer,
    RowSerializer,
    job_links,
    stored_result,
    url_of,
)
from server.profiling.models import JobKind, ProfilingJob


class FusionLinksSerializer(serializers.Serializer):
    """Where to read more of a sweep or plan, and how to cancel it."""

    self = serializers.URLField()
    job = serializers.URLField(help_text="The job (GET /api/jobs/{id}/).")
    cancel = serializers.URLField(help_text="POST here to cancel it while queued or running.")
    rows = serializers.URLField(required=False, help_text="A sweep's measured rows.")
    sweep = serializers.URLField(required=False, allow_null=True, help_text="The sweep a plan reads, if any.")


class FusionJobSerializer(ExperimentJobSerializer):
    """A sweep or plan as listed: the job's state and progress, its networks and settings."""

    settings = serializers.JSONField(
        read_only=True,
        help_text="As checked at submission: zoo, models, model_names, precision, and a sweep's complete spec or a "
        "plan's options and sweep.",
    )

    @extend_schema_field(FusionLinksSerializer)
    def get_links(self, obj: ProfilingJob) -> dict[str, Any]:
        """URLs of this resource, its job, its cancel, and a sweep's rows or a plan's sweep."""
        request = self.context.get("request")
        links: dict[str, Any] = {}
        if obj.kind == JobKind.FUSION_SWEEP:
            links["self"] = url_of("fusion-sweep-detail", obj.pk, request)
            links["rows"] = url_of("fusion-sweep-rows", obj.pk, request)
        else:
            links["self"] = url_of("fusion-plan-detail", obj.pk, request)
            sweep = (obj.settings or {}).get("sweep")
            links["sweep"] = url_of("fusion-sweep-detail", sweep, request) if sweep else None
        return {**links, **job_links(obj.pk, request)}


class RowCountsSerializer(serializers.Serializer):
    """How many rows a sweep stored, and how their checks came out."""

    total = serializers.IntegerField()
    errors = serializers.IntegerField(help_text="Sets the fuser or the driver refused (their error says why).")
    correct = serializers.IntegerField(help_text="Fused kernels that computed what the sequential run did.")
    incorrect = serializers.IntegerField(help_text="Fused kernels whose outputs differed (should be 0).")
    unchecked = serializers.IntegerField(help_text="Measured rows with no check recorded.")


class HeadlineSerializer(serializers.Serializer):
    """The throughput (sequential / fused) of one combination size in one variant, over its
    measured rows (``summary.headlines``: figure 8's averages, as the dashboard shows them)."""

    size = serializers.IntegerField()
    sets = serializers.CharField(help_text="pairs, triples or sets of N.")
    variant = serializers.CharField()
    count = serializers.IntegerField()
    median = serializers.FloatField(help_text="The median of the rows' paired span ratios.")
    min = serializers.FloatField()
    max = serializers.FloatField()
    above = serializers.IntegerField(help_text="Rows whose ratio's interval lies wholly above 1 (fusing won).")
    below = serializers.IntegerField(help_text="Rows whose interval lies wholly below 1 (fusing lost).")
    within_noise = serializers.IntegerField(help_text="Rows whose interval holds 1: the noise cannot tell.")
    share_above_1 = serializers.FloatField(help_text="above / count: the share significantly faster fused.")
    busy_median = serializers.FloatField(
        allow_null=True, help_text="The median of the rows' busy ratios (the kernels' own times, gaps left out)."
    )


class FusionSweepSummarySerializer(serializers.ModelSerializer):
    """What a finished sweep measured: where, what it planned and sampled, how long it took."""

    combinations = serializers.JSONField(help_text="Per size: {size, total, planned} combinations of kinds.")
    operators_per_kind = serializers.JSONField(help_text="How many operators of each kind the networks hold.")
    spec = serializers.JSONField(help_text="The complete spec the worker ran.")
    notes = serializers.ListField(child=serializers.CharField(), help_text="Sampling, kinds left out, refusals.")
    networks = serializers.ListField(child=serializers.CharField())
    row_counts = serializers.SerializerMethodField()
    headlines = serializers.SerializerMethodField()

    class Meta:
        model = FusionSweepResult
        fields = [
            "attempt",
            "device_name",
            "networks",
            "wave_size",
            "precision",
            "spec",
            "operators_per_kind",
            "representatives",
            "combinations",
            "sampled",
            "notes",
            "planned_units",
            "measured_units",
            "elapsed_s",
            "environment",
            "row_counts",
            "headlines",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(RowCountsSerializer)
    def get_row_counts(self, obj: FusionSweepResult) -> dict[str, int]:
        """The sweep's rows counted (``summary.check_counts``, as the dashboard counts them)."""
        counts = check_counts(obj)
        return {
            "total": counts.rows,
            "errors": counts.errors,
            "correct": counts.correct,
            "incorrect": counts.incorrect,
            "unchecked": counts.unchecked,
        }

    @extend_schema_field(HeadlineSerializer(many=True))
    def get_headlines(self, obj: FusionSweepResult) -> list[dict[str, Any]]:
        """Median, range and the counts significantly above 1, below 1 and within noise per
        combination size and variant."""
        return [{**dataclasses.asdict(h), "sets": h.sets, "share_above_1": h.share_above_1} for h in headlines(obj)]


class FusionSweepDetailSerializer(FusionJobSerializer):
    """A sweep with its result summary (null until it succeeded); its rows are at ``links.rows``."""

    result = serializers.SerializerMethodField()

    class Meta(FusionJobSerializer.Meta):
        fields = [*FusionJobSerializer.Meta.fields, "result"]
        read_only_fields = fields

    @extend_schema_field(FusionSweepSummarySerializer(allow_null=True))
    def get_result(self, obj: ProfilingJob) -> dict[str, Any] | None:
        """The stored summary, or None."""
        return stored_result(obj, "fusion_sweep", FusionSweepSummarySerializer)


class FusionRowSerializer(RowSerializer):
    """One set of operators and one fused variant of a sweep; the whole row in ``data`` only when
    asked for (``?detail=true``: raw samples make it large)."""

    kinds = serializers.ListField(
        source="kind_list", child=serializers.ChoiceField(choices=list(KINDS)), help_text="The operators' kinds."
    )
    throughput = serializers.FloatField(
        allow_null=True,
        help_text="Sequential / fused device span, paired over rounds (> 1: fusion wins); its interval is data.ratio.",
    )
    verdict = serializers.CharField(
        help_text='"above" or "below" when the ratio\'s 95 % interval lies wholly above or below 1, else "within noise" '
        '("" when refused).'
    )
    busy_ratio = serializers.FloatField(
        allow_null=True, help_text="Sequential / fused sum of the kernels' own times (launch gaps left out), paired."
    )
    throughput_wall = serializers.FloatField(allow_null=True, help_text="The same ratio on the host clock.")
    padding_fraction = serializers.FloatField(
        allow_null=True, help_text="Share of the fused launch's work-items that belong to no operator."
    )
    correct = serializers.BooleanField(allow_null=True, help_text="Fused output equals sequential (null: not run).")
    # Not read-only, so that the schema does not require it: it is left out without ?detail=true.
    data = serializers.JSONField(
        required=False,
        help_text="Only with ?detail=true: the whole row (operators with MFLOPs and work sizes, the fused launch, both "
        "sides' raw samples and statistics, the output check).",
    )

    class Meta:
        model = FusionMeasurement
        fields = [
            "id",
            "experiment",
            "kinds",
            "size",
            "instance",
            "variant",
            "layout",
            "total_mflops",
            "throughput",
            "verdict",
            "busy_ratio",
            "throughput_wall",
            "padding_fraction",
            "correct",
            "error",
            "data",
        ]
        read_only_fields = [f for f in fields if f != "data"]


class FusionPlanComparisonSerializer(serializers.ModelSerializer):
    """A finished plan: end-to-end time of the networks run together, three ways."""

    networks = serializers.ListField(child=serializers.CharField())
    data = serializers.JSONField(
        help_text="The whole comparison: each strategy's samples and statistics, the plan's steps, the checks."
    )

    class Meta:
        model = FusionPlanResult
        fields = [
            "attempt",
            "networks",
            "sequential_ms",
            "plan_ms",
            "fuse_all_ms",
            "plan_ratio",
            "fuse_all_ratio",
            "correct",
            "data",
            "created_at",
        ]
        read_only_fields = fields


class FusionPlanDetailSerializer(FusionJobSerializer):
    """A plan with its comparison (null until it succeeded)."""

    result = serializers.SerializerMethodField()

    class Meta(FusionJobSerializer.Meta):
        fields = [*FusionJobSerializer.Meta.fields, "result"]
        read_only_fields = fields

    @extend_schema_field(FusionPlanComparisonSerializer(allow_null=True))
    def get_result(self, obj: ProfilingJob) -> dict[str, Any] | None:
        """The stored comparison, or None."""
        return stored_result(obj, "fusion_plan", FusionPlanComparisonSerializer)


__all__ = [
    "FusionJobSerializer",
    "FusionPlanComparisonSerializer",
    "FusionPlanDetailSerializer",
    "FusionRowSerializer",
    "FusionSweepDetailSerializer",
    "FusionSweepSummarySerializer",
]
