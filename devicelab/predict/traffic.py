"""The activation-traffic term of the affine and calibrated overheads, for data that lists only
some of the kernels a network runs.

The qed files list no element-wise, reshape, split or pad kernel (``overhead_kinds``): their time
is in the end-to-end latency only, so a predictor learns it as overhead. That time is neither a
constant nor a share of the listed kernels' time: an element-wise kernel reads and writes an
activation tensor, so it grows with the activations the network moves (on Mali, PowerVR and
Apple GPUs every activation or add after a Winograd kernel runs as a kernel of its own,
``deduce_tflite_gpu``). So where a predictor's data leaves kinds in the overhead, its affine and
calibrated overheads learn ``d``, a cost per activation element a kernel reads or writes
(``moved``), added to each kernel's prediction beside the launch cost ``c``:

    E = a * (P + c * n + d * M)**b + T

with ``M`` the elements the network's kernels move (``b = 1`` for the affine overhead, which fits
the measured kernel sums). Like ``c``, ``d`` may take either sign: positive on the Galaxy S10
(Mali-G76: 0.036 ms per million elements, the unlisted kernels moving activations again),
negative beside a positive ``c`` on the Galaxy A03s (PowerVR GE8320: ``c`` = 0.10 ms and ``d`` =
-0.29 ms per million elements): a cost per kernel that shows beside short kernels and that long
kernels hide. It is kept only when it lowers the relative error over the training networks.

Measured on the 35 qed networks that are not in our training file
(``benchmarks/qed_unseen_overhead.py``; docs/predictors.md has the table).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from devicelab.predict.features import RAW_NAMES
from devicelab.predict.kernels import Kernel

_MOVED = (RAW_NAMES.index("input_size"), RAW_NAMES.index("output_size"))
MIN_NETWORKS = 5  # fewer training networks: no traffic term
POWER_BOUNDS = (0.8, 1.3)  # of ``b``, as the calibration's grid (``predictor.POWERS``)
MILLION = 1e6  # the fit works in ms per million elements, so its parameters are of one scale


def moved(raws: np.ndarray) -> np.ndarray:
    """The activation elements each kernel reads and writes, from rows of raw features."""
    raws = np.asarray(raws, dtype=np.float64)
    if raws.ndim != 2 or raws.shape[0] == 0:
        return np.zeros(0)
    moved: np.ndarray = raws[:, _MOVED[0]] + raws[:, _MOVED[1]]
    return moved


def kernels_moved(kernels: Sequence[Kernel]) -> float:
    """The activation elements a list of kernels reads and writes."""
    return float(moved(np.asarray([k.raw for k in kernels], dtype=np.float64)).sum()) if kernels else 0.0


def _loss(
    params: np.ndarray, sums: np.ndarray, counts: np.ndarray, traffic: np.ndarray, e2e: np.ndarray, power: float | None
) -> np.ndarray:
    a, b, c, d, t = params
    base = sums + c * counts + d * traffic
    b = power if power is not None else b
    errors: np.ndarray = (a * np.maximum(base, 1e-9) ** b + t - e2e) / e2e
    return errors


def fit_traffic(
    sums: Sequence[float] | np.ndarray,
    counts: Sequence[float] | np.ndarray,
    elements: Sequence[float] | np.ndarray,
    e2e: Sequence[float] | np.ndarray,
    start: tuple[float, float, float, float],
    fit_power: bool,
) -> tuple[float, float, float, float, float]:
    """``(a, b, c, d, T)`` minimizing ``sum(((a * (S + c * n + d * M)**b + T - E) / E)^2)`` over
    the training networks (S: kernel sums, n: kernel counts, M: elements moved, E: end-to-end),
    starting from a fitted overhead ``start = (a, b, c, T)`` without the term (``b`` stays as
    it is unless ``fit_power``). The start with ``d = 0`` when there are fewer than
    ``MIN_NETWORKS`` networks, the fit fails, a network's ``S + c * n + d * M`` would not stay
    positive, or the term does not lower the training error."""
    from scipy.optimize import least_squares

    s, n, e = (np.asarray(v, dtype=np.float64) for v in (sums, counts, e2e))
    m = np.asarray(elements, dtype=np.float64) / MILLION
    a0, b0, c0, t0 = start
    unchanged = (a0, b0, c0, 0.0, t0)
    if len(e) < MIN_NETWORKS or np.ptp(m) <= 0 or np.any(e <= 0) or a0 <= 0:
        return unchanged
    power = None if fit_power else b0
    x0 = np.array([a0, b0, c0, 0.0, t0])
    lower = [1e-9, POWER_BOUNDS[0], -np.inf, -np.inf, -np.inf]
    upper = [np.inf, POWER_BOUNDS[1], np.inf, np.inf, np.inf]
    x0[1] = min(max(x0[1], POWER_BOUNDS[0]), POWER_BOUNDS[1])
    try:
        fit = least_squares(_loss, x0, bounds=(lower, upper), args=(s, n, m, e, power))
    except (ValueError, np.linalg.LinAlgError):
        return unchanged
    a, b, c, d, t = (float(v) for v in fit.x)
    b = b if power is None else b0
    before = float(np.sum(_loss(np.array([a0, b0, c0, 0.0, t0]), s, n, m, e, b0) ** 2))
    after = float(np.sum(fit.fun**2))
    if not (fit.success and np.all(np.isfinite(fit.x))) or after >= before or np.any(s + c * n + d * m <= 0):
        return unchanged
    return a, b, c, d / MILLION, t


__all__ = ["MIN_NETWORKS", "fit_traffic", "kernels_moved", "moved"]
