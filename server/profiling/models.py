"""Profiling jobs and what they measured.

The job row is the truth about a job (state, progress, attempts, failure reason), not the
broker: a Celery message only says "look at job N". Every state change is a conditional UPDATE
(``WHERE state IN (...)``, and for a worker's own changes ``AND claimed_by = <its token>``), so
of two processes racing for one job exactly one wins and the loser learns it from the row count.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from devicelab.measure.cold_starts import ColdStarts
from devicelab.text import clip_middle
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.models import NetworkModel


class JobState(models.TextChoices):
    """Where a job is in its life."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    SUCCEEDED = "succeeded", "Succeeded"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


class JobKind(models.TextChoices):
    """What a job does on its device. Every kind goes through the same queue, claim, progress,
    re-routing and failure handling; only the measuring and what is stored differ."""

    PROFILE = "profile", "Profile a model"
    FUSION_SWEEP = "fusion_sweep", "Fusion sweep"
    FUSION_PLAN = "fusion_plan", "Fusion plan"
    SHARING_SWEEP = "sharing_sweep", "Sharing sweep"
    REMOTE_SCENARIO = "remote_scenario", "Remote scenario"
    ONLINE_SCHEDULE = "online_schedule", "Online scheduling"


ACTIVE_STATES = (JobState.QUEUED, JobState.RUNNING)
FINISHED_STATES = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)

# Every allowed move. RUNNING -> QUEUED is the way back for a job whose worker died;
# QUEUED -> FAILED is for a job whose device went away with no equivalent to move to.
TRANSITIONS: dict[str, frozenset[str]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.FAILED}),
    JobState.RUNNING: frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.QUEUED}),
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}

# The kinds that measure one model: their jobs need it.
MODEL_KINDS = (JobKind.PROFILE, JobKind.REMOTE_SCENARIO)

# A job whose worker was lost this many times fails instead of going back to the queue: it is
# more likely to be what kills the worker than a victim of bad luck.
MAX_ATTEMPTS = 3


class ProfilingJobQuerySet(models.QuerySet["ProfilingJob"]):
    """Named queries on profiling jobs."""

    def for_team(self, team: Team) -> ProfilingJobQuerySet:
        """The jobs a team submitted."""
        return self.filter(team=team)

    def active(self) -> ProfilingJobQuerySet:
        """Queued or running jobs."""
        return self.filter(state__in=ACTIVE_STATES)

    def queued(self) -> ProfilingJobQuerySet:
        """Jobs waiting for their device's worker."""
        return self.filter(state=JobState.QUEUED)

    def running(self) -> ProfilingJobQuerySet:
        """Jobs a worker has claimed and is measuring."""
        return self.filter(state=JobState.RUNNING)

    def on_device(self, device: Device | int) -> ProfilingJobQuerySet:
        """Jobs routed to one device."""
        return self.filter(device=device)

    def unsent_since(self, cutoff: datetime) -> ProfilingJobQuerySet:
        """Queued jobs whose last message went out before ``cutoff`` (a job not sent yet counts
        from its creation: its first message is on its way after the commit)."""
        return self.queued().annotate(last_sent=Coalesce("sent_at", "created_at")).filter(last_sent__lt=cutoff)

    def active_since(self, cutoff: datetime) -> ProfilingJobQuerySet:
        """Jobs that started or finished at or after ``cutoff``: their device's worker is busy
        working through its queue."""
        return self.filter(Q(started_at__gte=cutoff) | Q(finished_at__gte=cutoff))

    def waiting_on_offline_device(self) -> ProfilingJobQuerySet:
        """Queued jobs whose device is offline: they wait for it (or an equivalent) to come back."""
        return self.queued().filter(device__status="offline")

    def stuck(self, since: datetime) -> ProfilingJobQuerySet:
        """Running jobs that have reported no progress since ``since``."""
        return self.running().annotate(last_sign=Coalesce("progress_at", "started_at")).filter(last_sign__lt=since)

    def transition(
        self,
        pk: int,
        to: str,
        *,
        from_states: Iterable[str],
        token: str | None = None,
        where: Q | None = None,
        **changes: Any,
    ) -> bool:
        """Move job ``pk`` to state ``to`` if it is in one of ``from_states`` (and claimed by
        ``token``, and matches ``where``, when given); True when this call made the move."""
        from_states = tuple(from_states)
        for state in from_states:
            if to not in TRANSITIONS[state]:
                raise ValueError(f"a job cannot go from {state} to {to}")
        rows = self.filter(pk=pk, state__in=from_states)
        if token is not None:
            rows = rows.filter(claimed_by=token)
        if where is not None:
            rows = rows.filter(where)
        return rows.update(state=to, **changes) == 1


def _count(n: int, noun: str) -> str:
    """``"3 shapes"``, ``"1 network"``; empty for none."""
    return f"{n} {noun}{'s' if n != 1 else ''}" if n else ""


class ProfilingJob(models.Model):
    """One request to measure on a device: profile a network with given settings (``kind``
    ``profile``), serve a network and measure it from a client under network profiles (kind
    ``remote_scenario``, its profiles in ``settings``), or an experiment (a fusion sweep or plan
    over several networks, a sharing sweep over SGEMM shapes and networks), whose workloads and
    options are in ``settings``, with ``model`` empty.

    The lifecycle methods below are the only writers of ``state``; each returns whether it
    made the move, and refreshes the instance when it did.
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="profiling_jobs")
    # RESTRICT: measurements outlive a careless model deletion, yet deleting a whole team (which
    # takes its models and jobs together) still works.
    model = models.ForeignKey(
        NetworkModel, null=True, blank=True, on_delete=models.RESTRICT, related_name="profiling_jobs"
    )
    kind = models.CharField(max_length=16, choices=JobKind.choices, default=JobKind.PROFILE)
    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="profiling_jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Who cancelled the job (empty when nobody did, or it was cancelled by a script without a user); "
        "finished_at says when.",
    )
    settings = models.JSONField(default=dict, help_text="ProfileSettings.as_dict(), validated at submission.")
    state = models.CharField(max_length=16, choices=JobState.choices, default=JobState.QUEUED)
    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=200, blank=True)
    progress_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    process_deaths = models.PositiveSmallIntegerField(
        default=0,
        help_text="How many of its attempts ended with the measuring process dead (killed, crashed): "
        "the first is retried as the machine's failure, a second fails the job as the model's.",
    )
    claimed_by = models.CharField(max_length=100, blank=True, help_text="Run token of the worker that claimed it.")
    claim_key = models.CharField(
        max_length=64,
        blank=True,
        help_text="The key of the claiming call: the same call made again (its answer was lost) is "
        "answered again, not taken for an attempt whose process died.",
    )
    failure_reason = models.TextField(blank=True)
    warnings = models.JSONField(
        default=list,
        blank=True,
        help_text="What the settings measure other than one may think, said at submission (Capabilities.cautions).",
    )
    moved_from = models.TextField(blank=True, help_text="Why and from where the job was re-routed, if it was.")
    sent_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a message last woke the device's worker for this job; the reconciler re-sends "
        "a queued job whose message seems lost.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = ProfilingJobQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=JobState.values), name="profilingjob_state_valid"),
            models.CheckConstraint(
                condition=~Q(kind__in=MODEL_KINDS) | Q(model__isnull=False),
                name="profilingjob_model_kinds_have_model",
                violation_error_message="a profiling job or a remote scenario needs a model.",
            ),
            models.CheckConstraint(
                condition=Q(progress__gte=0.0, progress__lte=1.0),
                name="profilingjob_progress_range",
                violation_error_message="progress must be between 0 and 1.",
            ),
            # A running job always knows which worker run holds it: that is what the worker's
            # later writes are checked against.
            models.CheckConstraint(
                condition=~Q(state=JobState.RUNNING) | (~Q(claimed_by="") & Q(started_at__isnull=False)),
                name="profilingjob_running_is_claimed",
                violation_error_message="a running job needs claimed_by and started_at.",
            ),
            models.CheckConstraint(
                condition=~Q(state__in=FINISHED_STATES) | Q(finished_at__isnull=False),
                name="profilingjob_finished_has_time",
                violation_error_message="a finished job needs finished_at.",
            ),
        ]
        indexes = [
            # mark_stale_devices_offline / requeue_orphaned_jobs: a device's queued or running jobs.
            models.Index(fields=["device", "state"], name="profilingjob_device_state_idx"),
            # GET /api/jobs/: a team's jobs, newest first.
            models.Index(fields=["team", "-created_at"], name="profilingjob_team_created_idx"),
            # stuck(since=...): running jobs by start time.
            models.Index(fields=["state", "started_at"], name="profilingjob_state_started_idx"),
        ]

    def __str__(self) -> str:
        return f"job #{self.pk} ({self.state})"

    @property
    def title(self) -> str:
        """What the job measures, in a few words: its model's name, or its kind and networks."""
        if self.kind == JobKind.PROFILE:
            return self.model.name if self.model is not None else "(deleted model)"
        if self.kind == JobKind.REMOTE_SCENARIO:
            name = self.model.name if self.model is not None else "(deleted model)"
            return f"remote run of {name}"
        if self.kind == JobKind.SHARING_SWEEP:
            spec = self.settings.get("spec") or {}
            parts = [_count(len(spec.get("shapes") or []), "shape"), _count(len(spec.get("networks") or []), "network")]
            return f"sharing sweep of {', '.join(p for p in parts if p)}"
        networks = self.settings.get("models") or self.settings.get("zoo") or []
        return f"{self.get_kind_display().lower()} of {len(networks)} network{'s' if len(networks) != 1 else ''}"

    @property
    def is_finished(self) -> bool:
        """Whether the job reached a final state."""
        return self.state in FINISHED_STATES

    def _moved(self, made: bool) -> bool:
        if made:
            self.refresh_from_db()
        return made

    def start(self, token: str, device_id: int | None = None, key: str = "") -> bool:
        """QUEUED -> RUNNING for the worker run ``token`` (only while routed to ``device_id``, when
        given), counting an attempt; ``key``: the claiming call's."""
        now = timezone.now()
        return self._moved(
            ProfilingJob.objects.transition(
                self.pk,
                JobState.RUNNING,
                from_states=[JobState.QUEUED],
                where=Q(device_id=device_id) if device_id is not None else None,
                attempts=F("attempts") + 1,
                claimed_by=token,
                claim_key=key,
                started_at=now,
                progress=0.0,
                progress_message="",
                progress_at=now,
                finished_at=None,
            )
        )

    def succeed(self, token: str) -> bool:
        """RUNNING -> SUCCEEDED, only for the worker run that claimed it."""
        return self._moved(
            ProfilingJob.objects.transition(
                self.pk,
                JobState.SUCCEEDED,
                from_states=[JobState.RUNNING],
                token=token,
                progress=1.0,
                progress_message="done",
                finished_at=timezone.now(),
            )
        )

    def fail(self, reason: str, token: str | None = None) -> bool:
        """RUNNING (claimed by ``token``) -> FAILED, or with no token QUEUED/RUNNING -> FAILED."""
        from_states = [JobState.RUNNING] if token is not None else [JobState.QUEUED, JobState.RUNNING]
        return self._moved(
            ProfilingJob.objects.transition(
                self.pk,
                JobState.FAILED,
                from_states=from_states,
                token=token,
                failure_reason=clip_middle(reason, 10_000),  # the cause is at the end: cut the middle
                finished_at=timezone.now(),
            )
        )

    def cancel(self, by: Any = None) -> bool:
        """QUEUED or RUNNING -> CANCELLED, recording who (``by``, a signed-in user) asked; a running
        job's worker learns it at its next progress report."""
        return self._moved(
            ProfilingJob.objects.transition(
                self.pk,
                JobState.CANCELLED,
                from_states=ACTIVE_STATES,
                finished_at=timezone.now(),
                cancelled_by=by if getattr(by, "is_authenticated", False) else None,
            )
        )

    def requeue(self, token: str | None = None) -> bool:
        """RUNNING -> QUEUED (its worker was lost), releasing the claim so the old run's writes miss."""
        return self._moved(
            ProfilingJob.objects.transition(
                self.pk,
                JobState.QUEUED,
                from_states=[JobState.RUNNING],
                token=token,
                claimed_by="",
                started_at=None,
                progress=0.0,
                progress_message="",
                progress_at=None,
            )
        )


class JobResult(models.Model):
    """What one successful attempt of a job measured: end-to-end statistics and cold start.

    One per job, written exactly once (by ``ingest_result``, with the attempt that produced it).
    Times are in milliseconds.
    """

    job = models.OneToOneField(ProfilingJob, on_delete=models.CASCADE, related_name="result")
    attempt = models.PositiveIntegerField()
    e2e_mean = models.FloatField()
    # Null where the runtime reported aggregates only (a phone's benchmark_model prints count,
    # avg, std, min and max, never its runs): nothing here is invented.
    e2e_median = models.FloatField(null=True, blank=True)
    e2e_p90 = models.FloatField(null=True, blank=True)
    e2e_std = models.FloatField(null=True, blank=True)
    e2e_min = models.FloatField(null=True, blank=True)
    e2e_max = models.FloatField(null=True, blank=True)
    e2e_cv = models.FloatField(null=True, blank=True)
    e2e_n = models.PositiveIntegerField()
    noisy = models.BooleanField(help_text="The coefficient of variation was above devicelab's HIGH_CV.")
    flags = models.JSONField(
        default=list,
        blank=True,
        help_text="Why the measurement should not be trusted as is, beside noisy: measured hot, throttled.",
    )
    samples_ms = models.JSONField(default=list)
    load_ms = models.FloatField()
    first_run_ms = models.FloatField()
    peak_memory_mb = models.FloatField(
        null=True, blank=True, help_text="The runtime's peak memory footprint while it ran (MB), where it reports one."
    )
    environment = models.JSONField(default=dict, blank=True)
    settings = models.JSONField(default=dict, help_text="The settings the worker really used.")
    device_info = models.JSONField(default=dict, blank=True, help_text="DeviceInfo as the worker reported it.")
    cold_starts = models.JSONField(
        default=dict,
        blank=True,
        help_text="ColdStarts.as_dict(): the cold starts (load + first run) as a distribution, with their "
        "source (in-process, or fresh-process for settings.cold_runs > 1) and samples; empty for a result "
        "stored before they were kept (load_ms and first_run_ms are its one cold start).",
    )
    time_breakdown = models.JSONField(
        default=dict,
        blank=True,
        help_text="TimeBreakdown.as_dict(): one inference stage by stage (decode, resize + crop, normalize, "
        "model load, inference, post-processing) per image format, or applicable=false with the reason; "
        "empty when it was not measured.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"result of job #{self.job_id}: {self.e2e_mean:.3f} ms"

    @property
    def cold_start_distribution(self) -> dict[str, Any]:
        """The stored cold starts, or for an older result its one in-process cold start, in the same shape."""
        if self.cold_starts:
            return dict(self.cold_starts)
        return ColdStarts.in_process(self.load_ms, self.first_run_ms).as_dict()

    @property
    def e2e_central(self) -> float:
        """The median, or the mean where the runtime reported no median (aggregates only)."""
        return self.e2e_median if self.e2e_median is not None else self.e2e_mean


class OperatorTiming(models.Model):
    """The time of one operator (or one runtime-inserted kernel) in a result.

    ``index`` is the operator's position in the graph, or null for a kernel the runtime
    inserted on its own. A fused operator has null statistics and ``fused_into`` naming the
    kernel that covers it.
    """

    # No index of its own: optiming_result_index_idx starts with result and serves its lookups,
    # and one index fewer makes the bulk insert of a result's rows cheaper.
    result = models.ForeignKey(JobResult, on_delete=models.CASCADE, related_name="operators", db_index=False)
    index = models.IntegerField(null=True, blank=True)
    name = models.CharField(max_length=300)
    op_type = models.CharField(max_length=64)
    kernel = models.CharField(max_length=300, blank=True)
    input_shapes = models.JSONField(default=list)
    output_shapes = models.JSONField(default=list)
    attrs = models.JSONField(default=dict)
    mean = models.FloatField(null=True, blank=True)
    median = models.FloatField(null=True, blank=True)
    p90 = models.FloatField(null=True, blank=True)
    std = models.FloatField(null=True, blank=True)
    n = models.PositiveIntegerField(null=True, blank=True)
    fused_into = models.CharField(max_length=300, blank=True)

    class Meta:
        indexes = [
            # Job detail: a result's operators in graph order.
            models.Index(fields=["result", "index"], name="optiming_result_index_idx"),
        ]
        constraints = [
            # Statistics are absent together (only when fused); when present, mean and n always
            # are, median and std where the runtime reports them (a phone's tool: the mean only).
            models.CheckConstraint(
                condition=(
                    Q(mean__isnull=True, median__isnull=True, std__isnull=True, n__isnull=True)
                    | Q(mean__isnull=False, n__isnull=False)
                ),
                name="optiming_stats_mean_n_or_none",
                violation_error_message="mean and n are set (median and std where reported), or all four are null.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.op_type})"
