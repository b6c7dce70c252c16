"""How models, devices, jobs and results look in the API."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from server.devices.models import Device
from server.networks.models import NetworkModel
from server.networks.services import operator_table
from server.profiling.models import JobResult, OperatorTiming, ProfilingJob

# -- networks ----------------------------------------------------------------------------------


class ModelUploadSerializer(serializers.Serializer):
    """A multipart upload: the model file and an optional display name."""

    file = serializers.FileField(help_text="ONNX, TFLite or graph JSON file.")
    name = serializers.CharField(required=False, max_length=200)


class OperatorRowSerializer(serializers.Serializer):
    """One row of a network's operator table (devicelab's Graph.op_table())."""

    index = serializers.IntegerField()
    name = serializers.CharField()
    type = serializers.CharField()
    category = serializers.CharField()
    inputs = serializers.ListField(child=serializers.CharField())
    outputs = serializers.ListField(child=serializers.CharField())
    input_shapes = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    output_shapes = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    attrs = serializers.DictField()
    macs = serializers.IntegerField()
    flops = serializers.IntegerField()
    params = serializers.IntegerField()


class NetworkModelSerializer(serializers.ModelSerializer):
    """A network as listed: name, format, hash and costs."""

    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = NetworkModel
        fields = [
            "id",
            "name",
            "format",
            "size_bytes",
            "sha256",
            "num_operators",
            "macs",
            "flops",
            "params",
            "summary",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class NetworkModelDetailSerializer(NetworkModelSerializer):
    """A network with its operator table."""

    operators = serializers.SerializerMethodField()

    class Meta(NetworkModelSerializer.Meta):
        fields = [*NetworkModelSerializer.Meta.fields, "operators"]
        read_only_fields = fields

    @extend_schema_field(OperatorRowSerializer(many=True))
    def get_operators(self, obj: NetworkModel) -> list[dict[str, Any]]:
        """The operator table, computed from the stored graph."""
        return operator_table(obj)


# -- devices -----------------------------------------------------------------------------------


class DeviceSerializer(serializers.ModelSerializer):
    """A lab device and whether it is reachable."""

    queue = serializers.CharField(read_only=True)

    class Meta:
        model = Device
        fields = [
            "id",
            "kind",
            "identity",
            "name",
            "hardware",
            "status",
            "worker",
            "last_heartbeat",
            "offline_since",
            "queue",
        ]
        read_only_fields = fields


# -- jobs --------------------------------------------------------------------------------------


class JobCreateSerializer(serializers.Serializer):
    """What a client sends to queue a job."""

    model = serializers.IntegerField(help_text="Id of one of your team's models.")
    device = serializers.IntegerField(help_text="Id of a device (GET /api/devices/).")
    settings = serializers.DictField(
        required=False,
        default=dict,
        help_text="ProfileSettings: backend, threads, cores, precision, warmup_runs, runs. Missing keys take "
        "their defaults; backend defaults to the device's kind.",
    )


class OperatorTimingSerializer(serializers.ModelSerializer):
    """One operator's measured time (ms); null statistics and ``fused_into`` when fused."""

    class Meta:
        model = OperatorTiming
        fields = [
            "index",
            "name",
            "op_type",
            "kernel",
            "input_shapes",
            "output_shapes",
            "attrs",
            "mean",
            "median",
            "std",
            "n",
            "fused_into",
        ]
        read_only_fields = fields


class E2EStatsSerializer(serializers.Serializer):
    """End-to-end latency statistics in ms."""

    mean = serializers.FloatField(source="e2e_mean")
    median = serializers.FloatField(source="e2e_median")
    p90 = serializers.FloatField(source="e2e_p90")
    std = serializers.FloatField(source="e2e_std")
    min = serializers.FloatField(source="e2e_min")
    max = serializers.FloatField(source="e2e_max")
    cv = serializers.FloatField(source="e2e_cv")
    n = serializers.IntegerField(source="e2e_n")
    noisy = serializers.BooleanField()


class ColdStartSerializer(serializers.Serializer):
    """First-use costs in ms."""

    load_ms = serializers.FloatField()
    first_run_ms = serializers.FloatField()


class JobResultSerializer(serializers.ModelSerializer):
    """What a job measured."""

    e2e = E2EStatsSerializer(source="*")
    cold = ColdStartSerializer(source="*")
    operators = OperatorTimingSerializer(many=True, read_only=True)

    class Meta:
        model = JobResult
        fields = [
            "attempt",
            "e2e",
            "cold",
            "samples_ms",
            "environment",
            "settings",
            "device_info",
            "created_at",
            "operators",
        ]
        read_only_fields = fields


class JobSerializer(serializers.ModelSerializer):
    """A job's state and progress, as listed."""

    model_name = serializers.CharField(source="model.name", read_only=True)
    device_name = serializers.CharField(source="device.name", read_only=True)

    class Meta:
        model = ProfilingJob
        fields = [
            "id",
            "model",
            "model_name",
            "device",
            "device_name",
            "settings",
            "state",
            "progress",
            "progress_message",
            "attempts",
            "failure_reason",
            "moved_from",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    """A job with its result and per-operator timings (null until it succeeded)."""

    result = serializers.SerializerMethodField()

    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "result"]
        read_only_fields = fields

    @extend_schema_field(JobResultSerializer(allow_null=True))
    def get_result(self, obj: ProfilingJob) -> dict[str, Any] | None:
        """The stored result, or None."""
        try:
            result = obj.result
        except JobResult.DoesNotExist:
            return None
        return JobResultSerializer(result).data
