"""How steady the truth is: the noise floor a predictor is scored against.

A network's measured latency is the fastest of its rounds (profiles spread over time, see
``records.merge_rounds``). On a shared machine two such measurements of the same network differ,
and a test set's MAPE can never be lower than what that difference implies, however good the
predictor. This module estimates it from the rounds themselves:

* ``half_vs_half``: the MAPE of one half of each network's rounds against the other half (each
  half its fastest round): two independent measurements, compared.
* ``oracle_floor``: the MAPE a perfect predictor, one that knew each network's expected time,
  would score against the fastest of *all* rounds. Noise model: a round's log latency is the
  network's own level plus ``g + u + e``: ``g`` normal with SD ``sigma`` (steady jitter), ``u``
  uniform on [0, ``width``] (a machine whose speed wanders between a clean and a loaded state)
  and ``e`` exponential with mean ``beta`` (bursts of interference, which only add time). The
  level is unknown, so the three are fitted to what does not depend on it: each network's
  rounds, sorted and centred on their mean, averaged over networks (their spread and shape). The
  fastest of all rounds is then drawn many times from the model, and the best constant
  prediction (the minimizer of the MAPE, a 1/x-weighted median) is scored against the draws.
  The model is a simplification of the real noise: read the result as the floor's size, not its
  third digit (``tests/devicelab/predict/test_noise.py`` bounds its error on simulated rounds).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from devicelab.predict.errors import PredictorError

MIN_ROUNDS_FOR_MODEL = 3  # two rounds centred on their mean cannot tell jitter from interference
# the noise model's parameters searched, in log latency: normal jitter, a uniform slowdown, bursts
# (upper ends; a coarse grid of ``COARSE`` steps each, then a finer one around the best point)
LIMITS = (0.2, 0.64, 0.2)
COARSE = 16
FINE = 4
FIT_DRAWS = 4000
DRAWS = 40000


def _rounds_matrix(rounds: Sequence[Sequence[float]], n: int) -> np.ndarray:
    x = np.asarray([list(r[:n]) for r in rounds], dtype=np.float64)
    if x.size == 0 or not np.all(np.isfinite(x)) or np.any(x <= 0):
        raise PredictorError("every round's latency must be a positive number")
    return x


def half_vs_half(rounds: Sequence[Sequence[float]]) -> tuple[int, float]:
    """``(k, mape)``: the fastest of each network's first ``k`` rounds against the fastest of its next
    ``k`` (``k`` = half the fewest rounds any network has)."""
    k = min((len(r) for r in rounds), default=0) // 2
    if k == 0:
        raise PredictorError("the repeatability needs at least 2 rounds for every network")
    x = _rounds_matrix(rounds, 2 * k)
    a, b = x[:, :k].min(axis=1), x[:, k:].min(axis=1)
    return k, float(np.mean(np.abs(a - b) / b))


def oracle_floor(rounds: Sequence[Sequence[float]], seed: int = 0) -> dict[str, float | int]:
    """The noise model fitted to the rounds and the MAPE a perfect predictor would score against
    the fastest of all of a network's rounds (see the module's docs)."""
    n = min((len(r) for r in rounds), default=0)
    if n < MIN_ROUNDS_FOR_MODEL:
        raise PredictorError(f"the noise model needs at least {MIN_ROUNDS_FOR_MODEL} rounds for every network, not {n}")
    logs = np.log(_rounds_matrix(rounds, n))
    observed = np.sort(logs - logs.mean(axis=1, keepdims=True), axis=1).mean(axis=0)
    rng = np.random.default_rng(seed)
    gauss, flat, expo = (
        rng.standard_normal((DRAWS, n)),
        rng.uniform(0.0, 1.0, (DRAWS, n)),
        rng.exponential(1.0, (DRAWS, n)),
    )

    def noise(sigma: float, width: float, beta: float, draws: int = DRAWS) -> np.ndarray:
        return sigma * gauss[:draws] + width * flat[:draws] + beta * expo[:draws]

    def misfit(params: tuple[float, float, float]) -> float:
        x = noise(*params, draws=FIT_DRAWS)
        profile = np.sort(x - x.mean(axis=1, keepdims=True), axis=1).mean(axis=0)
        return float(np.sum((profile - observed) ** 2))

    def best_of(grids: Sequence[np.ndarray]) -> tuple[float, float, float]:
        s, w, b = min(itertools.product(*grids), key=misfit)
        return float(s), float(w), float(b)

    steps = [limit / COARSE for limit in LIMITS]
    coarse = best_of([np.arange(COARSE + 1) * step for step in steps])
    sigma, width, beta = best_of(
        [
            np.clip(c + np.arange(-FINE, FINE + 1) * step / FINE, 0.0, None)
            for c, step in zip(coarse, steps, strict=True)
        ]
    )
    truth = np.sort(np.exp(noise(sigma, width, beta).min(axis=1)))
    weights = np.cumsum(1 / truth)
    best = truth[np.searchsorted(weights, weights[-1] / 2)]
    return {
        "rounds_in_truth": n,
        "jitter_sd": sigma,
        "slowdown_width": width,
        "interference_mean": beta,
        "oracle_mape": float(np.mean(np.abs(best / truth - 1))),
    }


def noise_floor(rounds: Sequence[Sequence[float]]) -> dict[str, Any] | None:
    """Both figures for networks measured in rounds (one list of latencies per network), as plain
    JSON data; None when no network has 2 rounds. Networks with fewer rounds than most are left
    out (their truth is less steady than the rest's)."""
    counts = sorted(len(r) for r in rounds)
    if not counts or counts[-1] < 2:
        return None
    usual = counts[len(counts) // 2] if counts[len(counts) // 2] >= 2 else 2
    kept = [list(r) for r in rounds if len(r) >= usual]
    k, repeat = half_vs_half(kept)
    out: dict[str, Any] = {"networks": len(kept), "rounds": usual, "rounds_per_half": k, "mape_half_vs_half": repeat}
    if usual >= MIN_ROUNDS_FOR_MODEL:
        out.update(oracle_floor(kept))
    return out


__all__ = ["half_vs_half", "noise_floor", "oracle_floor"]
