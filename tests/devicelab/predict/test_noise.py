"""The noise floor: repeatability of rounds and what a perfect predictor would score."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from devicelab.predict.errors import PredictorError
from devicelab.predict.noise import half_vs_half, noise_floor, oracle_floor

Noise = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]

NOISES: dict[str, Noise] = {
    "normal 4 %": lambda rng, shape: rng.normal(0.0, 0.04, shape),
    "interference 4 %": lambda rng, shape: rng.exponential(0.04, shape) + rng.normal(0.0, 0.013, shape),
    "half-normal 8 %": lambda rng, shape: np.abs(rng.normal(0.0, 0.08, shape)) + rng.normal(0.0, 0.02, shape),
    "quiet 1 %": lambda rng, shape: rng.exponential(0.01, shape),
    "uniform slowdown 0-43 %": lambda rng, shape: rng.uniform(0.0, 0.43, shape),
}


def _rounds(noise: Noise, networks: int = 300, rounds: int = 5, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    level = rng.uniform(0.0, 4.0, networks)  # networks from 1 to 55 ms
    return np.exp(level[:, None] + noise(rng, (networks, rounds)))


def _true_floor(noise: Noise, rounds: int = 5) -> float:
    """The floor computed from the generating law itself: a perfect predictor's best constant
    against many fastest-of-``rounds`` draws."""
    x = np.sort(np.exp(noise(np.random.default_rng(99), (400_000, rounds))).min(axis=1))
    w = np.cumsum(1 / x)
    best = x[np.searchsorted(w, w[-1] / 2)]
    return float(np.mean(np.abs(best / x - 1)))


@pytest.mark.parametrize("name", sorted(NOISES))
def test_oracle_floor_recovers_the_floor_of_known_noise(name: str) -> None:
    noise = NOISES[name]
    got = oracle_floor(_rounds(noise).tolist())["oracle_mape"]
    # half-normal noise comes out up to 25 % high; a quiet machine's 0.14 % floor up to 0.1 point off
    assert got == pytest.approx(_true_floor(noise), rel=0.3, abs=0.002)


@pytest.mark.slow
def test_the_floor_grows_with_the_noise_and_falls_with_more_rounds() -> None:
    quiet = oracle_floor(_rounds(NOISES["quiet 1 %"]).tolist())["oracle_mape"]
    loud = oracle_floor(_rounds(NOISES["half-normal 8 %"]).tolist())["oracle_mape"]
    assert quiet < 0.5 * loud
    three = oracle_floor(_rounds(NOISES["normal 4 %"], rounds=3).tolist())
    nine = oracle_floor(_rounds(NOISES["normal 4 %"], rounds=9).tolist())
    assert three["rounds_in_truth"] == 3 and nine["rounds_in_truth"] == 9
    assert nine["oracle_mape"] < three["oracle_mape"]


@pytest.mark.slow
def test_interference_is_told_from_jitter() -> None:
    jitter = oracle_floor(_rounds(NOISES["normal 4 %"]).tolist())
    bursts = oracle_floor(_rounds(lambda rng, s: rng.exponential(0.04, s)).tolist())
    flat = oracle_floor(_rounds(NOISES["uniform slowdown 0-43 %"]).tolist())
    assert jitter["jitter_sd"] > max(jitter["interference_mean"], jitter["slowdown_width"] / 4)
    assert bursts["interference_mean"] > max(bursts["jitter_sd"], bursts["slowdown_width"] / 4)
    assert flat["slowdown_width"] == pytest.approx(0.43, rel=0.15)


def test_half_vs_half_compares_the_fastest_of_each_half() -> None:
    k, m = half_vs_half([[10.0, 12.0, 11.0, 15.0], [5.0, 4.0, 4.0, 4.4], [2.0, 2.0, 2.0]])
    assert k == 1  # the fewest rounds (3) give halves of 1
    assert m == pytest.approx((abs(10 - 12) / 12 + abs(5 - 4) / 4 + 0.0) / 3)
    k, m = half_vs_half([[10.0, 12.0, 11.0, 15.0], [5.0, 4.0, 4.0, 4.4]])
    assert k == 2
    assert m == pytest.approx((abs(10 - 11) / 11 + 0.0) / 2)


def test_noise_floor_leaves_out_networks_of_fewer_rounds_and_needs_rounds() -> None:
    rounds = _rounds(NOISES["normal 4 %"], networks=40).tolist() + [[3.0], [4.0, 4.1]]
    floor = noise_floor(rounds)
    assert floor is not None
    assert floor["networks"] == 40 and floor["rounds"] == 5 and floor["rounds_per_half"] == 2
    assert 0 < floor["oracle_mape"] < floor["mape_half_vs_half"]
    two = noise_floor([[1.0, 1.1], [2.0, 2.1], [3.0]])
    assert two is not None and "oracle_mape" not in two  # 2 rounds: the repeatability only
    assert noise_floor([[1.0], [2.0]]) is None
    assert noise_floor([]) is None


def test_bad_rounds_are_refused_with_the_reason() -> None:
    with pytest.raises(PredictorError, match="positive"):
        half_vs_half([[1.0, 0.0]])
    with pytest.raises(PredictorError, match="at least 3 rounds"):
        oracle_floor([[1.0, 1.1]])
