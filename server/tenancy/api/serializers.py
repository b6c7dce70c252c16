"""How sharing sweeps look in the API: the job with its links, a sweep's summary (table 1, the
largest R, the ceiling, what the time budget left out) and its rows (the request body is in
``server.tenancy.api.requests``).

A sweep is a job (``ProfilingJob`` of kind ``sharing_sweep``): its id, state and progress are the
job's, and ``POST /api/jobs/{id}/cancel/`` cancels it. What it stored is shown once it succeeded.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from devicelab.tenancy.spec import STRATEGIES
from server.profiling.api.experiment_jobs import (
    ExperimentJobSerializer,
    RowSerializer,
    job_links,
    stored_result,
    url_of,
)
from server.profiling.models import ProfilingJob
from server.tenancy.models import SharingMeasurement, SharingStatus, SharingSweepResult, WorkloadKind
from server.tenancy.summary import row_counts


class SharingLinksSerializer(serializers.Serializer):
    """Where to read more of a sweep, and how to cancel it."""

    self = serializers.URLField()
    job = serializers.URLField(help_text="The job (GET /api/jobs/{id}/).")
    cancel = serializers.URLField(help_text="POST here to cancel it while queued or running.")
    rows = serializers.URLField(help_text="The sweep's rows, one per workload, R and strategy.")


class SharingJobSerializer(ExperimentJobSerializer):
    """A sweep as listed: the job's state and progress, its settings."""

    settings = serializers.JSONField(
        read_only=True,
        help_text="As checked at submission: the complete spec (every default filled in) and time_budget_s.",
    )

    @extend_schema_field(SharingLinksSerializer)
    def get_links(self, obj: ProfilingJob) -> dict[str, Any]:
        """URLs of this sweep, its job, its cancel and its rows."""
        request = self.context.get("request")
        return {
            "self": url_of("sharing-sweep-detail", obj.pk, request),
            **job_links(obj.pk, request),
            "rows": url_of("sharing-sweep-rows", obj.pk, request),
        }


class SharingRowCountsSerializer(serializers.Serializer):
    """How many rows a sweep stored, by status, and how their output checks came out."""

    total = serializers.IntegerField()
    ok = serializers.IntegerField(help_text="Measured rows.")
    memory_bound = serializers.IntegerField(help_text="Strategies whose footprint was over the memory budget.")
    unsupported = serializers.IntegerField(help_text="Strategies that cannot run the workload on the device.")
    error = serializers.IntegerField(help_text="Rows that failed (their error says why).")
    correct = serializers.IntegerField(help_text="Measured rows whose outputs passed every check.")
    incorrect = serializers.IntegerField(
        help_text="Measured rows whose outputs differed from the tenants' exclusive runs (should be 0)."
    )
    unchecked = serializers.IntegerField(help_text="Measured rows with no check recorded.")


class SharingSweepSummarySerializer(serializers.ModelSerializer):
    """What a finished sweep measured: where, which workloads, table 1, the largest R, the ceiling."""

    device = serializers.JSONField(
        help_text="The OpenCL device as the worker described it: name, platform, driver, compute units, memory."
    )
    spec = serializers.JSONField(help_text="The complete spec the worker ran (SharingSpec).")
    workloads = serializers.ListField(
        child=serializers.CharField(), help_text="The workloads' names: SGEMM shapes (MxNxK), then networks."
    )
    ceiling = serializers.JSONField(
        allow_null=True,
        help_text="numpy's SGEMM on the worker's cores on every tenant's own operands, interleaved with the "
        "strategies: what (what it is a ceiling of), numpy, blas, threads, and per shape (shapes.MxNxK) gflops "
        "(median), best_gflops and per_tenants {R: {gflops, best_gflops, gflops_samples, one_thread_ms, "
        "all_threads_ms}}; null when not measured, {error} when it failed.",
    )
    table1 = serializers.JSONField(
        help_text="Per workload: space-time's GFLOP/s over the next best of time-only and space-only, "
        "speedup_geomean over R in r_range, next_best, per_tenants [{tenants, gflops, next_best, "
        "next_best_gflops, speedup, ratio {ratio, low, high, rounds, confidence, verdict}}] (paired by round), "
        "significant {above, below, within noise} (R counted by their interval) and peers (the other super-kernels).",
    )
    largest_tenants = serializers.JSONField(
        help_text="Per workload and strategy: largest_measured, smallest_memory_bound and largest_that_fits "
        "(the memory model's) R (figure 5)."
    )
    notes = serializers.ListField(child=serializers.CharField(), help_text="What the sweep left out or decided.")
    not_measured = serializers.JSONField(
        help_text="The [{workload, tenants}] units the time budget left out, in the order they were due."
    )
    environment = serializers.JSONField(help_text="pyopencl and the OpenCL runtime's thread setting.")
    row_counts = serializers.SerializerMethodField()

    class Meta:
        model = SharingSweepResult
        fields = [
            "attempt",
            "device_name",
            "device",
            "spec",
            "workloads",
            "ceiling",
            "table1",
            "largest_tenants",
            "notes",
            "complete",
            "not_measured",
            "time_budget_s",
            "elapsed_s",
            "environment",
            "row_counts",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(SharingRowCountsSerializer)
    def get_row_counts(self, obj: SharingSweepResult) -> dict[str, int]:
        """The sweep's rows counted (``summary.row_counts``, as the dashboard counts them)."""
        c = row_counts(obj)
        return {
            "total": c.rows,
            "ok": c.measured,
            "memory_bound": c.memory_bound,
            "unsupported": c.unsupported,
            "error": c.errors,
            "correct": c.measured - c.incorrect - c.unchecked,
            "incorrect": c.incorrect,
            "unchecked": c.unchecked,
        }


class SharingSweepDetailSerializer(SharingJobSerializer):
    """A sweep with its result summary (null until it succeeded); its rows are at ``links.rows``."""

    result = serializers.SerializerMethodField()

    class Meta(SharingJobSerializer.Meta):
        fields = [*SharingJobSerializer.Meta.fields, "result"]
        read_only_fields = fields

    @extend_schema_field(SharingSweepSummarySerializer(allow_null=True))
    def get_result(self, obj: ProfilingJob) -> dict[str, Any] | None:
        """The stored summary, or None."""
        return stored_result(obj, "sharing_sweep", SharingSweepSummarySerializer)


class SharingRowSerializer(RowSerializer):
    """One strategy at one R on one workload; the whole row in ``data`` only when asked for
    (``?detail=true``: samples per round and per tenant make it large)."""

    workload_kind = serializers.ChoiceField(choices=WorkloadKind.choices, read_only=True, help_text="sgemm or network.")
    strategy = serializers.ChoiceField(choices=[(s, s) for s in STRATEGIES], read_only=True)
    status = serializers.ChoiceField(
        choices=SharingStatus.choices,
        read_only=True,
        help_text="ok (measured), memory_bound, unsupported or error (see error).",
    )
    correct = serializers.BooleanField(
        allow_null=True,
        read_only=True,
        help_text="The outputs passed every check against each tenant's exclusive run (null: not run).",
    )
    of_ceiling = serializers.JSONField(
        source="of_ceiling_json",
        read_only=True,
        allow_null=True,
        help_text="The row's GFLOP/s over numpy's ceiling on the same tenants' operands, paired by round: "
        "ratio, low, high (95% interval), rounds, verdict (above / below / within noise); null: no ceiling.",
    )
    # Not read-only, so that the schema does not require it: it is left out without ?detail=true.
    data = serializers.JSONField(
        required=False,
        help_text="Only with ?detail=true: the whole row (makespan and device samples per round, per-tenant "
        "latency samples, throughput per round, straggler, memory, checks, a network's batched plan).",
    )

    class Meta:
        model = SharingMeasurement
        fields = [
            "id",
            "workload",
            "workload_kind",
            "tenants",
            "strategy",
            "status",
            "throughput_gflops",
            "throughput_per_s",
            "latency_p50_ms",
            "latency_p99_ms",
            "straggler_gap_ms",
            "straggler_gap_ratio",
            "memory_bytes",
            "correct",
            "error",
            "of_ceiling",
            "data",
        ]
        read_only_fields = [f for f in fields if f != "data"]


__all__ = [
    "SharingJobSerializer",
    "SharingRowSerializer",
    "SharingSweepDetailSerializer",
    "SharingSweepSummarySerializer",
]
