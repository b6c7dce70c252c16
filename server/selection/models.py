"""What model selection stores: simulations of CNNSelect against its baselines (seed 002,
section 5.2), run by the trainer like a predictor's training, and a team's network profiles."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from server.accounts.models import Team


class SimulationState(models.TextChoices):
    """Where a simulation is in its life."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class SelectionSimulation(models.Model):
    """One simulation: seeded request streams over SLA targets and network profiles, every
    policy picking a model per request; ``spec`` says what, ``result`` holds what it measured."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="selection_simulations")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    title = models.CharField(max_length=200, blank=True)
    spec = models.JSONField(help_text="The validated request: models with their profiles, SLAs, network profiles.")
    state = models.CharField(max_length=16, choices=SimulationState.choices, default=SimulationState.QUEUED)
    progress = models.FloatField(default=0.0)
    progress_message = models.CharField(max_length=200, blank=True)
    claimed_by = models.CharField(max_length=100, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    failure_reason = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True, help_text="devicelab.selection SimulationResult.as_dict().")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    lease_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="While running: until when its trainer is known alive (renewed as it runs); past it, the "
        "trainer was lost and the simulation is queued again.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]
        constraints = [
            models.CheckConstraint(condition=Q(state__in=SimulationState.values), name="selection_sim_state_valid"),
            # A succeeded simulation can always be drawn: it has its result.
            models.CheckConstraint(
                condition=~Q(state=SimulationState.SUCCEEDED) | Q(result__isnull=False),
                name="selection_sim_succeeded_has_result",
                violation_error_message="a succeeded simulation needs its result.",
            ),
        ]
        indexes = [
            # The trainer's reconciler: queued simulations, oldest first.
            models.Index(fields=["state", "created_at"], name="selection_sim_state_created"),
        ]

    def __str__(self) -> str:
        return f"selection simulation #{self.pk} ({self.state})"


class NetworkProfileKind(models.TextChoices):
    """Where a stored network profile comes from."""

    RECORDED = "recorded"  # transfers the lab measured: (bytes, seconds) samples
    CUSTOM = "custom"  # a user's own parameters


class StoredNetworkProfile(models.Model):
    """A team's network profile (the paper's conditions are built in, not stored)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="network_profiles")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=NetworkProfileKind.choices)
    data = models.JSONField(help_text="devicelab.selection NetworkProfile.as_dict().")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"],
                name="network_profile_team_name_unique",
                violation_error_message="The team has a network profile of that name already.",
            ),
            models.CheckConstraint(condition=Q(kind__in=NetworkProfileKind.values), name="network_profile_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"network profile {self.name!r} ({self.kind})"
