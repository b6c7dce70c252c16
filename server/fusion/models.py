"""What fusion experiments measured: a sweep's summary and its rows, a plan's comparison.

A fusion sweep or plan is a ``ProfilingJob`` of kind ``fusion_sweep`` or ``fusion_plan``: it is
queued, claimed, re-routed and failed like a profiling job. Its result is stored here, once per
job, by the run that held the claim (``services.ingest_sweep`` / ``ingest_plan``).

A sweep row is one set of operators and one fused variant (``devicelab.fusion.sweep.FusionRow``):
the columns the pages and the API filter and plot by, and the whole row as measured (raw samples,
statistics, the output check) in ``data``.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from server.profiling.models import ProfilingJob

KINDS_SEPARATOR = "|"


def kinds_key(kinds: list[str] | tuple[str, ...]) -> str:
    """The stored form of a tuple of operator kinds: ``|C|DWC|``, so that "contains kind X" is
    a ``contains`` on ``|X|`` whatever the database (no kind's name is part of another's between
    separators)."""
    return KINDS_SEPARATOR + KINDS_SEPARATOR.join(kinds) + KINDS_SEPARATOR


class FusionSweepResult(models.Model):
    """A finished sweep: where and what it measured, what it sampled, how long it took."""

    job = models.OneToOneField(ProfilingJob, on_delete=models.CASCADE, related_name="fusion_sweep")
    attempt = models.PositiveIntegerField()
    device_name = models.CharField(max_length=300)
    wave_size = models.PositiveIntegerField()
    precision = models.CharField(max_length=8)
    networks = models.JSONField(default=list, help_text="The networks' names, as the rows name them.")
    spec = models.JSONField(default=dict, help_text="SweepSpec.as_dict() as the worker ran it.")
    operators_per_kind = models.JSONField(default=dict)
    representatives = models.JSONField(default=dict)
    combinations = models.JSONField(default=list, help_text="Per size: combinations in all and planned.")
    sampled = models.BooleanField(help_text="Combinations were sampled, or the time budget stopped the sweep.")
    notes = models.JSONField(default=list)
    planned_units = models.PositiveIntegerField()
    measured_units = models.PositiveIntegerField()
    elapsed_s = models.FloatField()
    environment = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"fusion sweep of job #{self.job_id}"


class FusionMeasurement(models.Model):
    """One set of operators and one fused variant of a sweep, measured or refused (``error``)."""

    sweep = models.ForeignKey(FusionSweepResult, on_delete=models.CASCADE, related_name="rows")
    experiment = models.CharField(max_length=16, help_text='"combination" or "identical" (figure 9).')
    kinds = models.CharField(max_length=200, help_text="The operators' kinds, |-separated: |C|DWC|.")
    size = models.PositiveSmallIntegerField(help_text="How many operators are fused.")
    instance = models.PositiveIntegerField()
    variant = models.CharField(max_length=16, help_text='"rounded" or "unrounded" to the wave.')
    layout = models.CharField(max_length=16, blank=True, help_text="How the fused launch lays out its parts.")
    total_mflops = models.FloatField()
    throughput = models.FloatField(
        null=True,
        blank=True,
        help_text="Sequential / fused device span, paired over rounds (data.ratio: its interval).",
    )
    verdict = models.CharField(
        max_length=16,
        blank=True,
        help_text='Where the span ratio\'s interval lies: "above" or "below" 1, or "within noise" ("" when not measured).',
    )
    busy_ratio = models.FloatField(
        null=True, blank=True, help_text="Sequential / fused sum of the kernels' own times, paired over rounds."
    )
    throughput_wall = models.FloatField(null=True, blank=True)
    padding_fraction = models.FloatField(null=True, blank=True)
    correct = models.BooleanField(null=True, blank=True, help_text="Fused output equals sequential (None: not run).")
    error = models.TextField(blank=True)
    data = models.JSONField(help_text="The whole row: operators, launches, raw samples, statistics, check.")

    class Meta:
        ordering = ["sweep", "pk"]
        indexes = [models.Index(fields=["sweep", "experiment", "size"], name="fusionrow_sweep_exp_size_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(throughput__isnull=True) | Q(throughput__gt=0),
                name="fusionrow_throughput_positive",
            ),
            models.CheckConstraint(
                condition=~Q(error="") | Q(throughput__isnull=False),
                name="fusionrow_measured_or_error",
                violation_error_message="a row without an error needs its throughput.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kinds.strip(KINDS_SEPARATOR).replace(KINDS_SEPARATOR, '+')} ({self.variant})"

    @property
    def kind_list(self) -> list[str]:
        """The operators' kinds, in order."""
        return [k for k in self.kinds.split(KINDS_SEPARATOR) if k]


class FusionPlanResult(models.Model):
    """A finished plan run: sequential vs the planner's fusion vs fusing everything possible."""

    job = models.OneToOneField(ProfilingJob, on_delete=models.CASCADE, related_name="fusion_plan")
    attempt = models.PositiveIntegerField()
    networks = models.JSONField(default=list, help_text="The networks' names.")
    sequential_ms = models.FloatField(help_text="Median end-to-end time of the models run one kernel at a time.")
    plan_ms = models.FloatField()
    fuse_all_ms = models.FloatField()
    plan_ratio = models.FloatField(
        help_text="Sequential / plan device span, paired over rounds (> 1: the plan wins); data.ratios.plan has its "
        "interval."
    )
    fuse_all_ratio = models.FloatField()
    correct = models.BooleanField(help_text="Both fused strategies computed what the sequential run did.")
    data = models.JSONField(help_text="PlanComparison.as_dict(): samples, statistics, steps, checks.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"fusion plan of job #{self.job_id}"
