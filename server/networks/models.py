"""Networks a team uploaded, stored with the graph LatencyLab parsed from them."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from server.accounts.models import Team


class ModelFormat(models.TextChoices):
    """The file format a network arrived in."""

    ONNX = "onnx", "ONNX"
    TFLITE = "tflite", "TFLite"
    JSON = "json", "Graph JSON"


def model_upload_path(instance: NetworkModel, filename: str) -> str:
    """Files are named by content hash, one folder per team."""
    return f"models/team-{instance.team_id}/{instance.sha256}.{instance.format}"


class NetworkModelQuerySet(models.QuerySet["NetworkModel"]):
    """Named queries on networks."""

    def for_team(self, team: Team) -> NetworkModelQuerySet:
        """The networks a team uploaded."""
        return self.filter(team=team)


class NetworkModel(models.Model):
    """A network a team uploaded: the original file plus its graph, summary and costs.

    The same bytes uploaded twice by one team are one row (``sha256`` is unique per team).
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="network_models")
    name = models.CharField(max_length=200)
    file = models.FileField(upload_to=model_upload_path, max_length=300)
    format = models.CharField(max_length=16, choices=ModelFormat.choices)
    size_bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    graph = models.JSONField(help_text="The parsed graph, as devicelab.graph.graph_to_dict writes it.")
    summary = models.JSONField(help_text="devicelab's Graph.summary(): totals and operator-type counts.")
    macs = models.BigIntegerField()
    flops = models.BigIntegerField()
    params = models.BigIntegerField()
    num_operators = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = NetworkModelQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-pk"]
        verbose_name = "network model"
        constraints = [
            # upload_model: the same bytes from the same team are the existing row, not a new one.
            models.UniqueConstraint(
                fields=["team", "sha256"],
                name="networkmodel_team_sha256_unique",
                violation_error_message="This team already uploaded a file with these bytes.",
            ),
            models.CheckConstraint(condition=Q(format__in=ModelFormat.values), name="networkmodel_format_valid"),
        ]
        indexes = [
            # GET /api/models/: a team's networks, newest first.
            models.Index(fields=["team", "-created_at"], name="networkmodel_team_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.format}, #{self.pk})"
