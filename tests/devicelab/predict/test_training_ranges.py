"""Training ranges and prediction warnings (``devicelab.predict.ranges``, ``coverage``): a predictor
knows the feature values each of its models was trained on, and every prediction says which of
its kernels lie outside them, which another type's model priced, and, for a predictor trained
before ranges were recorded, that it cannot tell. On a real predictor of the qed Mali G76 phone."""

from __future__ import annotations

import dataclasses
import hashlib

import pytest

from devicelab.graph import Graph, GraphBuilder
from devicelab.predict import qed
from devicelab.predict.artifacts import _canonical, predictor_from_dict, predictor_to_dict
from devicelab.predict.coverage import plan_models
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import FEATURES, feature_group, feature_matrix
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.ranges import OUTSIDE, RANGE_UNKNOWN, STAND_IN
from devicelab.predict.samples import Sample

PHONE = "s10"


@pytest.fixture(scope="module")
def samples(qed_rows: list[qed.QedOp], qed_e2e: dict[str, dict[str, float]]) -> list[Sample]:
    """The 67 qed networks measured on the phone."""
    return qed.gpu_samples(PHONE, qed_rows, qed_e2e)


def _train(samples: list[Sample], min_networks: int = 1) -> ScenarioPredictor:
    scenario = Scenario("tflite_gpu", f"qed:{PHONE}", precision="fp16", gpu=qed.DEVICES[PHONE][0])
    deducer = TfliteGpuDeducer(qed.DEVICES[PHONE][1])
    return train_predictor(
        samples,
        deducer,
        scenario,
        "lasso",
        search="fast",
        overhead_kinds=qed.OVERHEAD_KINDS,
        min_networks=min_networks,
    )


@pytest.fixture(scope="module")
def predictor(samples: list[Sample]) -> ScenarioPredictor:
    """A Lasso predictor of the phone (fast search), every kernel type with a model of its own."""
    return _train(samples)


def one_conv(name: str, size: int, channels: int, filters: int) -> Graph:
    """A network of one 1x1 convolution (a ``conv2d`` kernel on the phone's GPU)."""
    b = GraphBuilder(name, (1, channels, size, size))
    return b.build(b.conv(b.input, filters, 1, bias=False))


def test_each_model_stores_the_range_of_the_kernels_it_was_trained_on(
    samples: list[Sample], predictor: ScenarioPredictor
) -> None:
    assert predictor.training_ranges is not None and set(predictor.training_ranges) == set(predictor.models)
    for ktype, rng in predictor.training_ranges.items():
        raws = [k.raw for s in samples for k in s.measured if k.type == ktype and (k.latency_ms or 0) > 0]
        x = feature_matrix(feature_group(ktype), raws)
        assert rng.low == tuple(x.min(axis=0)) and rng.high == tuple(x.max(axis=0)), ktype
        assert len(rng.low) == len(FEATURES[feature_group(ktype)])
    # the artifact keeps them
    loaded = predictor_from_dict(predictor_to_dict(predictor))
    assert loaded.training_ranges == predictor.training_ranges


def test_a_conv_far_bigger_than_any_in_training_is_warned_about_and_one_inside_is_not(
    samples: list[Sample], predictor: ScenarioPredictor
) -> None:
    inside, huge = predictor.predict([one_conv("inside", 56, 64, 64), one_conv("huge", 224, 512, 2048)])
    assert inside.warnings == ()
    (warning,) = huge.warnings
    assert (warning.code, warning.kernel_type, warning.model, warning.kernels) == (OUTSIDE, "conv2d", "conv2d", 1)
    assert predictor.training_ranges is not None
    flops_max = predictor.training_ranges["conv2d"].high[FEATURES["conv"].index("flops")]
    by_feature = {f.feature: f for f in warning.outside}
    assert by_feature["flops"].value == 2 * 224 * 224 * 512 * 2048 > 30 * flops_max
    assert by_feature["flops"].train_max == flops_max
    assert "1 conv2d kernel(s) outside its model's training range" in warning.message()
    assert "flops up to 1.05e+11" in warning.message()
    # the networks it was trained on lie inside by construction
    trained = predictor.predict_kernels([s.prediction_input() for s in samples])
    assert [p.warnings for p in trained] == [()] * len(samples)


def test_a_kernel_type_in_too_few_networks_is_priced_by_another_model_and_the_prediction_says_so(
    samples: list[Sample],
) -> None:
    networks = plan_models(samples).networks
    assert networks["winograd"] == 26 and networks["concat"] == 11  # the data as it is
    plan = plan_models(samples, min_networks=27)
    assert "winograd" in plan.stood_in and "winograd" not in plan.own  # a convolution model stands in
    assert plan.uncovered["concat"] == 11  # nothing of its feature group has a model
    thin = _train(samples, min_networks=27)
    assert "winograd" not in thin.models and thin.meta["kernel_networks"]["winograd"] == 26
    assert thin.meta["uncovered"]["concat"] == 11 and "concat" in thin.models  # fitted, for the evaluation
    with_winograd = next(s for s in samples if any(k.type == "winograd" for k in s.measured))
    (prediction,) = thin.predict_kernels([with_winograd.prediction_input()])
    stand_ins = [w for w in prediction.warnings if w.code == STAND_IN]
    assert [(w.kernel_type, w.train_networks) for w in stand_ins] == [("winograd", 26)]
    assert stand_ins[0].model == thin.resolve("winograd") and stand_ins[0].model in thin.models
    assert stand_ins[0].kernels == sum(1 for k in with_winograd.prediction_input() if k.type == "winograd")
    assert "seen in only 26 training network(s)" in stand_ins[0].message()
    # a type never seen: an Apple GPU's fused depthwise + 1x1 kernel on this phone's predictor
    raw = next(k.raw for k in with_winograd.prediction_input() if k.type == "winograd")
    (never,) = thin.predict_kernels(
        [[dataclasses.replace(with_winograd.prediction_input()[0], type="dw_conv_plus_1x1", raw=raw)]]
    )
    (w,) = [w for w in never.warnings if w.code == STAND_IN]
    assert (w.kernel_type, w.train_networks) == ("dw_conv_plus_1x1", 0)
    assert "never seen in training" in w.message()


def _as_version(d: dict, version: int, drop: tuple[str, ...]) -> dict:
    body = {k: v for k, v in d.items() if k not in ("sha256", *drop)}
    body["schema_version"] = version
    return {**body, "sha256": hashlib.sha256(_canonical(body)).hexdigest()}


def test_a_predictor_trained_before_ranges_says_its_range_is_unknown(predictor: ScenarioPredictor) -> None:
    old = predictor_from_dict(_as_version(predictor_to_dict(predictor), 3, ("training_ranges",)))
    assert old.training_ranges is None
    inside, huge = old.predict([one_conv("inside", 56, 64, 64), one_conv("huge", 224, 512, 2048)])
    for p in (inside, huge):
        assert [w.code for w in p.warnings] == [RANGE_UNKNOWN]
        assert p.warnings[0].message().startswith("training range unknown")
    assert huge.latency_ms == pytest.approx(predictor.predict([one_conv("huge", 224, 512, 2048)])[0].latency_ms)


def test_a_malformed_training_range_is_refused_at_load(predictor: ScenarioPredictor) -> None:
    d = predictor_to_dict(predictor)
    d["training_ranges"]["conv2d"]["low"] = d["training_ranges"]["conv2d"]["low"][:-1]
    with pytest.raises(PredictorError, match=r"training range of kernel type 'conv2d': 9 / 10 values"):
        predictor_from_dict(_as_version(d, 4, ()))
    d = predictor_to_dict(predictor)
    del d["training_ranges"]["mean"]
    with pytest.raises(PredictorError, match="training ranges for .* models for"):
        predictor_from_dict(_as_version(d, 4, ()))
    d = predictor_to_dict(predictor)
    low, high = d["training_ranges"]["mean"]["low"], d["training_ranges"]["mean"]["high"]
    d["training_ranges"]["mean"] = {"low": high, "high": low}
    with pytest.raises(PredictorError, match="low end is above its high end"):
        predictor_from_dict(_as_version(d, 4, ()))
