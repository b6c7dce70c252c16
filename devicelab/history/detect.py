"""Is a new result a change? Online detection over a series, as results arrive.

A new point is compared with its baseline: the series' last ``window`` clean points since the
last change (a noisy, hot or throttled result is never a baseline). It *deviates* when three
things hold at once:

1. the change is at least the team's ``threshold`` (5 % by default): smaller moves do not matter;
2. it is larger than the series' own noise: ``point_z`` times the between-run spread of the
   level's results (a robust sigma of their logarithms over up to ``noise_window`` of them, so a
   burst in the history does not widen it), because runs of the same thing on a shared machine
   drift from minute to minute;
3. it is significant on the raw samples: a Mann-Whitney U test (no normality assumed) of the new
   point's samples against the baseline's, where both have samples (a phone reports aggregates
   only: there the noise test stands alone).

A change is *flagged* once ``confirm`` consecutive clean points deviate the same way and their
mean step exceeds ``noise_z`` sigmas of such a mean (sigma / sqrt(confirm)): one slow run is a
burst, two are a level. The flag's point is the first of the new level; the baseline moves
there, so the next flag is against the new level. Each flag names what changed in the context
between the two sides and which operators moved.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from scipy.stats import mannwhitneyu

from devicelab.history.series import Point, context_changes, robust_sigma

# Below this many samples on either side the rank test has no power: the noise test stands alone.
MIN_SAMPLES_FOR_RANK_TEST = 5
# A baseline of identical levels has no measured spread: changes below this relative sigma are
# still taken as noise (the timer's and scheduler's jitter between runs).
SIGMA_FLOOR = 0.005


@dataclass(frozen=True)
class DetectionPolicy:
    """How sure and how large a change must be to be flagged."""

    threshold: float = 0.05  # the smallest relative change that matters
    alpha: float = 0.01  # the rank test's significance level
    point_z: float = 2.0  # how many between-run sigmas one deviating point must exceed
    noise_z: float = 3.0  # how many sigmas (of their mean) the confirming points together must exceed
    window: int = 10  # clean points in a baseline (its level)
    noise_window: int = 30  # clean points of the level its noise is measured on (more: a steadier sigma)
    min_history: int = 3  # clean points before anything is judged
    confirm: int = 2  # consecutive deviating points that make a flag

    def __post_init__(self) -> None:
        if not 0 < self.threshold < 1:
            raise ValueError(f"threshold must be in (0, 1), got {self.threshold}")
        if not 0 < self.alpha < 0.5:
            raise ValueError(f"alpha must be in (0, 0.5), got {self.alpha}")
        if self.min_history < 2 or self.window < self.min_history or self.noise_window < self.window:
            raise ValueError(
                "need 2 <= min_history <= window <= noise_window, got "
                f"{self.min_history}, {self.window} and {self.noise_window}"
            )
        if self.confirm < 1 or self.noise_z < 0 or self.point_z < 0:
            raise ValueError(
                f"confirm must be >= 1, noise_z and point_z >= 0, got {self.confirm}, {self.noise_z}, {self.point_z}"
            )


@dataclass(frozen=True)
class Comparison:
    """One point against its baseline."""

    point: str
    baseline: tuple[str, ...]
    change: float  # relative change of the point's level against the baseline's (+: slower)
    noise: float  # the baseline's between-run sigma, relative
    p_value: float  # the rank test's; NaN where a side has too few samples
    deviates: bool
    why: str  # which test it failed, or "deviates"


@dataclass(frozen=True)
class OperatorShift:
    """One operator's time on both sides of a change."""

    name: str
    before_ms: float
    after_ms: float

    @property
    def delta_ms(self) -> float:
        """After minus before."""
        return self.after_ms - self.before_ms

    @property
    def change(self) -> float:
        """Relative change."""
        return self.after_ms / self.before_ms - 1 if self.before_ms > 0 else math.inf


@dataclass(frozen=True)
class Flag:
    """A confirmed change: where the new level starts and what it is made of."""

    at: str  # the first point of the new level
    confirmed_by: tuple[str, ...]  # the deviating points, ``at`` first
    direction: Literal["slower", "faster"]
    change: float  # relative change of the new points' level against the baseline's
    p_value: float  # the largest of the confirming points' (NaN: no rank test)
    baseline: tuple[str, ...]
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # context key -> (before, after)
    operators: tuple[OperatorShift, ...] = ()  # the operators that moved, largest first


def compare(
    baseline: Sequence[Point], point: Point, policy: DetectionPolicy, history: Sequence[Point] = ()
) -> Comparison:
    """``point`` against ``baseline`` (the last clean points of one level); the noise is measured
    on ``history`` (more clean points of the same level, the baseline's among them) where given."""
    levels = np.log([p.central_ms for p in baseline])
    level = float(np.median(levels))
    step = math.log(point.central_ms) - level
    change = math.expm1(step)
    spread = np.log([p.central_ms for p in history]) if len(history) > len(baseline) else levels
    sigma = max(robust_sigma(spread), SIGMA_FLOOR)
    p_value = math.nan
    if abs(change) < policy.threshold:
        why = f"{change:+.1%} is below the {policy.threshold:.0%} threshold"
    elif abs(step) < policy.point_z * sigma:
        why = f"{change:+.1%} is within {policy.point_z:g} x the series' noise ({sigma:.1%})"
    else:
        p_value = rank_test(baseline, point)
        significant = math.isnan(p_value) or p_value < policy.alpha
        why = "deviates" if significant else f"the samples do not differ significantly (p = {p_value:.2g})"
    keys = tuple(p.key for p in baseline)
    return Comparison(point.key, keys, change, sigma, p_value, why == "deviates", why)


def rank_test(baseline: Sequence[Point], point: Point) -> float:
    """The two-sided Mann-Whitney U p-value of the point's samples against the baseline's pooled;
    NaN when a side has too few samples to test (a phone's aggregates)."""
    pooled = [s for p in baseline for s in p.samples_ms]
    if len(point.samples_ms) < MIN_SAMPLES_FOR_RANK_TEST or len(pooled) < MIN_SAMPLES_FOR_RANK_TEST:
        return math.nan
    return float(mannwhitneyu(point.samples_ms, pooled, alternative="two-sided").pvalue)


def scan(points: Sequence[Point], policy: DetectionPolicy | None = None) -> list[Flag]:
    """The changes flagged over a series, judging each point as it came (online)."""
    policy = policy or DetectionPolicy()
    flags: list[Flag] = []
    start = 0  # the first point of the current level
    pending: list[tuple[int, Comparison]] = []
    for i, point in enumerate(points):
        if not point.clean:
            continue  # judged by nobody, judges nothing
        held = {j for j, _ in pending}
        level = [q for j, q in enumerate(points[start:i], start) if q.clean and j not in held]
        base = level[-policy.window :]
        if len(base) < policy.min_history:
            continue
        c = compare(base, point, policy, level[-policy.noise_window :])
        if not c.deviates or (pending and (c.change > 0) != (pending[0][1].change > 0)):
            pending = []
            if not c.deviates:
                continue
        pending.append((i, c))
        if len(pending) < policy.confirm:
            continue
        pending = pending[-policy.confirm :]
        # together the confirming points must stand out of the noise as their mean would
        mean_step = float(np.mean([math.log1p(c.change) for _, c in pending]))
        if abs(mean_step) < policy.noise_z * c.noise / math.sqrt(len(pending)):
            continue
        flags.append(_flag(base, [points[j] for j, _ in pending], [c for _, c in pending], policy))
        start = pending[0][0]
        pending = []
    return flags


def _flag(
    base: Sequence[Point], new: Sequence[Point], comparisons: Sequence[Comparison], policy: DetectionPolicy
) -> Flag:
    level = float(np.median(np.log([p.central_ms for p in base])))
    change = math.expm1(float(np.median(np.log([p.central_ms for p in new]))) - level)
    p_values = [c.p_value for c in comparisons if not math.isnan(c.p_value)]
    return Flag(
        at=new[0].key,
        confirmed_by=tuple(p.key for p in new),
        direction="slower" if change > 0 else "faster",
        change=change,
        p_value=max(p_values) if p_values else math.nan,
        baseline=tuple(p.key for p in base),
        changed=context_changes(base[-1], new[0]),
        operators=tuple(moved_operators(base, new, policy.threshold)),
    )


def moved_operators(before: Sequence[Point], after: Sequence[Point], threshold: float) -> list[OperatorShift]:
    """Operators whose median time moved by at least ``threshold`` and by at least 1 % of the
    model's time, largest absolute move first (operators on one side only are listed too: a
    model that changed)."""
    total = float(np.median([p.central_ms for p in before]))
    names = dict.fromkeys(n for p in (*before, *after) for n in p.operators_ms)
    out = []
    for name in names:
        b = [p.operators_ms[name] for p in before if name in p.operators_ms]
        a = [p.operators_ms[name] for p in after if name in p.operators_ms]
        shift = OperatorShift(name, float(np.median(b)) if b else 0.0, float(np.median(a)) if a else 0.0)
        if abs(shift.delta_ms) >= 0.01 * total and (not b or not a or abs(shift.change) >= threshold):
            out.append(shift)
    return sorted(out, key=lambda s: -abs(s.delta_ms))
