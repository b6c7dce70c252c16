"""What sharing sweeps measured: a sweep's summary and one row per (workload, R, strategy).

A sharing sweep is a ``ProfilingJob`` of kind ``sharing_sweep``: it is queued, claimed, re-routed
and failed like a profiling job. Its result is stored here, once per job, by the run that held the
claim (``services.ingest_sharing``).

A row is ``devicelab.tenancy.rows.SharingRow.as_dict()``: the columns the pages and the API filter
and plot by (figures 3-5 and 7 of seed 003), and the whole row as measured (raw samples per round
and per tenant, statistics, memory, output checks) in ``data``.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from server.profiling.models import ProfilingJob


class WorkloadKind(models.TextChoices):
    """What the tenants run: one SGEMM of a shape, or one inference of a network."""

    SGEMM = "sgemm", "SGEMM shape"
    NETWORK = "network", "Network"


class SharingStatus(models.TextChoices):
    """How a strategy fared at one R (``devicelab.tenancy.rows.STATUSES``)."""

    OK = "ok", "Measured"
    MEMORY_BOUND = "memory_bound", "Memory-bound"
    UNSUPPORTED = "unsupported", "Unsupported"
    ERROR = "error", "Error"


class SharingSweepResult(models.Model):
    """A finished sharing sweep: where and what it measured, the ceiling, table 1, the largest R."""

    job = models.OneToOneField(ProfilingJob, on_delete=models.CASCADE, related_name="sharing_sweep")
    attempt = models.PositiveIntegerField()
    device_name = models.CharField(max_length=300)
    device = models.JSONField(default=dict, help_text="The OpenCL device as the sweep described it.")
    spec = models.JSONField(default=dict, help_text="SharingSpec.as_dict() as the worker ran it.")
    workloads = models.JSONField(default=list, help_text="The workloads' names: SGEMM shapes, then networks.")
    ceiling = models.JSONField(
        null=True, blank=True, help_text="numpy's SGEMM per shape on the same cores (None: not measured)."
    )
    table1 = models.JSONField(default=list, help_text="Space-time over the next best, per workload (table 1).")
    largest_tenants = models.JSONField(default=list, help_text="Per workload and strategy: the largest R (figure 5).")
    notes = models.JSONField(default=list)
    complete = models.BooleanField(help_text="Every (workload, R) was measured; False: the time budget stopped it.")
    not_measured = models.JSONField(
        default=list, help_text="The (workload, R) units the time budget left out, in the order they were due."
    )
    time_budget_s = models.FloatField(null=True, blank=True)
    elapsed_s = models.FloatField()
    environment = models.JSONField(default=dict, blank=True, help_text="pyopencl and the runtime's thread setting.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"sharing sweep of job #{self.job_id}"


class SharingMeasurement(models.Model):
    """One strategy at one R on one workload: measured, or why not (``status``, ``error``)."""

    # No index of its own: sharingrow_unique_cell starts with sweep and serves its lookups.
    sweep = models.ForeignKey(SharingSweepResult, on_delete=models.CASCADE, related_name="rows", db_index=False)
    workload = models.CharField(max_length=200, help_text="A shape's MxNxK or a network's name.")
    workload_kind = models.CharField(max_length=16, choices=WorkloadKind.choices)
    tenants = models.PositiveIntegerField(help_text="R: how many tenants share the device.")
    strategy = models.CharField(max_length=32)
    status = models.CharField(max_length=16, choices=SharingStatus.choices)
    throughput_gflops = models.FloatField(null=True, blank=True, help_text="From the median makespan.")
    throughput_per_s = models.FloatField(
        null=True, blank=True, help_text="Requests served per second (SGEMMs or inferences), from the median makespan."
    )
    latency_p50_ms = models.FloatField(null=True, blank=True, help_text="Pooled over every tenant's requests.")
    latency_p99_ms = models.FloatField(null=True, blank=True)
    straggler_gap_ms = models.FloatField(null=True, blank=True, help_text="Slowest tenant's p50 less the fastest's.")
    straggler_gap_ratio = models.FloatField(null=True, blank=True, help_text="The gap over the fastest tenant's p50.")
    memory_bytes = models.PositiveBigIntegerField(null=True, blank=True, help_text="The footprint at this R.")
    correct = models.BooleanField(
        null=True, blank=True, help_text="The outputs passed their check against each tenant's exclusive run."
    )
    error = models.TextField(blank=True)
    data = models.JSONField(help_text="The whole row: samples per round and tenant, statistics, memory, checks.")

    class Meta:
        ordering = ["sweep", "pk"]
        constraints = [
            # sharing_rows(): a sweep's rows by workload (and strategy, R); and a row is stored once.
            models.UniqueConstraint(
                fields=["sweep", "workload", "tenants", "strategy"],
                name="sharingrow_unique_cell",
                violation_error_message="a sweep has one row per workload, R and strategy.",
            ),
            models.CheckConstraint(condition=Q(status__in=SharingStatus.values), name="sharingrow_status_valid"),
            models.CheckConstraint(
                condition=Q(workload_kind__in=WorkloadKind.values), name="sharingrow_workload_kind_valid"
            ),
            models.CheckConstraint(
                condition=~Q(status=SharingStatus.OK) | Q(throughput_gflops__gt=0),
                name="sharingrow_ok_is_measured",
                violation_error_message="a measured row needs a positive throughput.",
            ),
            models.CheckConstraint(
                condition=Q(status=SharingStatus.OK) | ~Q(error=""),
                name="sharingrow_failed_says_why",
                violation_error_message="a row that was not measured says why in error.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.workload} R={self.tenants} {self.strategy} ({self.status})"


class OnlineRunResult(models.Model):
    """A finished online-scheduling run: one arrival trace replayed under every policy (job kind
    ``online_schedule``; ``devicelab.tenancy.online_on_device.OnlineRunRecord``)."""

    job = models.OneToOneField(ProfilingJob, on_delete=models.CASCADE, related_name="online_run")
    attempt = models.PositiveIntegerField()
    device_name = models.CharField(max_length=300)
    device = models.JSONField(default=dict, help_text="The OpenCL device as the run described it.")
    spec = models.JSONField(default=dict, help_text="OnlineSpec.as_dict() as the worker ran it.")
    t1_ms = models.FloatField(help_text="One request of one tenant served alone: the unit of load, target, window.")
    target_ms = models.FloatField()
    window_ms = models.FloatField()
    offered_per_s = models.FloatField(help_text="Requests per second the trace offers, every tenant together.")
    comparison = models.JSONField(default=list, help_text="Per policy: attainment, req/s, goodput, p50/p99, batch.")
    policies = models.JSONField(default=dict, help_text="Per policy its summary, without per-request records.")
    trace = models.JSONField(default=dict, help_text="The trace's seed, loads and summary.")
    notes = models.JSONField(default=list)
    elapsed_s = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"online run of job #{self.job_id}"
