"""Latency predictors, the measurements imported for devices we cannot reach, and lookup tables.

A ``Predictor`` row is one trained version for one device, scenario and method. Its artifact is
the JSON document ``devicelab.predict.artifacts.predictor_to_dict`` writes (numbers and names,
never a pickle), with the document's SHA-256 beside it; loading checks both, so a broken or
unknown artifact is refused with the reason instead of predicting wrong numbers. Like a
profiling job, the row is the truth about its training: every state change is a conditional
UPDATE, so of two trainer processes handed the same message exactly one trains.

A ready predictor is *rankable* when its evaluation had at least
``LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS`` test networks: an end-to-end MAPE measured on one or
two networks says little, and a predictor that scored 16 % on one network must not become a
device's best over one measured on fifty. An unrankable predictor answers when it is named, or
when its device has no rankable one (the answer then says so); it is never "best".
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from devicelab.text import clip_middle
from server.accounts.models import Team
from server.devices.models import Device


class PredictorState(models.TextChoices):
    """Where a predictor is in its life."""

    QUEUED = "queued", "Queued"
    TRAINING = "training", "Training"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class PredictorMethod(models.TextChoices):
    """The regression method of the per-kernel models (paper 001, section 4.2)."""

    LASSO = "lasso", "Lasso (non-negative, eq. 1)"
    RF = "rf", "Random forest"
    GBDT = "gbdt", "Gradient-boosted trees"
    MLP = "mlp", "Multi-layer perceptron"


class PredictorSource(models.TextChoices):
    """What a predictor trains on."""

    TIMINGS = "timings", "Profiling jobs of a team"
    QED = "qed", "Imported qed measurements"
    # a few end-to-end measurements of the device and other devices' predictors (predictors/adapt.py)
    ADAPTED = "adapted", "Adapted from other devices' predictors and a few measurements"


class PredictorQuerySet(models.QuerySet["Predictor"]):
    """Named queries on predictors."""

    def owned_by(self, team: Team | None) -> PredictorQuerySet:
        """A team's own predictors, or the shared ones for ``None`` (versions count per owner)."""
        return self.filter(team__isnull=True) if team is None else self.filter(team=team)

    def visible_to(self, team: Team) -> PredictorQuerySet:
        """A team's own predictors and the shared (lab-wide) ones."""
        return self.filter(Q(team=team) | Q(team__isnull=True))

    def ready(self) -> PredictorQuerySet:
        """Predictors that can answer predictions."""
        return self.filter(state=PredictorState.READY)

    def rankable(self) -> PredictorQuerySet:
        """Predictors evaluated on enough test networks to be ranked (``LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS``)."""
        return self.filter(_rankable_q())

    def best_first(self) -> PredictorQuerySet:
        """Rankable first, then the lowest end-to-end MAPE (unevaluated last), then the newest version."""
        unranked_last = Case(When(_rankable_q(), then=Value(0)), default=Value(1))
        return self.order_by(unranked_last, F("e2e_mape").asc(nulls_last=True), "-version", "-pk")


def _rankable_q() -> Q:
    return Q(n_test__gte=settings.LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS, e2e_mape__isnull=False)


def rank_reason(state: str, n_test: int, e2e_mape: float | None) -> str:
    """Why a predictor cannot be ranked against its device's others; "" when it can."""
    minimum = settings.LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS
    if state != PredictorState.READY:
        return f"it is {state}, not ready"
    if e2e_mape is None:
        return "it has no end-to-end test MAPE"
    if n_test < minimum:
        return (
            f"its test MAPE comes from {n_test} test network(s); ranking needs at least {minimum} "
            "(LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS): train it on more networks"
        )
    return ""


class Predictor(models.Model):
    """One trained (or training) version of a latency predictor for a device and scenario.

    ``team`` is null for a lab-wide predictor (trained on lab-wide data such as the imported
    qed phones); otherwise it trained on that team's timings and only that team sees it.
    """

    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.CASCADE, related_name="predictors")
    device = models.ForeignKey(Device, on_delete=models.PROTECT, related_name="predictors")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=16, choices=PredictorSource.choices)
    method = models.CharField(max_length=8, choices=PredictorMethod.choices)
    scenario = models.JSONField(help_text="devicelab.predict.Scenario.to_dict(): backend, device, threads, ...")
    scenario_key = models.CharField(max_length=300, help_text="Scenario.key, e.g. cpu:<id>|threads=1|cores=any|fp32")
    version = models.PositiveIntegerField(help_text="1, 2, ... per (device, scenario_key, method, owner).")
    params = models.JSONField(default=dict, blank=True, help_text="How it was requested: threads, seed, search, ...")
    state = models.CharField(max_length=16, choices=PredictorState.choices, default=PredictorState.QUEUED)
    progress_message = models.CharField(max_length=200, blank=True)
    failure_reason = models.TextField(blank=True)
    artifact = models.JSONField(null=True, blank=True, help_text="predictor_to_dict(): the predictor itself.")
    artifact_sha256 = models.CharField(max_length=64, blank=True)
    evaluation = models.JSONField(default=dict, blank=True)
    e2e_mape = models.FloatField(null=True, blank=True, help_text="evaluation['e2e_mape'], as a fraction.")
    meta = models.JSONField(default=dict, blank=True, help_text="Seed, training-data SHA-256, library versions.")
    n_train = models.PositiveIntegerField(default=0, help_text="Networks the final predictor trained on.")
    n_test = models.PositiveIntegerField(
        default=0, help_text="evaluation['n_test']: networks its e2e_mape was measured on (ranking needs enough)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="How many times a trainer took its training.")
    lease_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="While training: until when its trainer is known alive (renewed as it trains); past it, "
        "the trainer was lost and the training is queued again.",
    )
    trained_at = models.DateTimeField(null=True, blank=True)

    objects = PredictorQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            # Versions are numbered per owner: a team's own 1, 2, ... and the shared ones apart,
            # so no team learns how many versions another team trained.
            models.UniqueConstraint(
                fields=["device", "scenario_key", "method", "team", "version"],
                condition=Q(team__isnull=False),
                name="predictor_team_version_unique",
                violation_error_message="This version of the team's predictor already exists.",
            ),
            models.UniqueConstraint(
                fields=["device", "scenario_key", "method", "version"],
                condition=Q(team__isnull=True),
                name="predictor_shared_version_unique",
                violation_error_message="This version of the shared predictor already exists.",
            ),
            models.CheckConstraint(condition=Q(state__in=PredictorState.values), name="predictor_state_valid"),
            models.CheckConstraint(condition=Q(method__in=PredictorMethod.values), name="predictor_method_valid"),
            models.CheckConstraint(condition=Q(source__in=PredictorSource.values), name="predictor_source_valid"),
            # A ready predictor can always be loaded and checked: it has its artifact and digest.
            models.CheckConstraint(
                condition=~Q(state=PredictorState.READY) | (Q(artifact__isnull=False) & ~Q(artifact_sha256="")),
                name="predictor_ready_has_artifact",
                violation_error_message="a ready predictor needs its artifact and its SHA-256.",
            ),
        ]
        indexes = [
            # POST /api/predict/ with a device: its ready predictors, best first.
            models.Index(fields=["device", "state", "e2e_mape"], name="predictor_device_state_idx"),
            # GET /api/predictors/: a team's predictors, newest first.
            models.Index(fields=["team", "-created_at"], name="predictor_team_created_idx"),
        ]

    def __str__(self) -> str:
        return f"predictor #{self.pk} {self.method} v{self.version} on {self.device_id} ({self.state})"

    @property
    def is_shared(self) -> bool:
        """Whether every team sees it."""
        return self.team_id is None

    @property
    def rank_reason(self) -> str:
        """Why it cannot be its device's best ("" when it can be)."""
        return rank_reason(self.state, self.n_test, self.e2e_mape)

    @property
    def rankable(self) -> bool:
        """Whether it is ready and was evaluated on enough test networks to be ranked."""
        return not self.rank_reason

    def _update(self, from_states: tuple[str, ...], **changes: Any) -> bool:
        made = Predictor.objects.filter(pk=self.pk, state__in=from_states).update(**changes) == 1
        if made:
            self.refresh_from_db()
        return made

    def claim(self, lease_seconds: float) -> bool:
        """QUEUED -> TRAINING, one attempt more, under a lease of ``lease_seconds``; False when
        another trainer took it first or it is no longer queued."""
        now = timezone.now()
        return self._update(
            (PredictorState.QUEUED,),
            state=PredictorState.TRAINING,
            started_at=now,
            progress_message="",
            attempts=F("attempts") + 1,
            lease_until=now + timedelta(seconds=lease_seconds),
        )

    def renew_lease(self, lease_seconds: float) -> bool:
        """Extend this attempt's lease; False when the attempt is over (finished, or lost and
        queued again: another attempt's lease is not this one's)."""
        held = Predictor.objects.filter(pk=self.pk, state=PredictorState.TRAINING, attempts=self.attempts)
        return held.update(lease_until=timezone.now() + timedelta(seconds=lease_seconds)) == 1

    def report(self, message: str) -> bool:
        """Record what training is doing now; False when it is no longer training."""
        return (
            Predictor.objects.filter(pk=self.pk, state=PredictorState.TRAINING).update(progress_message=message[:200])
            == 1
        )

    def succeed(self, artifact: dict[str, Any], evaluation: dict[str, Any], meta: dict[str, Any], n_train: int) -> bool:
        """TRAINING -> READY with the artifact, its evaluation and how it was made."""
        return self._update(
            (PredictorState.TRAINING,),
            state=PredictorState.READY,
            artifact=artifact,
            artifact_sha256=str(artifact["sha256"]),
            evaluation=evaluation,
            e2e_mape=evaluation.get("e2e_mape"),
            n_test=int(evaluation.get("n_test") or 0),
            meta=meta,
            n_train=n_train,
            progress_message="ready",
            trained_at=timezone.now(),
        )

    def fail(self, reason: str) -> bool:
        """QUEUED or TRAINING -> FAILED with a reason a person can act on."""
        return self._update(
            (PredictorState.QUEUED, PredictorState.TRAINING),
            state=PredictorState.FAILED,
            failure_reason=clip_middle(reason, 10_000),  # the cause is at the end: cut the middle
            trained_at=None,
        )


class MeasurementSource(models.TextChoices):
    """Where imported measurements come from."""

    QED = "qed", "qed-usc/mobile-ml-benchmark"


class ImportedMeasurement(models.Model):
    """One network measured elsewhere on one device: its operator rows, the kernels that ran,
    and its end-to-end latency (ms). Re-importing the same data updates the row in place."""

    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="imported_measurements")
    source = models.CharField(max_length=16, choices=MeasurementSource.choices)
    network = models.CharField(max_length=200)
    operators = models.JSONField(
        help_text="The source's operator rows for this device: row, operation, feature, latency_us, kernel."
    )
    kernels = models.JSONField(help_text="The kernels that ran: type, name, ops, latency_ms.")
    e2e_ms = models.FloatField(help_text="Mean end-to-end latency on the device.")
    e2e_std_ms = models.FloatField(null=True, blank=True)
    extra = models.JSONField(default=dict, blank=True, help_text="What else the source says (FLOPS, size, files).")
    data_sha256 = models.CharField(max_length=64, help_text="SHA-256 of the measurements above.")
    imported_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["device", "network"]
        constraints = [
            # import_qed: one row per network, device and source, updated on re-import.
            models.UniqueConstraint(
                fields=["device", "source", "network"],
                name="importedmeasurement_unique",
                violation_error_message="This network's measurements on this device are already imported.",
            ),
            models.CheckConstraint(
                condition=Q(source__in=MeasurementSource.values), name="importedmeasurement_source_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.network} on {self.device_id} ({self.source}): {self.e2e_ms:.2f} ms"


class ArchitectureTable(models.Model):
    """A predictor's answers for every architecture of a finite NAS space, computed once.

    ``values`` holds one little-endian float64 per architecture (its index in the space): the
    sum of its predicted kernel latencies (ms), NaN where the predictor could not answer. The
    API answers those architectures from here instead of building and deducing each graph; the
    numbers are the ones ``ScenarioPredictor.predict`` gives (it computed them), and so are the
    warnings each answer carries (``warnings``: kernels outside the training range, stand-ins).
    """

    predictor = models.ForeignKey(Predictor, on_delete=models.CASCADE, related_name="tables")
    space = models.CharField(max_length=32, help_text="e.g. nb201 (the benchmark's CIFAR-10 skeleton)")
    artifact_sha256 = models.CharField(max_length=64, help_text="The artifact these values were computed with.")
    values = models.BinaryField()
    computed = models.PositiveIntegerField(help_text="Architectures with a value (not NaN).")
    warnings = models.JSONField(
        null=True,
        blank=True,
        help_text="The warnings of each architecture's prediction: {'distinct': [warning data], 'sets': "
        "[{'warnings': [positions in distinct], 'cells': [indices]}]}; null for a table built before warnings "
        "were stored (not used).",
    )
    seconds = models.FloatField(help_text="How long computing the table took.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["predictor", "space", "artifact_sha256"],
                name="architecturetable_unique",
                violation_error_message="This predictor already has a table for this space.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.space} table of predictor #{self.predictor_id} ({self.computed} values)"
