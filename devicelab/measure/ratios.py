"""The one place that turns paired timings into a ratio with its uncertainty.

Every ratio the lab reports (a fused kernel against its sequential launches, a sharing strategy
against another or against the ceiling, a plan against the unfused network) is measured in
rounds: in each round both sides run, interleaved, so a burst of load on the shared machine hits
both. The estimate is therefore *paired*: one ratio per round, summarised by the median of their
logarithms (a ratio of 2 and one of 0.5 cancel, one wild round moves nothing), with a percentile
bootstrap interval over rounds. A ratio whose interval holds 1 is "within noise": the headline
counts only those whose interval lies wholly above or below 1.

Two unpaired medians (45.5 ms against 31.9 ms, read as 1.43x) are never a ratio here: when the
rounds' ratios are 1.02, 1.05, 1.04 the result is 1.04, whatever the medians of each side were.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from devicelab.wire import JsonRecord

BOOTSTRAP_DRAWS = 2000
CONFIDENCE = 0.95

Verdict = Literal["above", "below", "within noise"]


@dataclass(frozen=True)
class RatioEstimate(JsonRecord):
    """A paired ratio (numerator over denominator, per round) with its bootstrap interval."""

    ratio: float
    low: float
    high: float
    rounds: int
    confidence: float
    # "above" / "below" when the whole interval lies above / below 1, else "within noise"
    verdict: Verdict

    json_name = "ratio"

    @property
    def significant(self) -> bool:
        """Whether the interval excludes 1."""
        return self.verdict != "within noise"

    def label(self, digits: int = 2) -> str:
        """``1.04x [1.01-1.07]``, with "within noise" when the interval holds 1."""
        text = f"{self.ratio:.{digits}f}x [{self.low:.{digits}f}-{self.high:.{digits}f}]"
        return text if self.significant else f"{text} within noise"


def paired_ratio(
    numerators: Sequence[float],
    denominators: Sequence[float],
    *,
    draws: int = BOOTSTRAP_DRAWS,
    confidence: float = CONFIDENCE,
    seed: int = 7,
) -> RatioEstimate:
    """The ratio ``numerators[i] / denominators[i]`` over paired rounds, with a bootstrap interval.

    A speed-up of B over A is ``paired_ratio(times_a, times_b)``: above 1 when B is faster. The
    interval resamples whole rounds (seeded: the same rounds give the same interval). With one
    round there is no spread to measure: the interval is that round's ratio and the verdict is
    "within noise", never a claim.
    """
    import numpy as np  # here: the record and its readers (the CLI's printing) need no numpy

    num = np.asarray(numerators, dtype=np.float64)
    den = np.asarray(denominators, dtype=np.float64)
    if num.shape != den.shape or num.ndim != 1:
        raise ValueError(f"paired rounds need as many numerators as denominators, got {num.shape} and {den.shape}")
    if num.size == 0:
        raise ValueError("a ratio needs at least one round")
    if not (np.all(np.isfinite(num)) and np.all(np.isfinite(den))) or np.any(num <= 0) or np.any(den <= 0):
        raise ValueError("a ratio's rounds must be finite and positive")
    if not 0.5 <= confidence < 1:
        raise ValueError(f"confidence must be in [0.5, 1), got {confidence}")
    logs = np.log(num / den)
    point = float(np.exp(np.median(logs)))
    if logs.size == 1:
        return RatioEstimate(point, point, point, 1, confidence, "within noise")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, logs.size, size=(draws, logs.size))
    medians = np.median(logs[picks], axis=1)
    tail = (1 - confidence) / 2
    low = float(np.exp(np.quantile(medians, tail)))
    high = float(np.exp(np.quantile(medians, 1 - tail)))
    return RatioEstimate(point, low, high, int(logs.size), confidence, _verdict(low, high))


def _verdict(low: float, high: float) -> Verdict:
    if low > 1:
        return "above"
    if high < 1:
        return "below"
    return "within noise"


def count_significant(estimates: Sequence[RatioEstimate]) -> dict[str, int]:
    """How many ratios lie significantly above 1, below 1, or within noise (a headline's counts)."""
    counts = {"above": 0, "below": 0, "within noise": 0}
    for estimate in estimates:
        counts[estimate.verdict] += 1
    return counts


def share_above(estimates: Sequence[RatioEstimate]) -> float:
    """The share of ratios significantly above 1 (NaN for none)."""
    if not estimates:
        return math.nan
    return count_significant(estimates)["above"] / len(estimates)
