"""How predictors and predictions look in the API, and the request bodies that ask for them."""

from __future__ import annotations

from typing import Any, TypedDict, cast

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import empty

from devicelab.backends.base import DELEGATES, MAX_THREADS, PRECISIONS
from devicelab.backends.profile_settings import MAX_RUNS, MAX_WARMUP_RUNS
from devicelab.predict.batch import NB201_SETTINGS
from devicelab.predict.predictor import BACKENDS
from devicelab.predict.ranges import CODES as WARNING_CODES
from server.api.fields import IdField, StrictBooleanField, StrictIntegerField
from server.api.requests import ObjectRequestSerializer, UniqueListField
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.networks.api.serializers import GraphDocumentSerializer
from server.predictors.models import Predictor, PredictorMethod
from server.profiling.api.serializers import CoresField


class PredictorSerializer(serializers.ModelSerializer):
    """A predictor version as listed: device, method, state and its errors."""

    device_name = serializers.CharField(source="device.name", read_only=True)
    shared = serializers.BooleanField(source="is_shared", read_only=True)
    kernel_mape = serializers.SerializerMethodField()
    rankable = serializers.BooleanField(
        read_only=True,
        help_text="Ready and evaluated on at least LATENCYLAB_PREDICTOR_MIN_TEST_NETWORKS test networks: only a "
        "rankable predictor can be its device's best.",
    )
    rank_reason = serializers.CharField(read_only=True, help_text="Why it is not rankable; empty when it is.")

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
            "scenario_key",
            "source",
            "shared",
            "e2e_mape",
            "kernel_mape",
            "n_train",
            "n_test",
            "rankable",
            "rank_reason",
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


class PredictorRequest(TypedDict):
    """A validated ``POST /api/predictors/`` body."""

    device: Device
    method: str
    threads: int
    seed: int
    search: str
    overhead: str
    cores: list[int] | str
    precision: str
    delegate: str


class PredictorCreateSerializer(serializers.Serializer):
    """What a client sends to train a new predictor version."""

    # ``validated_data`` is a ``PredictorRequest`` (the device found).

    device = IdField("device", help_text="Id of a device (GET /api/devices/).")
    method = serializers.ChoiceField(choices=PredictorMethod.choices, default="gbdt")
    threads = StrictIntegerField(
        default=1, min_value=1, max_value=MAX_THREADS, help_text="The scenario's thread count."
    )
    # scikit-learn's random_state, which the seed becomes, takes 0 .. 2**32 - 1.
    seed = StrictIntegerField(default=0, min_value=0, max_value=2**32 - 1)
    search = serializers.ChoiceField(
        choices=["paper", "fast"], default="paper", help_text="Hyper-parameter search: the paper's, or a quick one."
    )
    overhead = serializers.ChoiceField(
        choices=["constant", "affine", "calibrated"],
        default="constant",
        help_text="T_overhead model: the paper's constant, a * sum + T, or a * predicted_sum**b + T (calibrated).",
    )
    cores = CoresField(
        default=list,
        help_text="The scenario's pinned cores (a list of core ids, or a phone's cluster name such as big); "
        "empty (the default): jobs that pinned none.",
    )
    precision = serializers.ChoiceField(choices=list(PRECISIONS), default="fp32", help_text="The scenario's precision.")
    delegate = serializers.ChoiceField(
        choices=["", *DELEGATES],
        default="",
        help_text="Phones only, and required there: the delegate whose jobs it trains on (cpu and xnnpack: backend "
        "tflite_cpu; gpu: tflite_gpu; nnapi is refused, no kernel deduction exists for it).",
    )

    def validate_device(self, value: int) -> Device:
        """A registered device."""
        return existing_device(value)


# One request uploads every network and queues its jobs before it answers, holding a server thread
# meanwhile: the bounds keep it to a few seconds. On the 2-core test machine under load (2026-12-07,
# build_training_set on a CPU device, broker sends included) a network costs about 30 ms (drawn,
# written, parsed, stored) and a job about 13 ms: 100 synthetic samples x 1 round took 3.5 s,
# x 10 rounds 14.9 s, the whole zoo (32) x 10 rounds 5.2 s. So at most MAX_SYNTHETIC samples and
# MAX_TRAINING_SET_JOBS jobs ((synthetic + zoo models) x rounds, the probe graphs aside) per request,
# about 5 s at worst there; a bigger set is several requests over ``first_sample``, which
# ``latencylab trainset build`` and ``Client.build_training_set`` send by themselves
# (latencylab/client/training_data.py holds the same two numbers).
MAX_SYNTHETIC = 100
MAX_TRAINING_SET_JOBS = 200
MAX_ROUNDS = 10
# Sample indices: far past any training set (the paper's is 900), within a JSON-safe integer.
MAX_FIRST_SAMPLE = 10**6


class TrainingSetRequest(TypedDict):
    """A validated ``POST /api/trainsets/`` body."""

    device: Device
    synthetic: int
    first_sample: int
    zoo: list[str]
    threads: int
    delegate: str
    runs: int
    warmup_runs: int
    rounds: int
    seed: int
    probes: bool | None


class TrainingSetRequestSerializer(ObjectRequestSerializer):
    """What a client sends to profile a training set: N synthetic NAS samples plus zoo models."""

    # ``validated_data`` is a ``TrainingSetRequest`` (the device found, ``["all"]`` the zoo's
    # names). Whether the device can run the settings, and the zoo names, are the service's answer
    # (a 400 naming the field).

    device = IdField("device", help_text="Id of a cpu, opencl or android device (GET /api/devices/).")
    synthetic = StrictIntegerField(
        default=0,
        min_value=0,
        max_value=MAX_SYNTHETIC,
        help_text=f"Synthetic NAS samples drawn with `seed`: samples `first_sample` .. `first_sample` + "
        f"`synthetic` - 1 (at most {MAX_SYNTHETIC} per request).",
    )
    first_sample = StrictIntegerField(
        default=0,
        min_value=0,
        max_value=MAX_FIRST_SAMPLE,
        help_text="Index of the first synthetic sample: a set of 900 is samples 0-99, 100-199, ... in nine "
        "requests, the same networks as one request would draw.",
    )
    zoo = UniqueListField(
        child=serializers.CharField(),
        default=list,
        help_text='Zoo models by name (latencylab zoo list); ["all"]: the whole zoo.',
    )
    threads = StrictIntegerField(default=1, min_value=1, max_value=MAX_THREADS)
    delegate = serializers.ChoiceField(
        choices=["", *DELEGATES], default="", help_text="Phones: the delegate the jobs run on."
    )
    runs = StrictIntegerField(default=10, min_value=1, max_value=MAX_RUNS, help_text="Timed runs per network.")
    warmup_runs = StrictIntegerField(default=2, min_value=0, max_value=MAX_WARMUP_RUNS)
    rounds = StrictIntegerField(
        default=1,
        min_value=1,
        max_value=MAX_ROUNDS,
        help_text="Jobs per network, queued round by round and merged when training (3 on a shared machine).",
    )
    seed = StrictIntegerField(default=0, min_value=0, max_value=2**32 - 1, help_text="Seed of the synthetic samples.")
    probes = StrictBooleanField(
        allow_null=True,
        default=None,
        help_text="Also profile the CPU deducer's probe graphs (null, the default: on a cpu device only).",
        error_messages={"invalid": "probes must be true, false or null, got {value!r}"},
    )

    def validate_device(self, value: int) -> Device:
        """A registered device."""
        return existing_device(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """``["all"]`` as the zoo's names, and at most ``MAX_TRAINING_SET_JOBS`` jobs in the request."""
        if attrs["zoo"] == ["all"]:
            from devicelab.graph import zoo

            attrs["zoo"] = sorted(zoo.entries())
        jobs = (attrs["synthetic"] + len(attrs["zoo"])) * attrs["rounds"]
        if jobs > MAX_TRAINING_SET_JOBS:
            raise serializers.ValidationError(
                f"(synthetic + zoo models) x rounds is ({attrs['synthetic']} + {len(attrs['zoo'])}) x "
                f"{attrs['rounds']} = {jobs} jobs; one request queues at most {MAX_TRAINING_SET_JOBS} (it holds a "
                "server thread while it uploads and queues them): send a bigger set as several requests, the "
                "synthetic samples split with first_sample and the zoo models between them (latencylab trainset "
                "build does)"
            )
        return attrs


class TrainingSetSerializer(serializers.Serializer):
    """The jobs of a training set: those queued now and those the team already had with these settings."""

    device = serializers.IntegerField()
    device_name = serializers.CharField()
    networks = serializers.IntegerField(help_text="Networks of the set (probe graphs included).")
    submitted = serializers.ListField(child=serializers.IntegerField(), help_text="Ids of the jobs queued now.")
    reused = serializers.ListField(
        child=serializers.IntegerField(), help_text="Ids of jobs already measured or queued with these settings."
    )


class QedImportRequestSerializer(serializers.Serializer):
    """The qed files to import (multipart), or nothing: the server's own copy."""

    ops = serializers.FileField(
        required=False, help_text="The operator file (qed_tflite_cnn_ops_gpu.train.csv or tflite_cnn_ops_gpu.csv)."
    )
    e2e = serializers.FileField(
        required=False, help_text="The end-to-end file of the same pair (qed_tflite_cnn_e2e.train.csv, ...)."
    )


class QedDeviceImportSerializer(serializers.Serializer):
    """What one import did for one phone."""

    device = serializers.IntegerField()
    name = serializers.CharField()
    gpu = serializers.CharField(allow_blank=True)
    device_created = serializers.BooleanField()
    networks = serializers.IntegerField()
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    unchanged = serializers.IntegerField()


class QedImportSerializer(serializers.Serializer):
    """What one import did: the files it read and, per phone, the rows created, updated and unchanged."""

    files = serializers.ListField(child=serializers.CharField(), help_text="The names of the two files read.")
    devices = QedDeviceImportSerializer(many=True)


def _nb201_setting(key: str, what: str) -> serializers.IntegerField:
    default, low, high = NB201_SETTINGS[key]
    return serializers.IntegerField(
        required=False,
        min_value=low,
        max_value=high,
        help_text=f"With nb201: {what} Default {default} (the benchmark's); another value is built as a graph "
        "and computed, never read from a lookup table; beyond the bounds send graph JSON.",
    )


class ArchitectureSerializer(serializers.Serializer):
    """One architecture: a name and exactly one of graph, nb201, onnx_base64 (no other keys)."""

    # It documents an item of ``architectures``; ``devicelab.predict.batch.parse_item`` reads and
    # checks each item (in the batch's worker processes too), so that a bad one is named by index
    # and name in the answer's ``errors`` together with every other bad one, not one at a time.
    # tests/server/test_api_predict_request.py keeps these fields equal to the keys it reads.

    name = serializers.CharField(required=False, help_text="Default: architecture-<index>.")
    graph = GraphDocumentSerializer(required=False, help_text="A graph JSON document (docs/graph-format.md).")
    nb201 = serializers.CharField(required=False, help_text="A NAS-Bench-201 cell string.")
    onnx_base64 = serializers.CharField(required=False, help_text="An .onnx file, base64-encoded.")
    # the NB-201 space's other settings (``batch.NB201_SETTINGS`` holds the defaults and bounds)
    channels = _nb201_setting("channels", "Channels of the first stage (C).")
    cells_per_stage = _nb201_setting("cells_per_stage", "Cells per stage (N).")
    resolution = _nb201_setting("resolution", "Input height and width.")
    classes = _nb201_setting("classes", "Classifier outputs.")


class ArchitecturesField(serializers.ListField):
    """The batch: a non-empty JSON list of at most ``LATENCYLAB_PREDICT_MAX_BATCH`` architectures.

    Only the list is checked here, and it is kept as it came (no copy of a 12 MB batch); each item
    is read by ``parse_item`` (see ``ArchitectureSerializer``)."""

    default_error_messages = {
        "required": "architectures must be a non-empty list",
        "null": "architectures must be a non-empty list",
        "not_a_list": "architectures must be a non-empty list",
        "over_limit": "{count} architectures is over the limit of {limit} (LATENCYLAB_PREDICT_MAX_BATCH)",
    }

    def __init__(self, **kwargs: Any) -> None:
        # The bounds document the list (minItems, maxItems); to_internal_value checks them, with its
        # own messages. A serializer copies its fields by constructing them again: the limit is the
        # setting's value when the request comes, not at import.
        kwargs.setdefault("min_length", 1)
        kwargs.setdefault("max_length", settings.LATENCYLAB_PREDICT_MAX_BATCH)
        super().__init__(child=ArchitectureSerializer(), **kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        """The list itself, or a ``ValidationError`` saying what is wrong with it."""
        if not isinstance(data, list) or not data:
            self.fail("not_a_list")
        limit = settings.LATENCYLAB_PREDICT_MAX_BATCH
        if len(data) > limit:
            self.fail("over_limit", count=len(data), limit=limit)
        return data


class PredictRequest(TypedDict):
    """A validated ``POST /api/predict/`` body."""

    device: int | None
    predictor: int | None
    method: str | None
    architectures: list[Any]
    breakdown: bool


def _breakdown_field() -> StrictBooleanField:
    return StrictBooleanField(
        default=False,
        help_text="Also return each kernel's predicted latency.",
        error_messages={
            "invalid": "breakdown must be true or false, got {value!r}",
            "null": "breakdown must be true or false, got None",
        },
    )


class PredictRequestSerializer(ObjectRequestSerializer):
    """A batch of architectures to predict, for a device or a named predictor."""

    # ``validated_data`` is a ``PredictRequest``. Which device or predictor the ids name, and
    # whether it is ready, is the service's answer (404, 409).

    device = IdField("device", allow_null=True, default=None, help_text="A device: its best ready predictor answers.")
    predictor = IdField("predictor", allow_null=True, default=None, help_text="A predictor id (GET /api/predictors/).")
    method = serializers.ChoiceField(
        choices=PredictorMethod.choices,
        allow_null=True,
        default=None,
        help_text="With a device: only its predictors of this method.",
        error_messages={"invalid_choice": f"unknown method {{input!r}}; expected one of {PredictorMethod.values}"},
    )
    architectures = ArchitecturesField(help_text="At most LATENCYLAB_PREDICT_MAX_BATCH architectures (maxItems).")
    breakdown = _breakdown_field()

    expected_keys = "device or predictor, method, architectures, breakdown"

    def run_validation(self, data: Any = empty) -> PredictRequest:
        """The request; errors by key, the body's own under ``non_field_errors`` (as ``is_valid`` has them)."""
        return cast(PredictRequest, super().run_validation(data))

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """A device or a predictor must say who answers."""
        if attrs["device"] is None and attrs["predictor"] is None:
            raise serializers.ValidationError("give a device or a predictor")
        return attrs


class KernelResultSerializer(serializers.Serializer):
    """One deduced kernel's predicted latency."""

    name = serializers.CharField()
    type = serializers.CharField()
    ops = serializers.ListField(child=serializers.IntegerField())
    latency_ms = serializers.FloatField()
    model = serializers.CharField()


class FeatureOutsideSerializer(serializers.Serializer):
    """One feature of some kernels outside their model's training range."""

    feature = serializers.CharField(help_text="A Table 3 feature (docs/predictors.md).")
    value = serializers.FloatField(help_text="The farthest value outside the training range.")
    train_min = serializers.FloatField()
    train_max = serializers.FloatField()
    side = serializers.ChoiceField(choices=["above", "below"], help_text="Which end of the range it passed.")
    distance = serializers.FloatField(help_text="How far past that end (in the feature's unit).")
    factor = serializers.FloatField(
        allow_null=True,
        help_text="How far outside as a ratio >= 1 (value / train_max above, train_min / value below); "
        "null where a bound or the value is not positive.",
    )


class PredictionWarningSerializer(serializers.Serializer):
    """Why one architecture's prediction is less certain than the predictor's test MAPE says."""

    code = serializers.ChoiceField(
        choices=list(WARNING_CODES),
        help_text="outside_training_range: kernels with a feature outside the range its model was trained on; "
        "stand_in: kernels of a type seen in too few training networks (or never), priced by another type's model; "
        "training_range_unknown: the predictor was trained before ranges were recorded; "
        "opaque_operators: operators outside the graph IR (kernel_type names them) have no kernel prediction.",
    )
    kernel_type = serializers.CharField(allow_blank=True)
    kernels = serializers.IntegerField(help_text="How many of the architecture's kernels it concerns.")
    model = serializers.CharField(allow_blank=True, help_text="The kernel type whose model priced them.")
    outside = FeatureOutsideSerializer(
        many=True, help_text="outside_training_range: each feature outside the range, with its farthest value."
    )
    train_networks = serializers.IntegerField(
        allow_null=True, help_text="stand_in: training networks that ran the type (0: never seen)."
    )
    kernels_ms = serializers.FloatField(
        allow_null=True, help_text="outside_training_range: the predicted time of the kernels it concerns (ms)."
    )
    share = serializers.FloatField(
        allow_null=True,
        help_text="The part of this architecture's predicted latency those kernels take (0..1): the warning's "
        "possible effect on this prediction; null where not known.",
    )
    message = serializers.CharField()


class PredictionResultSerializer(serializers.Serializer):
    """One architecture's predicted latency (ms) and the warnings about it."""

    name = serializers.CharField()
    latency_ms = serializers.FloatField()
    kernels_ms = serializers.FloatField()
    overhead_ms = serializers.FloatField()
    warnings = PredictionWarningSerializer(many=True)
    kernels = KernelResultSerializer(many=True, required=False)


class AnsweringPredictorSerializer(serializers.Serializer):
    """Which predictor answered, its test MAPE, and whether it is rankable."""

    id = serializers.IntegerField()
    version = serializers.IntegerField()
    method = serializers.CharField()
    device = serializers.IntegerField()
    scenario = serializers.DictField()
    e2e_mape = serializers.FloatField(allow_null=True, help_text="End-to-end MAPE on its test networks (a fraction).")
    n_test = serializers.IntegerField(help_text="Test networks of that MAPE.")
    rankable = serializers.BooleanField()
    rank_reason = serializers.CharField(allow_blank=True, help_text="Why it is not rankable; empty when it is.")
    chosen_as = serializers.ChoiceField(
        choices=["named", "best", "unranked"],
        help_text="named: the request named it; best: the device's rankable predictor with the lowest MAPE; "
        "unranked: the device has no rankable predictor, so its lowest-MAPE unranked one answered.",
    )


class AnsweredBySerializer(serializers.Serializer):
    """What answered a request's architectures: the NB-201 lookup table, or the general path."""

    nb201_table = serializers.ChoiceField(
        choices=["used", "not_built", "skipped_for_breakdown", "no_nb201_cells"],
        help_text="used: the predictor's NB-201 table answered its cells; not_built: it has none yet (the trainer "
        "builds it after training) so the cells were computed, ~40x slower; skipped_for_breakdown: a kernel "
        "breakdown is always computed; no_nb201_cells: nothing a table holds was asked.",
    )
    from_table = serializers.IntegerField(help_text="Architectures the table answered.")
    computed = serializers.IntegerField(help_text="Architectures built, deduced and predicted for this request.")


class WarningKindSerializer(serializers.Serializer):
    """One kind of warning (code and kernel type) over a request's architectures."""

    code = serializers.CharField()
    kernel_type = serializers.CharField(allow_blank=True)
    architectures = serializers.IntegerField(help_text="Architectures with this warning.")
    largest_share = serializers.FloatField(
        allow_null=True, help_text="The largest share of a predicted latency its kernels take."
    )
    largest_factor = serializers.FloatField(
        required=False, help_text="outside_training_range: the farthest factor outside the range."
    )


class WarningSummarySerializer(serializers.Serializer):
    """A request's warnings at a glance."""

    architectures = serializers.IntegerField()
    with_warnings = serializers.IntegerField(help_text="Architectures with at least one warning.")
    largest_share = serializers.FloatField(allow_null=True, help_text="The largest share over every warning.")
    by_kind = WarningKindSerializer(many=True)


class PredictResponseSerializer(serializers.Serializer):
    """The answer of POST /api/predict/."""

    predictor = AnsweringPredictorSerializer()
    answered_by = AnsweredBySerializer()
    warning_summary = WarningSummarySerializer()
    results = PredictionResultSerializer(many=True)


class SideBySideRequest(TypedDict):
    """A validated ``POST /api/predict/side-by-side/`` body."""

    device: int
    architectures: list[Any] | None
    method: str | None
    backend: str | None
    breakdown: bool


SIDE_BY_SIDE_MAX_BATCH = 100  # a comparison of a few networks; a NAS batch goes to POST /api/predict/


class SideBySideArchitecturesField(ArchitecturesField):
    """The architectures to compare: at most ``SIDE_BY_SIDE_MAX_BATCH`` (each is predicted once per
    phone of the model)."""

    default_error_messages = {
        **ArchitecturesField.default_error_messages,
        "over_limit": "{count} architectures is over the side-by-side limit of {limit}; predict larger batches "
        "with POST /api/predict/",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=SIDE_BY_SIDE_MAX_BATCH, **kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        """The list itself, or a ``ValidationError`` saying what is wrong with it."""
        if isinstance(data, list) and len(data) > SIDE_BY_SIDE_MAX_BATCH:
            self.fail("over_limit", count=len(data), limit=SIDE_BY_SIDE_MAX_BATCH)
        return super().to_internal_value(data)


class SideBySideRequestSerializer(ObjectRequestSerializer):
    """A device (a phone, measured or imported), optionally architectures to predict on it and on
    every other phone of its model."""

    # ``validated_data`` is a ``SideBySideRequest``.

    device = IdField("device", help_text="A device; with a phone, every phone of its model (measured or qed) too.")
    # Left out means "no predictions"; null is refused like any other value that is not a list, so
    # that a client's bug (a variable that was never filled) is not answered as a different question.
    architectures = SideBySideArchitecturesField(
        required=False,
        default=None,
        help_text="As for POST /api/predict/, at most 100 (maxItems); left out: only which predictor would answer "
        "for each device.",
        error_messages={"null": "architectures must be a non-empty list, or left out (not null)"},
    )
    method = serializers.ChoiceField(
        choices=PredictorMethod.choices,
        allow_null=True,
        default=None,
        help_text="Only predictors of this method.",
        error_messages={"invalid_choice": f"unknown method {{input!r}}; expected one of {PredictorMethod.values}"},
    )
    backend = serializers.ChoiceField(
        choices=list(BACKENDS),
        allow_null=True,
        default=None,
        help_text="Only predictors of this scenario backend (tflite_gpu compares a measured phone's GPU predictor "
        "with the qed phone's).",
        error_messages={"invalid_choice": f"unknown backend {{input!r}}; expected one of {list(BACKENDS)}"},
    )
    breakdown = _breakdown_field()

    def run_validation(self, data: Any = empty) -> SideBySideRequest:
        """The request; a null body is refused like any body that is not an object."""
        return cast(SideBySideRequest, super().run_validation(data))


class PhoneDeviceSerializer(serializers.Serializer):
    """A device of a side-by-side answer."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    identity = serializers.CharField()


class SideBySideAnswerSerializer(serializers.Serializer):
    """One device's answer: its predictor (null when none can answer, ``detail`` says why) and results."""

    device = PhoneDeviceSerializer()
    predictor = AnsweringPredictorSerializer(allow_null=True)
    detail = serializers.CharField(allow_blank=True)
    results = PredictionResultSerializer(many=True)


class SideBySideResponseSerializer(serializers.Serializer):
    """The answer of POST /api/predict/side-by-side/: the device first, then the other phones of its model."""

    device = serializers.IntegerField()
    phone_model = serializers.CharField(allow_null=True, help_text="The phone model key (pixel4, s10, ...).")
    answers = SideBySideAnswerSerializer(many=True)
