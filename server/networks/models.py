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


class ModelState(models.TextChoices):
    """Where a network is in its life: a big upload is parsed by the trainer after it was stored."""

    PARSING = "parsing", "Parsing"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


def model_upload_path(instance: NetworkModel, filename: str) -> str:
    """Files are named by content hash, one folder per team."""
    return f"models/team-{instance.team_id}/{instance.sha256}.{instance.format}"


class NetworkModelQuerySet(models.QuerySet["NetworkModel"]):
    """Named queries on networks."""

    def for_team(self, team: Team) -> NetworkModelQuerySet:
        """The networks a team uploaded."""
        return self.filter(team=team)

    def ready(self) -> NetworkModelQuerySet:
        """Networks whose graph is parsed: the ones a job can profile."""
        return self.filter(state=ModelState.READY)

    def parsing(self) -> NetworkModelQuerySet:
        """Networks stored but not parsed yet (the trainer re-sends their parse when it starts)."""
        return self.filter(state=ModelState.PARSING)

    def waiting_for_parse(self) -> NetworkModelQuerySet:
        """Networks parsing that no trainer holds: their parse waits in the queue (or was lost)."""
        return self.parsing().filter(parse_lease_until__isnull=True)

    def listed(self) -> NetworkModelQuerySet:
        """Without the parsed graph (megabytes per network): what a list of networks needs."""
        return self.defer("graph")


class NetworkModel(models.Model):
    """A network a team uploaded: the original file plus its graph, summary and costs.

    The same bytes uploaded twice by one team are one row (``sha256`` is unique per team). A
    big upload is stored ``parsing`` (graph, summary and costs null) and the trainer fills them
    in (``ready``) or says why it could not (``failed``, ``failure_reason``; its file removed).
    """

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="network_models")
    name = models.CharField(max_length=200)
    file = models.FileField(upload_to=model_upload_path, max_length=300, blank=True)
    filename = models.CharField(
        max_length=255, blank=True, default="", help_text="The name the file was uploaded under."
    )
    format = models.CharField(max_length=16, choices=ModelFormat.choices)
    size_bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    state = models.CharField(max_length=16, choices=ModelState.choices, default=ModelState.READY)
    failure_reason = models.TextField(blank=True, default="")
    graph = models.JSONField(
        null=True, blank=True, help_text="The parsed graph, as devicelab.graph.graph_to_dict writes it."
    )
    summary = models.JSONField(
        null=True, blank=True, help_text="devicelab's Graph.summary(): totals and operator-type counts."
    )
    macs = models.BigIntegerField(null=True, blank=True)
    flops = models.BigIntegerField(null=True, blank=True)
    params = models.BigIntegerField(null=True, blank=True)
    num_operators = models.PositiveIntegerField(null=True, blank=True)
    # What the team says the network scores (ImageNet top-1/top-5 for a classifier, in %):
    # model selection trades it against latency. Null: use the zoo's published numbers when the
    # network is named like a zoo model, else unknown.
    top1_accuracy = models.FloatField(null=True, blank=True)
    top5_accuracy = models.FloatField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    parsed_at = models.DateTimeField(null=True, blank=True)
    # A parse in progress holds a lease, renewed by its trainer; a lapsed one (the trainer was
    # killed) is sent again with the attempt counted, or failed past MAX_PARSE_ATTEMPTS.
    parse_attempts = models.PositiveSmallIntegerField(default=0)
    parse_lease_until = models.DateTimeField(
        null=True, blank=True, help_text="Empty while the parse waits for a trainer; set while one parses it."
    )

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
            models.CheckConstraint(
                condition=(Q(top1_accuracy__isnull=True) | Q(top1_accuracy__gte=0, top1_accuracy__lte=100))
                & (Q(top5_accuracy__isnull=True) | Q(top5_accuracy__gte=0, top5_accuracy__lte=100)),
                name="networkmodel_accuracy_percent",
                violation_error_message="An accuracy is a percentage, 0 to 100.",
            ),
            models.CheckConstraint(condition=Q(state__in=ModelState.values), name="networkmodel_state_valid"),
            # Jobs and pages read the graph of every ready network: it is there.
            models.CheckConstraint(
                condition=~Q(state=ModelState.READY)
                | Q(graph__isnull=False, summary__isnull=False, num_operators__isnull=False),
                name="networkmodel_ready_has_graph",
                violation_error_message="A ready network has its graph, summary and costs.",
            ),
        ]
        indexes = [
            # GET /api/models/: a team's networks, newest first.
            models.Index(fields=["team", "-created_at"], name="networkmodel_team_created_idx"),
            # The trainer's start: every network still parsing (few rows, so a partial index).
            models.Index(fields=["created_at"], name="networkmodel_parsing_idx", condition=Q(state=ModelState.PARSING)),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.format}, #{self.pk})"

    @property
    def is_ready(self) -> bool:
        """Whether the graph is parsed (a job can profile it)."""
        return self.state == ModelState.READY
