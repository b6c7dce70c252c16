"""How a result's cold starts and time breakdown look in the API (read-only; they are stored as
``ColdStarts.as_dict()`` and ``TimeBreakdown.as_dict()``, see ``devicelab.measure``)."""

from __future__ import annotations

from rest_framework import serializers

from devicelab.measure.breakdown import DEVICE, HOST, STAGES
from devicelab.measure.cold_starts import FRESH_PROCESS, IN_PROCESS


class SpreadSerializer(serializers.Serializer):
    """Statistics of samples in ms; no std (nor cv) for a single sample."""

    n = serializers.IntegerField()
    mean = serializers.FloatField()
    median = serializers.FloatField()
    p90 = serializers.FloatField()
    std = serializers.FloatField(allow_null=True, help_text="null for one sample: it has no spread.")
    min = serializers.FloatField()
    max = serializers.FloatField()
    cv = serializers.FloatField(allow_null=True)
    noisy = serializers.BooleanField()


class ColdSampleSerializer(serializers.Serializer):
    """One cold start in ms."""

    load_ms = serializers.FloatField()
    first_run_ms = serializers.FloatField()
    total_ms = serializers.FloatField(help_text="load + first run.")
    import_ms = serializers.FloatField(
        allow_null=True,
        help_text="Importing the backend and its runtime in the fresh process (not in total_ms); null in process.",
    )


class ColdStartsSerializer(serializers.Serializer):
    """The cold starts as a distribution, like table 5's "cold start" (the hot start is ``e2e``)."""

    # a CharField, not a ChoiceField: another "source" enum of the schema would collide with it
    source = serializers.CharField(
        help_text=f"{IN_PROCESS}: the profile's own cold start (settings.cold_runs = 1); {FRESH_PROCESS}: "
        "settings.cold_runs cold starts, each in a new process.",
    )
    n = serializers.IntegerField()
    load_ms = SpreadSerializer()
    first_run_ms = SpreadSerializer()
    total_ms = SpreadSerializer(help_text="load + first run: the cold start.")
    import_ms = SpreadSerializer(allow_null=True, help_text="null in process.")
    samples = ColdSampleSerializer(many=True)


class StageSerializer(serializers.Serializer):
    """One stage of an inference."""

    name = serializers.ChoiceField(choices=list(STAGES))
    label = serializers.CharField()
    where = serializers.ChoiceField(
        choices=[HOST, DEVICE],
        help_text=f"{HOST}: the worker's machine (the client; for a phone's job not the phone, see host_side); "
        f"{DEVICE}: the profiled device.",
    )
    central_ms = serializers.FloatField(help_text="The median, or the mean where only aggregates were reported.")
    median_ms = serializers.FloatField(allow_null=True)
    mean_ms = serializers.FloatField()
    std_ms = serializers.FloatField(allow_null=True)
    min_ms = serializers.FloatField(allow_null=True)
    max_ms = serializers.FloatField(allow_null=True)
    n = serializers.IntegerField()
    samples_ms = serializers.ListField(child=serializers.FloatField())
    source = serializers.CharField(help_text="How the stage was measured.")


class ImageFileSerializer(serializers.Serializer):
    """The photo a pipeline decodes (the lab makes it from a seed)."""

    format = serializers.CharField()
    width = serializers.IntegerField()
    height = serializers.IntegerField()
    bytes = serializers.IntegerField()
    sha256 = serializers.CharField()


class PipelineSerializer(serializers.Serializer):
    """Every stage of one inference from one image file."""

    image = ImageFileSerializer()
    total_ms = serializers.FloatField(help_text="The stages' central times, summed.")
    stages = StageSerializer(many=True)


class TensorSerializer(serializers.Serializer):
    """A model's input or output."""

    name = serializers.CharField()
    shape = serializers.ListField(child=serializers.IntegerField())
    dtype = serializers.CharField(required=False)


class TimeBreakdownSerializer(serializers.Serializer):
    """Where one inference's time goes; for a model that takes no image, applicable is false and
    reason says why (the other keys are absent)."""

    applicable = serializers.BooleanField()
    reason = serializers.CharField(allow_blank=True)
    input = TensorSerializer(required=False)
    output = TensorSerializer(required=False)
    host_side = serializers.BooleanField(
        required=False,
        help_text="The host stages ran on the worker's machine, not on the device (a phone: that needs an app).",
    )
    note = serializers.CharField(required=False, allow_blank=True)
    runs = serializers.IntegerField(required=False, help_text="Timed runs of each host stage.")
    warmup_runs = serializers.IntegerField(required=False)
    environment = serializers.JSONField(required=False, help_text="Pillow and numpy versions, the affinity.")
    pipelines = PipelineSerializer(many=True, required=False, help_text="One per image format: JPEG, PNG.")
