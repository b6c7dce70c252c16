"""The one place that turns timing samples into statistics."""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from devicelab.wire import JsonRecord, Reported

# A coefficient of variation above this marks a measurement as noisy: the samples spread so
# much that a mean alone would mislead (the lab reports it and flags it, never hides it).
HIGH_CV = 0.05


@dataclass(frozen=True)
class SampleStats(JsonRecord):
    """Robust summary of timing samples, in milliseconds."""

    n: int
    mean: float
    # NaN when the runtime reported no such figure (``from_aggregate``): null on the wire
    median: Reported
    p90: Reported
    std: Reported
    min: Reported
    max: Reported
    cv: Reported
    noisy: bool

    json_name = "stats"


def summarize(samples_ms: Sequence[float]) -> SampleStats:
    """Mean, median, p90, sample std, min, max, coefficient of variation of samples (ms)."""
    if len(samples_ms) == 0:
        raise ValueError("no samples to summarize")
    a = np.asarray(samples_ms, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError("timing samples must be finite and non-negative")
    mean = float(a.mean())
    std = float(a.std(ddof=1)) if len(a) > 1 else 0.0
    cv = std / mean if mean > 0 else 0.0
    return SampleStats(
        n=len(a),
        mean=mean,
        median=float(np.median(a)),
        p90=float(np.percentile(a, 90)),
        std=std,
        min=float(a.min()),
        max=float(a.max()),
        cv=cv,
        noisy=cv > HIGH_CV,
    )


def from_aggregate(
    n: int, mean: float, std: float | None = None, min: float | None = None, max: float | None = None
) -> SampleStats:
    """Statistics a runtime reported as aggregates, without its samples (TensorFlow Lite's
    ``benchmark_model`` prints ``count, min, max, avg, std``, never the runs themselves).

    What was not reported is NaN, never invented: the median and p90 always (they need the
    samples), std/min/max when absent. The server stores NaN as null; consumers that need a
    central value fall back to the mean (``central``).
    """
    if n < 1 or not np.isfinite(mean) or mean < 0:
        raise ValueError(f"an aggregate needs n >= 1 and a finite non-negative mean, got n={n}, mean={mean}")
    nan = float("nan")
    sd = nan if std is None else float(std)
    cv = sd / mean if mean > 0 and np.isfinite(sd) else nan
    return SampleStats(
        n=n,
        mean=float(mean),
        median=nan,
        p90=nan,
        std=sd,
        min=nan if min is None else float(min),
        max=nan if max is None else float(max),
        cv=cv,
        noisy=bool(np.isfinite(cv) and cv > HIGH_CV),
    )


def central(stats: SampleStats) -> float:
    """The median, or the mean where only aggregates were reported (no median)."""
    return stats.median if np.isfinite(stats.median) else stats.mean


def median_interval(values: Sequence[float], draws: int = 2000, seed: int = 7) -> tuple[float, float]:
    """A 95 % bootstrap interval of the median of ``values`` (resampled ``draws`` times, seeded:
    the same values give the same interval)."""
    rng = random.Random(seed)
    medians = sorted(statistics.median(rng.choices(list(values), k=len(values))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]
