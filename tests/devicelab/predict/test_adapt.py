"""The adapted predictor (``devicelab.predict.adapt``): its fit, and a qed phone predicted from ten of
its measurements and two other phones' predictors."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.predict import adapt, qed
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.evaluate import mape
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.samples import Sample

TARGET, SOURCES, SHOTS = "mi8se", ("s10", "pixel4"), 10
SOURCE_NETWORKS = 30  # the sources' predictors train on these many networks (kept small for speed)


def test_the_group_scales_are_recovered_and_the_ridge_draws_them_together() -> None:
    rng = np.random.default_rng(3)
    x = rng.uniform(1, 10, size=(12, 3))
    e2e = x @ np.array([0.5, 2.0, 1.0]) + 4.0
    free = adapt.fit_groups(x, e2e, ridge=0.0)
    assert np.allclose(free, [0.5, 2.0, 1.0, 4.0])
    tied = adapt.fit_groups(x, e2e, ridge=1e6)
    assert np.ptp(tied[:3]) < 1e-3 and adapt.loo_mape(x, e2e, ridge=0.0) < 1e-9 < adapt.loo_mape(x, e2e, 1e6)


def test_sources_are_weighted_by_their_shot_error() -> None:
    rng = np.random.default_rng(4)
    x = rng.uniform(1, 10, size=(8, 2))
    e2e = x @ np.array([1.5, 0.7]) + 1.0
    noisy = x * rng.uniform(0.7, 1.3, size=x.shape)  # a source whose kernels transfer badly
    fitted = adapt.fit_adaptation(np.stack([x, noisy]), e2e, ("a", "b"), ridge=0.0)
    assert fitted.weights[0] > 0.99 and fitted.source_loo[1] > fitted.source_loo[0]
    with pytest.raises(adapt.PredictorError, match="at least 3"):
        adapt.fit_adaptation(np.stack([x[:2]]), e2e[:2], ("a", "b"))


def _lasso(device: str, samples: list[Sample]) -> ScenarioPredictor:
    gpu, family = qed.DEVICES[device]
    scenario = Scenario("tflite_gpu", device, precision="fp16", gpu=gpu)
    return train_predictor(
        samples, TfliteGpuDeducer(family), scenario, "lasso", search="fast", overhead_kinds=qed.OVERHEAD_KINDS
    )


def test_a_phone_from_ten_shots_and_two_other_phones(
    qed_rows: list[qed.QedOp], qed_e2e: dict[str, dict[str, float]]
) -> None:
    sources = [_lasso(d, qed.gpu_samples(d, qed_rows, qed_e2e)[:SOURCE_NETWORKS]) for d in SOURCES]
    target = qed.gpu_samples(TARGET, qed_rows, qed_e2e)
    order = np.random.default_rng(0).permutation(len(target))
    shots = [adapt.Shot(target[i].name, tuple(target[i].deduced or ()), target[i].e2e_ms) for i in order[:SHOTS]]
    rest = [target[i] for i in order[SHOTS:]]
    lists = [list(s.deduced or ()) for s in rest]
    measured = [s.e2e_ms for s in rest]
    gpu, family = qed.DEVICES[TARGET]
    scenario = Scenario("tflite_gpu", TARGET, precision="fp16", gpu=gpu)
    adapted = adapt.adapt(sources, shots, scenario, TfliteGpuDeducer(family), SOURCES, extra_groups=lists)

    error = mape(adapted.predict_kernels(lists), measured)
    as_they_are = [mape([p.latency_ms for p in s.predict_kernels(lists, on_missing="zero")], measured) for s in sources]
    print(f"adapted {error:.3f}, the sources as they are {as_they_are}, shots' LOO {adapted.loo_mape:.3f}")
    # another phone's predictor is far off; ten measurements bring it near the phone's own
    assert min(as_they_are) > 0.3 and error < 0.15
    # the stated uncertainty is of the error's order, not a flattering in-sample fit
    assert error / 3 < adapted.loo_mape < error * 3
    assert [s["name"] for s in adapted.provenance()["sources"]] == list(SOURCES)

    stored = adapt.distil(adapted, [(s.name, tuple(s.deduced or ())) for s in rest[:20]], method="lasso")
    answers = np.asarray([p.latency_ms for p in stored.predict_kernels(lists, on_missing="zero")])
    assert mape(answers, adapted.predict_kernels(lists)) < 0.05  # the stored form answers as the fit does
    assert stored.meta["adapted"]["loo_mape"] == adapted.loo_mape
