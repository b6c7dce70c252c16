"""How profiling jobs and their results look in the API, and the request body that queues one.

A request body has one serializer that both validates it (the view calls ``is_valid``) and
documents it in ``/api/schema/``, so the schema cannot promise what the checks refuse.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.settings import api_settings

from devicelab.backends.profile_settings import ProfileSettings
from devicelab.spec import declared, settings_of
from server.api.fields import IdField
from server.api.spec_fields import spec_fields
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.profiling.api.breakdown_serializers import ColdStartsSerializer, TimeBreakdownSerializer
from server.profiling.models import JobResult, OperatorTiming, ProfilingJob


class JobRequest(TypedDict):
    """A validated ``POST /api/jobs/`` body: the rows it names and its settings (``ProfileSettings``
    keys as given; the service fills in the rest)."""

    model: NetworkModel
    device: Device
    settings: dict[str, Any]


_CORES = declared(ProfileSettings, "cores")
_MAX_CORES = _CORES.rule.max_items


@extend_schema_field(
    {
        "oneOf": [
            {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": _MAX_CORES},
            {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]{0,31}$", "description": "a core cluster's name"},
        ]
    }
)
class CoresField(serializers.ListField):
    """CPU core ids to pin the run to: a JSON list of non-negative integers (``ProfileSettings.cores``),
    or the name of one of the device's core clusters (a phone's "big", "mid", "little"; the
    service resolves it)."""

    default_error_messages = {
        "invalid": "must be a list of non-negative integers or a cluster name, got {value!r}",
        "null": "must be a list of non-negative integers, got None",
        "too_many": f"lists {{count}} core ids; at most {_MAX_CORES}",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=serializers.IntegerField(min_value=0), max_length=_MAX_CORES, **kwargs)

    def to_internal_value(self, data: Any) -> list[int] | str:  # type: ignore[override]
        """The core ids (or a cluster name), or a ``ValidationError`` that shows the value sent."""
        if isinstance(data, str) and 0 < len(data) <= 32 and data.isidentifier():
            return data
        if not isinstance(data, list) or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in data
        ):
            self.fail("invalid", value=data)
        if _MAX_CORES is not None and len(data) > _MAX_CORES:
            self.fail("too_many", count=len(data))
        return list(data)


class JobSettingsSerializer(serializers.Serializer):
    """How to measure; keys left out take their defaults, and the device must offer what is asked."""

    # The wire format only: one field per field of ``ProfileSettings``, its type, bounds, choices
    # and help from the dataclass's declaration (``server.api.spec_fields``). Whether the device
    # can honour them (its kind, precisions, threads, cores) is the service's check at
    # submission. Errors are one flat list of messages that each name the key
    # (``settings.threads must be an integer, got 'four'``), as the service's are.

    def get_fields(self) -> dict[str, serializers.Field]:
        """``ProfileSettings``' fields; ``cores`` may also name a core cluster."""
        return spec_fields(ProfileSettings, cores=CoresField(required=False, help_text=_CORES.help))

    def run_validation(self, data: Any = empty) -> dict[str, Any]:
        """The given settings; as a request's ``settings``, a ``ValidationError`` listing every bad key."""
        try:
            return dict(super().run_validation(data))
        except serializers.ValidationError as exc:
            if self.parent is None:  # validated alone, its errors stay a dict by key
                raise
            raise serializers.ValidationError(_flat_settings_errors(exc.detail)) from None

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        """Refuse keys ``ProfileSettings`` does not have before checking the others."""
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError(
                    {
                        api_settings.NON_FIELD_ERRORS_KEY: [
                            f"unknown settings key(s) {unknown}; known keys: {sorted(self.fields)}"
                        ]
                    }
                )
        return dict(super().to_internal_value(data))


def _flat_settings_errors(detail: Any) -> list[str]:
    """``{"threads": ["must be ..."]}`` as ``["settings.threads must be ..."]``."""
    if not isinstance(detail, dict):
        return [str(m) for m in detail]
    return [
        str(m) if key == api_settings.NON_FIELD_ERRORS_KEY else f"settings.{key} {m}"
        for key, messages in detail.items()
        for m in messages
    ]


class JobCreateSerializer(serializers.Serializer):
    """What a client sends to queue a job."""

    # Validating finds the rows (the team's model: ``context["team"]``): ``validated_data`` is a
    # ``JobRequest``.

    model = IdField("model", help_text="Id of one of your team's models.")
    device = IdField("device", help_text="Id of a device (GET /api/devices/).")
    settings = JobSettingsSerializer(
        required=False,
        default=dict,
        help_text=f"ProfileSettings: {', '.join(s.name for s in settings_of(ProfileSettings))}. Missing keys take "
        "their defaults; backend defaults to the device's kind.",
    )

    def validate_model(self, value: int) -> NetworkModel:
        """One of the caller's team's models."""
        model = NetworkModel.objects.for_team(self.context["team"]).filter(pk=value).first()
        if model is None:
            raise serializers.ValidationError(f"there is no model #{value} in your team (GET /api/models/)")
        return model

    def validate_device(self, value: int) -> Device:
        """A registered device (every team may use every device)."""
        return existing_device(value)


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
            "median",
            "p90",
            "mean",
            "std",
            "n",
            "fused_into",
        ]
        read_only_fields = fields


class E2EStatsSerializer(serializers.Serializer):
    """End-to-end latency statistics in ms."""

    mean = serializers.FloatField(source="e2e_mean")
    # null where the runtime reported aggregates only (a phone's benchmark_model: no median, no p90)
    median = serializers.FloatField(
        source="e2e_median",
        allow_null=True,
        help_text="null where the runtime reports aggregates only (a phone's benchmark_model prints count, mean, "
        "std, min and max, never its runs): use the mean then.",
    )
    p90 = serializers.FloatField(
        source="e2e_p90", allow_null=True, help_text="null where the runtime reports aggregates only (see median)."
    )
    std = serializers.FloatField(source="e2e_std", allow_null=True, help_text="null where the runtime reported none.")
    min = serializers.FloatField(source="e2e_min", allow_null=True, help_text="null where the runtime reported none.")
    max = serializers.FloatField(source="e2e_max", allow_null=True, help_text="null where the runtime reported none.")
    cv = serializers.FloatField(source="e2e_cv", allow_null=True, help_text="std / mean; null without a std.")
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
    flags = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Why the measurement should not be trusted as is, beside e2e.noisy, e.g. "
        '"hot: 46.2 °C at start > 40 °C", "throttled: cpu7 at 1.2 of 2.85 GHz"; empty when none.',
    )
    peak_memory_mb = serializers.FloatField(
        read_only=True,
        allow_null=True,
        help_text="Peak memory of the run (MB): on the host CPU the process's peak resident set above its baseline "
        "while the session loaded and ran, on OpenCL the device buffers and weights, on a phone benchmark_model's "
        "footprint; environment.memory says how it was read. Null where not measured (results stored before).",
    )
    samples_ms = serializers.ListField(
        child=serializers.FloatField(),
        read_only=True,
        help_text="Each timed run's end-to-end latency (ms); empty where the runtime reports aggregates only.",
    )
    cold_starts = ColdStartsSerializer(
        source="cold_start_distribution",
        read_only=True,
        help_text="The cold starts as a distribution: with settings.cold_runs > 1, that many fresh processes' "
        "(cold stays the profile's own, in its process), else that one. The hot start is e2e.",
    )
    time_breakdown = serializers.SerializerMethodField(
        help_text="Where one inference's time goes, stage by stage; null when it was not measured."
    )
    environment = serializers.JSONField(
        read_only=True,
        help_text="What the worker recorded of the run: runtime and versions, threads, affinity; model_format "
        "(what ran: e.g. 'onnx as uploaded', 'onnx exported by latencylab (seeded weights)', 'tflite as uploaded') "
        "and model_sha256 (the SHA-256 of the file that ran; null when no file ran, as on OpenCL). A phone's job "
        "adds delegate, runtime, tool_version, tool_sha256, op_profile_mode (csv or text), model_format, cores, "
        "cluster, taskset_mask, temperatures_before_c and temperatures_after_c ({zone: °C}), cooldown "
        "({threshold_c, max_s, waited_s, reached}), governors, frequencies_khz_before, frequencies_khz_after and "
        "max_frequencies_khz ({core: ...}), screen_on, charging, battery_level, memory_mb ({init, overall, peak}), "
        "init_ms, first_inference_ms, warmup_avg_ms, serial.",
    )

    class Meta:
        model = JobResult
        fields = [
            "attempt",
            "e2e",
            "cold",
            "flags",
            "peak_memory_mb",
            "samples_ms",
            "cold_starts",
            "time_breakdown",
            "environment",
            "settings",
            "device_info",
            "created_at",
            "operators",
        ]
        read_only_fields = fields

    @extend_schema_field(TimeBreakdownSerializer(allow_null=True))
    def get_time_breakdown(self, obj: JobResult) -> dict[str, Any] | None:
        """The stored breakdown, or None where none was measured."""
        return TimeBreakdownSerializer(obj.time_breakdown).data if obj.time_breakdown else None


class JobSerializer(serializers.ModelSerializer):
    """A job's state and progress, as listed: a profile of a model, or a fusion sweep or plan (whose
    ``model`` is null: its networks are in ``settings``, its result at /api/fusion/)."""

    model_name = serializers.CharField(
        source="model.name", read_only=True, allow_null=True, help_text="null for a job of no model (a fusion sweep)."
    )
    device_name = serializers.CharField(source="device.name", read_only=True)

    class Meta:
        model = ProfilingJob
        fields = [
            "id",
            "kind",
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
            "warnings",
            "moved_from",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    """A job with its result and per-operator timings (null until it succeeded, and for a fusion
    sweep or plan, whose result is at /api/fusion/sweeps/{id}/ or /api/fusion/plans/{id}/)."""

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
