"""How predictors and predictions look in the API."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from server.predictors.models import Predictor, PredictorMethod


class PredictorSerializer(serializers.ModelSerializer):
    """A predictor version as listed: device, method, state and its errors."""

    device_name = serializers.CharField(source="device.name", read_only=True)
    shared = serializers.BooleanField(source="is_shared", read_only=True)
    kernel_mape = serializers.SerializerMethodField()

    class Meta:
        model = Predictor
        fields = [
            "id",
            "device",
            "device_name",
            "method",
            "version",
            "state",
            "progress_message",
            "scenario",
            "source",
            "shared",
            "e2e_mape",
            "kernel_mape",
            "n_train",
            "created_at",
            "trained_at",
            "failure_reason",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.DictField(child=serializers.FloatField()))
    def get_kernel_mape(self, obj: Predictor) -> dict[str, float]:
        """MAPE per kernel type (fractions) of the evaluation."""
        return dict((obj.evaluation or {}).get("kernel_mape", {}))


class PredictorDetailSerializer(PredictorSerializer):
    """A predictor with its whole evaluation and how it was made."""

    class Meta(PredictorSerializer.Meta):
        fields = [*PredictorSerializer.Meta.fields, "params", "artifact_sha256", "evaluation", "meta"]
        read_only_fields = fields


class PredictorCreateSerializer(serializers.Serializer):
    """What a client sends to train a new predictor version."""

    device = serializers.IntegerField(help_text="Id of a device (GET /api/devices/).")
    method = serializers.ChoiceField(choices=PredictorMethod.choices, default="gbdt")
    threads = serializers.IntegerField(default=1, min_value=1, help_text="The scenario's thread count.")
    seed = serializers.IntegerField(default=0, min_value=0)
    search = serializers.ChoiceField(
        choices=["paper", "fast"], default="paper", help_text="Hyper-parameter search: the paper's, or a quick one."
    )
    overhead = serializers.ChoiceField(
        choices=["constant", "affine", "calibrated"],
        default="constant",
        help_text="T_overhead model: the paper's constant, a * sum + T, or a * predicted_sum**b + T (calibrated).",
    )


class ArchitectureSerializer(serializers.Serializer):
    """One architecture: a name and exactly one of graph, nb201, onnx_base64 (schema only)."""

    name = serializers.CharField(required=False)
    graph = serializers.DictField(required=False, help_text="A graph JSON document (schema_version 1).")
    nb201 = serializers.CharField(required=False, help_text="A NAS-Bench-201 cell string.")
    onnx_base64 = serializers.CharField(required=False, help_text="An .onnx file, base64-encoded.")


class PredictRequestSerializer(serializers.Serializer):
    """A batch of architectures to predict, for a device or a named predictor."""

    device = serializers.IntegerField(required=False, help_text="A device: its best ready predictor answers.")
    predictor = serializers.IntegerField(required=False, help_text="A predictor id (GET /api/predictors/).")
    method = serializers.ChoiceField(choices=PredictorMethod.choices, required=False)
    architectures = ArchitectureSerializer(many=True)
    breakdown = serializers.BooleanField(default=False, help_text="Also return each kernel's predicted latency.")


class KernelResultSerializer(serializers.Serializer):
    """One deduced kernel's predicted latency."""

    name = serializers.CharField()
    type = serializers.CharField()
    ops = serializers.ListField(child=serializers.IntegerField())
    latency_ms = serializers.FloatField()
    model = serializers.CharField()


class PredictionResultSerializer(serializers.Serializer):
    """One architecture's predicted latency (ms)."""

    name = serializers.CharField()
    latency_ms = serializers.FloatField()
    kernels_ms = serializers.FloatField()
    overhead_ms = serializers.FloatField()
    kernels = KernelResultSerializer(many=True, required=False)


class AnsweringPredictorSerializer(serializers.Serializer):
    """Which predictor answered."""

    id = serializers.IntegerField()
    version = serializers.IntegerField()
    method = serializers.CharField()
    device = serializers.IntegerField()
    scenario = serializers.DictField()


class PredictResponseSerializer(serializers.Serializer):
    """The answer of POST /api/predict/."""

    predictor = AnsweringPredictorSerializer()
    results = PredictionResultSerializer(many=True)


def as_int(value: Any, key: str) -> int | None:
    """An optional id of the request body, or a ValueError naming the key."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{key} must be an id (a positive integer), got {value!r}")
    return value
