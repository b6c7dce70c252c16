"""The one place that turns timing samples into statistics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

# A coefficient of variation above this marks a measurement as noisy: the samples spread so
# much that a mean alone would mislead (the lab reports it and flags it, never hides it).
HIGH_CV = 0.05


@dataclass(frozen=True)
class SampleStats:
    """Robust summary of timing samples, in milliseconds."""

    n: int
    mean: float
    median: float
    p90: float
    std: float
    min: float
    max: float
    cv: float
    noisy: bool

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


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
