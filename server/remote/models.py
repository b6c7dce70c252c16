"""What remote runs measured: the whole run, and one summary row per network profile.

A remote run is a ``ProfilingJob`` of kind ``remote_scenario``: it is queued, claimed, re-routed
and failed like a profiling job. Its result is stored here, once per job, by the run that held
the claim (``services.ingest_remote``): ``data`` is ``RemoteScenario.as_dict()`` as measured
(every request's times and link), and each profile's statistics are columns of its own row, the
numbers the API, the CLI and the page read.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from devicelab.remote.spec import PAYLOADS
from server.profiling.models import ProfilingJob


class RemoteScenarioResult(models.Model):
    """A finished remote run: the served model, the payload, the profiles as applied, every request."""

    job = models.OneToOneField(ProfilingJob, on_delete=models.CASCADE, related_name="remote_scenario")
    attempt = models.PositiveIntegerField()
    model_name = models.CharField(max_length=200)
    payload = models.CharField(max_length=16, choices=[(p, p) for p in PAYLOADS])
    content_type = models.CharField(max_length=100)
    payload_bytes = models.PositiveBigIntegerField(help_text="The body sent with every request.")
    load_ms = models.FloatField(help_text="The server's model load, paid once before the first request.")
    requests = models.PositiveIntegerField(help_text="Timed requests per profile.")
    warmup = models.PositiveIntegerField(help_text="Dropped requests per profile, before the timed ones.")
    spec = models.JSONField(help_text="RemoteSpec.as_dict() as the worker ran it, the network profiles included.")
    environment = models.JSONField(default=dict, blank=True, help_text="The server's runtime, threads and cores.")
    data = models.JSONField(help_text="RemoteScenario.as_dict(): every profile's requests and statistics.")
    elapsed_s = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(payload__in=PAYLOADS), name="remoteresult_payload_valid"),
        ]

    def __str__(self) -> str:
        return f"remote run of job #{self.job_id}"


class RemoteProfileSummary(models.Model):
    """One network profile of a remote run: each part's median and p90 (ms), the server's stages'
    medians, and the network's share of the end to end."""

    # No index of its own: remoteprofile_unique_position starts with result and serves its lookups.
    result = models.ForeignKey(RemoteScenarioResult, on_delete=models.CASCADE, related_name="profiles", db_index=False)
    position = models.PositiveSmallIntegerField(help_text="Where the job named this profile, from 0.")
    profile = models.CharField(max_length=100, help_text="A preset's, a stored profile's name, or unshaped.")
    requests = models.PositiveIntegerField()
    upload_median_ms = models.FloatField()
    upload_p90_ms = models.FloatField()
    server_median_ms = models.FloatField()
    server_p90_ms = models.FloatField()
    compute_median_ms = models.FloatField()
    compute_p90_ms = models.FloatField()
    download_median_ms = models.FloatField()
    download_p90_ms = models.FloatField()
    remainder_median_ms = models.FloatField(
        null=True,
        blank=True,
        help_text="End to end less upload, server and download, each timed on its own: what no clock attributes. "
        "Null for a run measured before the download was timed (it was the remainder then).",
    )
    remainder_p90_ms = models.FloatField(null=True, blank=True)
    e2e_median_ms = models.FloatField()
    e2e_p90_ms = models.FloatField()
    e2e_mean_ms = models.FloatField()
    e2e_std_ms = models.FloatField()
    network_share = models.FloatField(help_text="(upload + download) / end to end, of the means.")
    stages_ms = models.JSONField(
        help_text="Medians of the server's stages: decode, resize_crop, normalize, compute, postprocess, other."
    )

    class Meta:
        ordering = ["result", "position"]
        constraints = [
            # a run's profiles in the order the job named them; each named once
            models.UniqueConstraint(
                fields=["result", "position"],
                name="remoteprofile_unique_position",
                violation_error_message="a remote run has one row per position.",
            ),
            models.UniqueConstraint(
                fields=["result", "profile"],
                name="remoteprofile_unique_profile",
                violation_error_message="a remote run measures each profile once.",
            ),
            models.CheckConstraint(
                condition=Q(requests__gte=1), name="remoteprofile_has_requests", violation_error_message="no requests."
            ),
            models.CheckConstraint(
                condition=Q(network_share__gte=0.0, network_share__lte=1.0),
                name="remoteprofile_share_range",
                violation_error_message="the network's share is between 0 and 1.",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.profile} of remote run #{self.result_id}"
