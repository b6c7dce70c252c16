"""Where did the level of a whole series move? Offline change-point detection.

PELT (Killick et al. 2012, the ``ruptures`` package) on the logarithm of the clean points' levels
with a least-squares cost: a level shift is a step in the mean. The penalty is the BIC-like
``beta * sigma^2 * log(n)``, where sigma is the series' point-to-point noise estimated robustly
from first differences (a step moves one difference, the median ignores it), so the same
``beta`` suits a quiet series and a noisy one. Segments shorter than ``min_size`` points are not
levels (a burst of one or two slow runs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import ruptures

from devicelab.history.series import Point, log_levels, robust_sigma

DEFAULT_BETA = 4.0
DEFAULT_MIN_SIZE = 3


@dataclass(frozen=True)
class ChangePoint:
    """The first point of a new level, with the levels on either side."""

    at: str
    index: int  # in the series as given (noisy points included)
    before_ms: float  # the previous segment's median level
    after_ms: float  # this segment's

    @property
    def change(self) -> float:
        """Relative change of the level."""
        return self.after_ms / self.before_ms - 1


def change_points(
    points: Sequence[Point], beta: float = DEFAULT_BETA, min_size: int = DEFAULT_MIN_SIZE
) -> list[ChangePoint]:
    """The level shifts of a series (its clean points), first to last."""
    clean = [(i, p) for i, p in enumerate(points) if p.clean]
    if len(clean) < 2 * min_size:
        return []
    levels = log_levels([p for _, p in clean])
    sigma = robust_sigma(np.diff(levels)) / math.sqrt(2)
    if sigma == 0:
        sigma = float(np.std(levels)) or 1e-9
    penalty = beta * sigma**2 * math.log(len(levels))
    ends = ruptures.Pelt(model="l2", min_size=min_size, jump=1).fit(levels.reshape(-1, 1)).predict(pen=penalty)
    bounds = [0, *ends]
    out = []
    for k in range(1, len(bounds) - 1):
        before = levels[bounds[k - 1] : bounds[k]]
        after = levels[bounds[k] : bounds[k + 1]]
        index, point = clean[bounds[k]]
        out.append(ChangePoint(point.key, index, float(np.exp(np.median(before))), float(np.exp(np.median(after)))))
    return out
