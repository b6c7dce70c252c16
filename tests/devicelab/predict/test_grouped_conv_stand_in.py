"""A predictor whose training networks ran no grouped convolution prices one with the ordinary
convolution's model and says so, instead of refusing every network that runs one (qed s10)."""

from __future__ import annotations

import pytest

from devicelab.predict import qed
from devicelab.predict.coverage import plan_models
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.features import stand_in_types
from devicelab.predict.predictor import Scenario, train_predictor
from devicelab.predict.ranges import STAND_IN
from devicelab.predict.samples import Sample


def _grouped(s: Sample) -> bool:
    return any(k.type == "grouped_conv2d" for k in s.measured)


@pytest.fixture(scope="module")
def s10(qed_rows: list[qed.QedOp], qed_e2e: dict) -> tuple[list[Sample], list[Sample]]:
    """30 s10 networks without a grouped convolution, and those with one."""
    samples = qed.gpu_samples("s10", qed_rows, qed_e2e)
    plain = [s for s in samples if not _grouped(s)]
    grouped = [s for s in samples if _grouped(s)]
    assert len(plain) >= 30 and len(grouped) >= 5
    return plain[:30], grouped


def test_networks_with_grouped_convolutions_are_predicted_by_the_conv_model(s10: tuple) -> None:
    train, grouped = s10
    p = train_predictor(
        train, TfliteGpuDeducer("mali"), Scenario("tflite_gpu", "s10"), "lasso", search="fast",
        overhead_kinds=qed.OVERHEAD_KINDS, overhead="affine",
    )  # fmt: skip
    assert "grouped_conv2d" not in p.models and p.resolve("grouped_conv2d") == "conv2d"
    predictions = p.predict_kernels([s.prediction_input() for s in grouped], breakdown=True)  # no refusal
    for s, pred in zip(grouped, predictions, strict=True):
        assert pred.kernels is not None
        assert {k.model for k in pred.kernels if k.type == "grouped_conv2d"} == {"conv2d"}
        (note,) = [w for w in pred.warnings if w.code == STAND_IN and w.kernel_type == "grouped_conv2d"]
        assert note.model == "conv2d" and note.train_networks == 0
        assert note.kernels == sum(k.type == "grouped_conv2d" for k in s.prediction_input())
        assert "conv2d model" in note.message()
    # a stand-in, not a guess: the networks are predicted about as well as the others
    errors = [abs(pred.latency_ms - s.e2e_ms) / s.e2e_ms for s, pred in zip(grouped, predictions, strict=True)]
    assert sum(errors) / len(errors) < 0.2  # 10.5 % (the other 30 s10 networks: 12.0 %)


def test_a_thin_grouped_convolution_is_stood_in_for_not_uncovered(s10: tuple) -> None:
    train, grouped = s10
    plan = plan_models([*train, grouped[0]], min_networks=3)
    assert "grouped_conv2d" in plan.stood_in and "grouped_conv2d" not in plan.uncovered


def test_the_stand_in_tiers() -> None:
    models = ["conv2d", "winograd", "depthwise_conv2d", "fully_connected"]
    assert stand_in_types("grouped_conv2d", models) == ["conv2d"]  # the ordinary convolution first
    assert stand_in_types("grouped_conv2d", ["winograd", "mean"]) == ["winograd"]  # else its group
    assert stand_in_types("grouped_conv2d", ["grouped_conv2d/nchw", "conv2d"]) == ["grouped_conv2d/nchw"]
    assert stand_in_types("grouped_conv2d", ["fully_connected"]) == []
    assert stand_in_types("pooling", models) == []  # no other group stands in for the rest
    with pytest.raises(KeyError, match="unknown kernel kind"):
        stand_in_types("teleport", models)


def test_a_global_mean_with_no_model_of_its_kind_is_priced_by_average_pooling() -> None:
    # a CPU training set whose global means split between two layouts, each in too few networks
    # (ONNX Runtime runs GlobalAveragePool in NCHW or NCHWc depending on the layout around it)
    assert stand_in_types("mean/nchw", ["pooling/nchwc", "conv2d/nchwc", "elementwise"]) == ["pooling/nchwc"]
    assert stand_in_types("mean/nchw", ["mean/nchwc", "pooling/nchwc"]) == ["mean/nchwc"]  # its kind first
    assert stand_in_types("mean/nchw", ["conv2d/nchwc"]) == []  # nothing near enough: refused
