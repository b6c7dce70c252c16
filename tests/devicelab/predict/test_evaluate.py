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


@pytest.mark.slow
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


def test_another_overhead_on_the_same_models_is_what_training_with_it_gives(qed_rows: list, qed_e2e: dict) -> None:
    from devicelab.predict.predictor import with_overhead

    samples = qed.gpu_samples("s10", qed_rows, qed_e2e)
    for overhead in ("affine", "calibrated"):
        trained = _trainer("s10", "lasso", overhead)(samples)
        refit = with_overhead(_trainer("s10", "lasso", "constant")(samples), samples, overhead)
        assert refit.meta["overhead"] == trained.meta["overhead"] == overhead
        assert [p.latency_ms for p in refit.predict_kernels([s.prediction_input() for s in samples])] == [
            p.latency_ms for p in trained.predict_kernels([s.prediction_input() for s in samples])
        ]


def test_the_holdout_split_is_seeded_and_keeps_each_network_on_one_side() -> None:
    from devicelab.predict.evaluate import holdout_split, training_sizes

    groups = [i // 2 for i in range(40)]  # 20 networks, two records each
    order, held_out = holdout_split(groups, seed=3)
    assert len(held_out) == 4 and not held_out & set(order) and set(order) | held_out == set(groups)
    assert holdout_split(groups, seed=3) == (order, held_out)
    assert holdout_split(groups, seed=4) != (order, held_out)
    assert holdout_split([7], seed=0) == ([], {7})  # at least one network is held out
    assert training_sizes(16) == [16] and training_sizes(240) == [30, 100, 240]
    assert training_sizes(1087, (30, 100, 900), whole=False) == [30, 100, 900]


def test_each_training_size_learns_its_deducer_from_its_own_networks() -> None:
    from devicelab.predict.deduce_opencl import OpenclDeducer
    from devicelab.predict.evaluate import holdout_steps

    seen: list[list[str]] = []

    class Recording(OpenclDeducer):
        def samples(self, records: Sequence, statistic: str = "median") -> list[Sample]:
            return [Sample(r, (), 1.0) for r in records]

    def learn(records: Sequence) -> Recording:
        seen.append(list(records))
        return Recording()

    train = [f"net-{i}" for i in range(8)]
    steps = list(holdout_steps(train, {"test": ["held-1", "held-2"]}, learn, [3, 8]))  # type: ignore[arg-type]
    assert seen == [train[:3], train]  # the held-out networks teach no rule
    assert [s.n for s in steps] == [3, 8] and [len(s.train) for s in steps] == [3, 8]
    assert [x.name for x in steps[0].held_out["test"]] == ["held-1", "held-2"]
    assert steps[0].agreement("test") is None  # the OpenCL deducer is the backend's own plan


def test_the_cross_validation_curve_cuts_each_folds_training_set(qed_rows: list, qed_e2e: dict) -> None:
    from devicelab.predict.evaluate import grouped_cv_curve

    samples = qed.gpu_samples("mi8se", qed_rows, qed_e2e)
    sizes: list[int] = []
    train = _trainer("mi8se", "lasso", "constant")

    def counting(tr: Sequence[Sample]) -> ScenarioPredictor:
        sizes.append(len({s.name for s in tr}))
        return train(tr)

    cut: list[int] = []
    report, curve = grouped_cv_curve(samples, counting, folds=5, seed=0, sizes=(30, 100), progress=cut.append)
    networks = len(samples)
    assert cut == [30] and [p["n"] for p in curve] == [30, networks - -(-networks // 5)]
    assert curve[-1]["e2e_mape"] == report.e2e_mape
    assert sizes[5:] == [30] * 5  # the full folds, then each fold cut to 30 networks
