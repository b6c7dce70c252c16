"""How remote runs look in the API: the job with its links, and once it succeeded what it measured
(the request body is in ``server.remote.api.requests``).

A remote run is a job (``ProfilingJob`` of kind ``remote_scenario``): its id, state and progress
are the job's, and ``POST /api/jobs/{id}/cancel/`` cancels it. The stored run holds one summary
per network profile and, in ``data``, every request as measured.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from devicelab.remote.spec import PAYLOADS
from server.profiling.api.experiment_jobs import ExperimentJobSerializer, job_links, stored_result, url_of
from server.profiling.models import ProfilingJob
from server.remote.models import RemoteProfileSummary, RemoteScenarioResult


class RemoteLinksSerializer(serializers.Serializer):
    """Where to read more of a run, and how to cancel it."""

    self = serializers.URLField()
    job = serializers.URLField(help_text="The job (GET /api/jobs/{id}/).")
    cancel = serializers.URLField(help_text="POST here to cancel it while queued or running.")
    model = serializers.URLField(help_text="The served model (GET /api/models/{id}/).")


class RemoteJobSerializer(ExperimentJobSerializer):
    """A remote run as listed: the job's state and progress, the model, the settings."""

    model = serializers.IntegerField(source="model_id", read_only=True, help_text="The served model's id.")
    model_name = serializers.CharField(source="model.name", read_only=True)
    settings = serializers.JSONField(
        read_only=True,
        help_text="As checked at submission: profiles, network_profiles (each profile as it will be applied, "
        "null for unshaped), requests, warmup, payload, seed, threads, cores.",
    )

    class Meta(ExperimentJobSerializer.Meta):
        fields = [*ExperimentJobSerializer.Meta.fields, "model", "model_name"]
        read_only_fields = fields

    @extend_schema_field(RemoteLinksSerializer)
    def get_links(self, obj: ProfilingJob) -> dict[str, Any]:
        """URLs of this run, its job, its cancel and its model."""
        request = self.context.get("request")
        assert obj.model_id is not None  # profilingjob_model_kinds_have_model: a run has its model
        return {
            "self": url_of("remote-run-detail", obj.pk, request),
            **job_links(obj.pk, request),
            "model": url_of("model-detail", obj.model_id, request),
        }


class RemoteProfileSerializer(serializers.ModelSerializer):
    """One network profile of a run: each part's median and p90 (ms), the remainder, the
    server's stages, the network's share."""

    remainder_median_ms = serializers.FloatField(
        allow_null=True,
        help_text="End to end less upload, server and download, each timed on its own (the server reading the "
        "body's end, handing it to a thread, the client waking up); null for a run measured before the download "
        "was timed.",
    )

    stages_ms = serializers.JSONField(
        help_text="Medians (ms) of the server's stages: decode, resize_crop, normalize, compute, postprocess, and "
        "other (its time outside them)."
    )

    class Meta:
        model = RemoteProfileSummary
        fields = [
            "profile",
            "requests",
            "upload_median_ms",
            "upload_p90_ms",
            "server_median_ms",
            "server_p90_ms",
            "compute_median_ms",
            "compute_p90_ms",
            "download_median_ms",
            "download_p90_ms",
            "remainder_median_ms",
            "remainder_p90_ms",
            "e2e_median_ms",
            "e2e_p90_ms",
            "e2e_mean_ms",
            "e2e_std_ms",
            "network_share",
            "stages_ms",
        ]
        read_only_fields = fields


class RemoteRunResultSerializer(serializers.ModelSerializer):
    """What a finished run measured: the model as served, the payload, each profile's summary and
    every request."""

    payload = serializers.ChoiceField(choices=[(p, p) for p in PAYLOADS], read_only=True)
    spec = serializers.JSONField(help_text="The spec the worker ran, the network profiles as applied.")
    environment = serializers.JSONField(help_text="The server: runtime, threads, cores.")
    profiles = RemoteProfileSerializer(many=True, read_only=True, help_text="In the order the job named them.")
    data = serializers.JSONField(
        help_text="RemoteScenario.as_dict(): per profile (results.<name>) the statistics of upload, server, "
        "download, e2e and compute, the last answer's top 5, and every request (times, bytes, the link it used)."
    )

    class Meta:
        model = RemoteScenarioResult
        fields = [
            "attempt",
            "model_name",
            "payload",
            "content_type",
            "payload_bytes",
            "load_ms",
            "requests",
            "warmup",
            "spec",
            "environment",
            "elapsed_s",
            "profiles",
            "data",
            "created_at",
        ]
        read_only_fields = fields


class RemoteRunDetailSerializer(RemoteJobSerializer):
    """A run with its result (null until it succeeded)."""

    result = serializers.SerializerMethodField()

    class Meta(RemoteJobSerializer.Meta):
        fields = [*RemoteJobSerializer.Meta.fields, "result"]
        read_only_fields = fields

    @extend_schema_field(RemoteRunResultSerializer(allow_null=True))
    def get_result(self, obj: ProfilingJob) -> dict[str, Any] | None:
        """The stored run, or None."""
        return stored_result(obj, "remote_scenario", RemoteRunResultSerializer)


__all__ = ["RemoteJobSerializer", "RemoteProfileSerializer", "RemoteRunDetailSerializer", "RemoteRunResultSerializer"]
