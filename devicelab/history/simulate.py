"""Series where the truth is known: level shifts of known size in noise of known shape.

A simulated result has ``samples`` warm runs. Its level is the series' level times a run factor
(the between-run drift of a shared machine, log-normal with ``between_cv``); each sample adds the
within-run noise (``within_cv``). A *burst* (another tenant's job, ``burst_rate`` of the results)
slows a random share of a result's samples by 20-60 %: when it hits part of the run the samples
spread and the lab flags the result noisy (its CV above ``HIGH_CV``), as it does for real; when
it hits the whole run it looks like one slow result. A shift multiplies the level from its index
on. ``score`` matches flags to the true shifts: recall, false alarms per 100 results and the
delay (results after the shift until it was flagged).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from devicelab.history.changepoints import DEFAULT_BETA, change_points
from devicelab.history.detect import DetectionPolicy, scan
from devicelab.history.series import Point
from devicelab.measure.stats import HIGH_CV


@dataclass(frozen=True)
class Noise:
    """The shape of a series' noise."""

    between_cv: float = 0.02
    within_cv: float = 0.03
    samples: int = 20
    burst_rate: float = 0.05


@dataclass(frozen=True)
class SimulatedSeries:
    """Points and the truth: where the level moved (None: nowhere) and by how much."""

    points: list[Point]
    shift_at: int | None
    shift: float


def simulate(
    rng: np.random.Generator,
    n: int,
    noise: Noise,
    shift_at: int | None = None,
    shift: float = 0.0,
    level_ms: float = 10.0,
) -> SimulatedSeries:
    """One series of ``n`` results."""
    points = []
    for i in range(n):
        level = level_ms * (1 + shift if shift_at is not None and i >= shift_at else 1.0)
        run = level * np.exp(rng.normal(0.0, noise.between_cv))
        samples = run * np.exp(rng.normal(0.0, noise.within_cv, noise.samples))
        if rng.random() < noise.burst_rate:
            hit = rng.random(noise.samples) < rng.uniform(0.2, 1.0)
            samples = np.where(hit, samples * rng.uniform(1.2, 1.6), samples)
        cv = float(np.std(samples, ddof=1) / np.mean(samples))
        points.append(Point(f"r{i}", tuple(float(s) for s in samples), clean=cv <= HIGH_CV))
    return SimulatedSeries(points, shift_at, shift)


@dataclass(frozen=True)
class Score:
    """How a detector did over many series."""

    shifts: int
    detected: int
    false_alarms: int
    results: int
    delays: tuple[int, ...]

    @property
    def recall(self) -> float:
        """Share of true shifts flagged in time."""
        return self.detected / self.shifts if self.shifts else float("nan")

    @property
    def false_alarms_per_100(self) -> float:
        """Flags that match no true shift, per 100 results."""
        return 100.0 * self.false_alarms / self.results if self.results else float("nan")

    @property
    def precision(self) -> float:
        """Share of flags that are true shifts."""
        flags = self.detected + self.false_alarms
        return self.detected / flags if flags else float("nan")


# A detector: the indices (in the series) where it says a new level starts, each with the index
# of the result at which it said so.
Detector = Callable[[Sequence[Point]], list[tuple[int, int]]]


def score(series: Sequence[SimulatedSeries], detector: Detector, max_delay: int = 6) -> Score:
    """Match each series' detections to its true shift: a detection of a new level starting at
    most one result before the shift and at most ``max_delay`` after, made within ``max_delay``
    results of it, is the shift found; any other detection is a false alarm."""
    shifts = detected = false_alarms = results = 0
    delays: list[int] = []
    for s in series:
        results += len(s.points)
        found = False
        if s.shift_at is not None:
            shifts += 1
        at = s.shift_at
        for start, said in detector(s.points):
            if at is not None and not found and at - 1 <= start <= at + max_delay and said - at <= max_delay:
                found = True
                delays.append(said - at)
            else:
                false_alarms += 1
        detected += found
    return Score(shifts, detected, false_alarms, results, tuple(delays))


def online_detector(policy: DetectionPolicy | None = None) -> Detector:
    """``scan``'s flags as detections: the new level's first point, said at its last confirming one."""

    def detect(points: Sequence[Point]) -> list[tuple[int, int]]:
        index = {p.key: i for i, p in enumerate(points)}
        return [(index[f.at], index[f.confirmed_by[-1]]) for f in scan(points, policy)]

    return detect


def offline_detector(beta: float = DEFAULT_BETA) -> Detector:
    """``change_points`` as detections (said where they are: offline, the whole series is known)."""

    def detect(points: Sequence[Point]) -> list[tuple[int, int]]:
        return [(c.index, c.index) for c in change_points(points, beta)]

    return detect
