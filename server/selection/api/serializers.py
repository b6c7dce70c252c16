"""Serializers that document model selection's requests and answers (the service validates)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from server.selection.models import SelectionSimulation


class SelectRequestSerializer(serializers.Serializer[Any]):
    """POST /api/select/: one inference request to place."""

    device = serializers.IntegerField(help_text="the serving device: profiles are measured (or predicted) there")
    models = serializers.ListField(child=serializers.IntegerField(), help_text="the candidate models' ids")
    sla_ms = serializers.FloatField(help_text="T_sla: the end-to-end target of the request")
    input_ms = serializers.FloatField(required=False, help_text="T_input: how long the input took to arrive")
    network_profile = serializers.CharField(
        required=False, help_text="instead of input_ms: a preset or a stored profile estimates T_input"
    )
    input_bytes = serializers.IntegerField(required=False, help_text="the input's size for network_profile (330 KB)")
    output_bytes = serializers.IntegerField(
        required=False, help_text="the answer's size for network_profile (1 KB): the lab policy's round trip"
    )
    threshold_ms = serializers.FloatField(required=False, help_text="T_threshold (default 20, as simulations)")
    seed = serializers.IntegerField(required=False, help_text="seed of stage 3's draw (default: fresh)")
    policy = serializers.ChoiceField(
        choices=["lab", "paper"], required=False, help_text="lab (default: no dominated model) or paper (as printed)"
    )


class SelectTableRequestSerializer(serializers.Serializer[Any]):
    """POST /api/select/table/: the developer's question over a range of SLAs."""

    device = serializers.IntegerField(help_text="the serving device: profiles are measured (or predicted) there")
    models = serializers.ListField(child=serializers.IntegerField(), help_text="the candidate models' ids")
    sla_targets_ms = serializers.ListField(
        child=serializers.FloatField(min_value=0), min_length=1, max_length=200, help_text="the SLA targets (ms)"
    )
    network_profile = serializers.CharField(help_text="a preset or one of the team's stored profiles")
    input_bytes = serializers.IntegerField(required=False, min_value=1, help_text="the input's size (330 KB)")
    output_bytes = serializers.IntegerField(required=False, min_value=0, help_text="the answer's size (1 KB)")
    threshold_ms = serializers.FloatField(required=False, min_value=0, help_text="T_threshold (default 20)")
    policy = serializers.ChoiceField(choices=["lab", "paper"], required=False, help_text="CNNSelect's reading")
    requests = serializers.IntegerField(
        required=False,
        min_value=100,
        max_value=20_000,
        help_text="seeded requests per SLA (4,000); requests x SLA targets at most 200,000",
    )
    seed = serializers.IntegerField(required=False, min_value=0, help_text="seed of the requests (0)")
    on_device = serializers.IntegerField(
        required=False, allow_null=True, help_text="a device the models were profiled on: run there, no network"
    )
    load_per_request = serializers.BooleanField(
        required=False, help_text="with on_device: price each request with the model's measured cold start"
    )


class SelectCandidateSerializer(serializers.Serializer[Any]):
    """One candidate with its profile and where the numbers came from."""

    model = serializers.IntegerField()
    name = serializers.CharField()
    accuracy = serializers.FloatField()
    accuracy_source = serializers.CharField()
    mu_ms = serializers.FloatField()
    sigma_ms = serializers.FloatField()
    samples = serializers.IntegerField()
    latency_source = serializers.DictField()
    noisy = serializers.BooleanField(help_text="the profiling job flagged the samples noisy")


class SelectResponseSerializer(serializers.Serializer[Any]):
    """CNNSelect's answer (seed 002, section 5.1)."""

    chosen = serializers.DictField(help_text="model id and name")
    probabilities = serializers.DictField(child=serializers.FloatField(), help_text="Pr(m) per candidate name")
    base = serializers.CharField(help_text="m*, stage 1's pick (the fastest model when nothing qualified)")
    exploration = serializers.ListField(child=serializers.CharField(), help_text="M_E")
    t_budget = serializers.FloatField()
    t_lower = serializers.FloatField()
    t_upper = serializers.FloatField()
    t_explore = serializers.ListField(child=serializers.FloatField(), allow_null=True)
    fallback = serializers.BooleanField()
    utilities = serializers.DictField(help_text="U(m) of equation 4 for M_E ('inf' where mu(m) = T_L)")
    why = serializers.CharField()
    policy = serializers.CharField(help_text="lab or paper")
    dominated = serializers.DictField(help_text="models the lab policy dropped, each with one dominating it")
    warnings = serializers.ListField(child=serializers.CharField(), help_text="noisy latency profiles used")
    device = serializers.IntegerField()
    sla_ms = serializers.FloatField()
    input_ms = serializers.FloatField()
    input_source = serializers.DictField()
    threshold_ms = serializers.FloatField()
    candidates = SelectCandidateSerializer(many=True)


class SimulationSerializer(serializers.ModelSerializer[SelectionSimulation]):
    """A simulation as listed: what it was asked and where it is."""

    class Meta:
        model = SelectionSimulation
        fields = [
            "id",
            "title",
            "state",
            "progress",
            "progress_message",
            "failure_reason",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class SimulationDetailSerializer(SimulationSerializer):
    """A simulation with its frozen spec (models and their profiles, SLAs, network profiles) and,
    once it succeeded, its result (per SLA target, profile and policy: attainment, effective
    accuracy, end-to-end statistics, model usage; the comparison with greedy)."""

    class Meta(SimulationSerializer.Meta):
        fields = [*SimulationSerializer.Meta.fields, "spec", "result"]
        read_only_fields = fields


class SimulationCreateSerializer(serializers.Serializer[Any]):
    """POST /api/selection/simulations/ (documentation; the service validates)."""

    scenario = serializers.CharField(required=False, help_text='"paper": table 5\'s models and numbers')
    device = serializers.IntegerField(required=False, help_text="with models: profiles measured on this device")
    models = serializers.ListField(child=serializers.IntegerField(), required=False)
    sla_targets_ms = serializers.ListField(child=serializers.FloatField(), required=False)
    profiles = serializers.ListField(child=serializers.CharField(), required=False, help_text="network profile names")
    requests = serializers.IntegerField(required=False, help_text="per (SLA, profile) point; default 10,000")
    seed = serializers.IntegerField(required=False)
    threshold_ms = serializers.FloatField(required=False)
    policies = serializers.ListField(child=serializers.CharField(), required=False)
    input_bytes = serializers.IntegerField(required=False)
    title = serializers.CharField(required=False, allow_blank=True, max_length=200)
