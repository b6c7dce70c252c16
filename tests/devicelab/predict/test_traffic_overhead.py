"""The overhead's activation-traffic term: fitted where the data leaves kernels unlisted (the qed
phones), added to each kernel by the elements it moves, and kept in the artifact."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from devicelab.predict import qed
from devicelab.predict.artifacts import _canonical, predictor_from_dict, predictor_to_dict
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor, with_overhead
from devicelab.predict.samples import Sample
from devicelab.predict.traffic import fit_traffic, kernels_moved

RNG = np.random.default_rng(3)


def _networks(d_per_element: float) -> tuple[np.ndarray, ...]:
    s = RNG.uniform(1, 50, 40)
    n = RNG.integers(10, 200, 40).astype(float)
    m = RNG.uniform(1e6, 8e7, 40)
    e = 1.2 * (s + 0.01 * n + d_per_element * m) + 2.0
    return s, n, m, e


@pytest.mark.parametrize("d", [4e-8, -1e-8])
def test_the_fit_recovers_a_cost_per_element_of_either_sign(d: float) -> None:
    s, n, m, e = _networks(d)
    a, b, c, got, t = fit_traffic(s, n, m, e, (1.0, 1.0, 0.0, float(np.mean(e - s))), fit_power=False)
    assert (a, b, c, got, t) == pytest.approx((1.2, 1.0, 0.01, d, 2.0), rel=1e-3, abs=1e-6)


def test_without_enough_networks_or_spread_there_is_no_term() -> None:
    s, n, m, e = _networks(4e-8)
    start = (1.1, 1.0, 0.0, 2.5)
    assert fit_traffic(s[:4], n[:4], m[:4], e[:4], start, fit_power=False) == (1.1, 1.0, 0.0, 0.0, 2.5)
    assert fit_traffic(s, n, np.full(40, 3e6), e, start, fit_power=False) == (1.1, 1.0, 0.0, 0.0, 2.5)


@pytest.fixture(scope="module")
def s10(qed_rows: list[qed.QedOp], qed_e2e: dict) -> tuple[ScenarioPredictor, list[Sample]]:
    """A Lasso predictor of the s10 (qed) with the paper's constant overhead, and its samples."""
    samples = qed.gpu_samples("s10", qed_rows, qed_e2e)
    base = train_predictor(
        samples, TfliteGpuDeducer("mali"), Scenario("tflite_gpu", "s10"), "lasso", search="fast",
        overhead_kinds=qed.OVERHEAD_KINDS,
    )  # fmt: skip
    return base, samples


def _squared_error(p: ScenarioPredictor, samples: list[Sample]) -> float:
    """The calibration's objective: squared relative errors of the end-to-end latencies."""
    predicted = p.predict_kernels([s.prediction_input() for s in samples])
    return float(sum(((x.latency_ms - s.e2e_ms) / s.e2e_ms) ** 2 for x, s in zip(predicted, samples, strict=True)))


def test_the_s10_learns_a_cost_per_element_moved(s10: tuple) -> None:
    # the affine overhead fits the measured kernels: Mali's unlisted kernels move activations again
    base, samples = s10
    p = with_overhead(base, samples, "affine")  # on by default: the qed data leaves kinds unlisted
    assert p.per_element_ms * 1e6 == pytest.approx(0.036, abs=0.002)  # ms per million elements
    assert with_overhead(base, samples, "affine", traffic=False).per_element_ms == 0.0
    no_kinds = ScenarioPredictor(**{**base.__dict__, "overhead_kinds": ()})
    assert with_overhead(no_kinds, samples, "affine").per_element_ms == 0.0  # every kernel listed: no term


def test_the_calibrated_overhead_fits_its_own_sums_better_with_the_term(s10: tuple) -> None:
    base, samples = s10
    with_term = with_overhead(base, samples, "calibrated")
    without = with_overhead(base, samples, "calibrated", traffic=False)
    assert with_term.per_element_ms != 0.0 and without.per_element_ms == 0.0
    assert _squared_error(with_term, samples) < _squared_error(without, samples)


def test_each_kernel_gets_d_times_the_elements_it_moves(s10: tuple) -> None:
    base, samples = s10
    p = with_overhead(base, samples, "affine")
    kernels = samples[0].prediction_input()
    without = with_overhead(base, samples, "affine", traffic=False)
    shifted = ScenarioPredictor(**{**without.__dict__, "per_element_ms": p.per_element_ms})
    a = shifted.predict_kernels([kernels], breakdown=True)[0]
    b = without.predict_kernels([kernels], breakdown=True)[0]
    assert a.kernels is not None and b.kernels is not None
    for ka, kb, k in zip(a.kernels, b.kernels, kernels, strict=True):
        if ka.model != "overhead":
            assert ka.latency_ms - kb.latency_ms == pytest.approx(p.per_element_ms * kernels_moved([k]))


def test_the_artifact_keeps_the_term_and_older_ones_load_without(s10: tuple) -> None:
    base, samples = s10
    p = with_overhead(base, samples, "calibrated")
    loaded = predictor_from_dict(predictor_to_dict(p))
    assert loaded.per_element_ms == p.per_element_ms != 0
    kernels = [s.prediction_input() for s in samples[:5]]
    assert [x.latency_ms for x in loaded.predict_kernels(kernels)] == [x.latency_ms for x in p.predict_kernels(kernels)]
    body = {k: v for k, v in predictor_to_dict(p).items() if k not in ("sha256", "per_element_ms")}
    body["schema_version"] = 4
    old = predictor_from_dict({**body, "sha256": hashlib.sha256(_canonical(body)).hexdigest()})
    assert old.per_element_ms == 0.0 and old.per_kernel_ms == p.per_kernel_ms
