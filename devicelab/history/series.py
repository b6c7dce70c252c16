"""A benchmark series: one model on one kind of hardware with the same settings, over time.

Each point is one profiling result: its raw samples (the warm runs' times), its central value,
whether it may serve as a baseline (a noisy, hot or throttled result never does), what it ran on
(runtime version, driver, model hash, settings, device: the context a flag compares), and its
operators' central times (for attributing a change to the operators that moved).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from devicelab.backends.base import ProfileResult

# The context keys a flag compares between the two sides of a change, in the order it names them.
CONTEXT_KEYS = ("model_sha256", "runtime_version", "driver", "device", "settings")


@dataclass(frozen=True)
class Point:
    """One result of a series."""

    key: str  # what the series' owner calls it (a job id)
    samples_ms: tuple[float, ...]  # the warm runs (a phone's aggregates: its mean, n times, see ``from_aggregate``)
    clean: bool = True  # False: noisy, hot or throttled, never a baseline
    context: Mapping[str, Any] = field(default_factory=dict)
    operators_ms: Mapping[str, float] = field(default_factory=dict)  # operator name -> central time

    def __post_init__(self) -> None:
        if not self.samples_ms:
            raise ValueError(f"point {self.key!r} has no samples")
        if not all(math.isfinite(s) and s > 0 for s in self.samples_ms):
            raise ValueError(f"point {self.key!r}: samples must be finite and positive")

    @functools.cached_property
    def central_ms(self) -> float:
        """The median of the samples."""
        return float(np.median(self.samples_ms))


def context_changes(before: Point, after: Point) -> dict[str, tuple[Any, Any]]:
    """What differs in the context of two points: ``{key: (before, after)}``, in ``CONTEXT_KEYS``
    order, then any other key."""
    keys = [k for k in CONTEXT_KEYS if k in before.context or k in after.context]
    keys += sorted((set(before.context) | set(after.context)) - set(CONTEXT_KEYS))
    return {
        k: (before.context.get(k), after.context.get(k)) for k in keys if before.context.get(k) != after.context.get(k)
    }


def log_levels(points: Sequence[Point]) -> np.ndarray:
    """The natural log of each point's central value (a level shift is a constant step in it)."""
    return np.log(np.array([p.central_ms for p in points], dtype=np.float64))


def robust_sigma(values: np.ndarray) -> float:
    """A standard deviation that a few wild values do not move: 1.4826 x the median absolute
    deviation (the normal's std for normal data)."""
    if values.size < 2:
        return 0.0
    return float(1.4826 * np.median(np.abs(values - np.median(values))))


def point_from_result(key: str, result: ProfileResult) -> Point:
    """A backend's result as a point: its warm samples (a phone's mean where it reports
    aggregates only), clean unless noisy or flagged (hot, throttled), its context and operators."""
    from devicelab.measure.stats import central

    env = result.environment
    samples = tuple(result.samples_ms) or (central(result.e2e),)
    operators = {t.name: central(t.stats) for t in result.ops if t.stats is not None}
    context = {
        "model_sha256": env.get("model_sha256"),
        "runtime_version": env.get("runtime_version") or env.get("tool_version"),
        "driver": result.device.hardware.get("driver"),
        "device": result.device.identity,
        "settings": result.settings.as_dict(),
    }
    return Point(key, samples, clean=not result.e2e.noisy and not result.flags, context=context, operators_ms=operators)
