"""Training ranges, and the warnings a prediction carries when it leaves them.

A per-kernel model (a tree ensemble above all) knows nothing beyond the feature values it was
trained on: a GBDT returns the latency of the largest convolution it saw for one ten times
bigger, and a Lasso extrapolates a line through a region it never measured. So a predictor
stores, per kernel type with a model of its own, the smallest and largest value of each of the
type's Table 3 features over its training kernels (``FeatureRange``), and each prediction says
which of its kernels lie outside them (``outside_training_range``), which were priced by another
type's model (``stand_in``: a type seen in too few training networks, or never), and, for a
predictor trained before ranges were recorded, that its range is unknown
(``training_range_unknown``).

Warnings are grouped per network: one per kernel type, with how many of the network's kernels it
concerns and, per feature outside the range, the farthest value, so a network of forty
oversized convolutions gets one warning, not forty. Kernel kinds whose time the training data
left in the overhead (the qed data's element-wise kernels) are no stand-in and get none: every
training network had them, and their cost is in ``T_overhead`` by design.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from devicelab.predict.errors import PredictorError

OUTSIDE = "outside_training_range"
STAND_IN = "stand_in"
RANGE_UNKNOWN = "training_range_unknown"
OPAQUE_OPERATORS = "opaque_operators"  # operators outside the graph IR: no kernel predicted for them
CODES = (OUTSIDE, STAND_IN, RANGE_UNKNOWN, OPAQUE_OPERATORS)


@dataclass(frozen=True)
class FeatureRange:
    """The smallest and largest value of each feature a kernel type's model was trained on."""

    low: tuple[float, ...]
    high: tuple[float, ...]

    @classmethod
    def of(cls, x: np.ndarray) -> FeatureRange:
        """The range of a training matrix (rows: kernels, columns: the group's features)."""
        if x.ndim != 2 or x.shape[0] == 0:
            raise PredictorError(f"a training range needs a non-empty matrix of kernels, got shape {x.shape}")
        return cls(tuple(float(v) for v in x.min(axis=0)), tuple(float(v) for v in x.max(axis=0)))

    def to_dict(self) -> dict[str, list[float]]:
        """Plain data for the artifact."""
        return {"low": list(self.low), "high": list(self.high)}

    @classmethod
    def from_dict(cls, d: Any, features: int, where: str) -> FeatureRange:
        """From ``to_dict`` data of a type with ``features`` features; ``PredictorError`` saying
        what is wrong (``where`` names the kernel type)."""
        if not isinstance(d, dict) or not isinstance(d.get("low"), list) or not isinstance(d.get("high"), list):
            raise PredictorError(f"training range of {where}: expected {{'low': [...], 'high': [...]}}")
        low, high = d["low"], d["high"]
        if len(low) != features or len(high) != features:
            raise PredictorError(
                f"training range of {where}: {len(low)} / {len(high)} values for a model of {features} features"
            )
        values = [*low, *high]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise PredictorError(f"training range of {where}: values must be finite numbers")
        if any(lo > hi for lo, hi in zip(low, high)):
            raise PredictorError(f"training range of {where}: a low end is above its high end")
        return cls(tuple(float(v) for v in low), tuple(float(v) for v in high))


@dataclass(frozen=True)
class FeatureOutside:
    """One feature of some kernels outside their model's training range."""

    feature: str
    value: float  # the farthest value outside the range
    train_min: float
    train_max: float

    @property
    def factor(self) -> float | None:
        """How far outside, as a ratio >= 1: the value over the largest trained value, or the
        smallest trained value over the value (None where that ratio has no meaning: a bound or
        value of 0 or below)."""
        if self.value > self.train_max:
            return self.value / self.train_max if self.train_max > 0 else None
        return self.train_min / self.value if self.value > 0 and self.train_min > 0 else None

    def text(self) -> str:
        """E.g. ``flops up to 4.1e+09 (trained on 1.2e+06..8.8e+08)``."""
        how = "up to" if self.value > self.train_max else "down to"
        return f"{self.feature} {how} {_num(self.value)} (trained on {_num(self.train_min)}..{_num(self.train_max)})"

    def to_data(self) -> dict[str, Any]:
        """Plain data."""
        return {"feature": self.feature, "value": self.value, "train_min": self.train_min, "train_max": self.train_max}

    def to_dict(self) -> dict[str, Any]:
        """What the API answers: the data, which side of the range, and how far outside it
        (``distance``: from the nearest end; ``factor``: as a ratio)."""
        above = self.value > self.train_max
        distance = self.value - self.train_max if above else self.train_min - self.value
        return {**self.to_data(), "side": "above" if above else "below", "distance": distance, "factor": self.factor}


@dataclass(frozen=True)
class PredictionWarning:
    """Why one network's prediction is less certain than the predictor's test MAPE says."""

    code: str  # one of CODES
    kernel_type: str = ""  # the kernels' type ("" for training_range_unknown)
    kernels: int = 0  # how many of the network's kernels it concerns
    model: str = ""  # the kernel type whose model priced them
    outside: tuple[FeatureOutside, ...] = ()  # outside_training_range: the features outside, farthest values
    train_networks: int | None = None  # stand_in: training networks that ran this type (0: never; None: unknown)
    # the predicted time of the kernels it concerns (ms, kernel sum before the overhead model):
    # the effect on this prediction, which no other network shares, so it is no part of a
    # warning's identity (a lookup table stores each distinct warning once)
    kernels_ms: float | None = field(default=None, compare=False)

    def message(self) -> str:
        """One sentence a person reads."""
        if self.code == RANGE_UNKNOWN:
            return (
                "training range unknown: this predictor was trained before training ranges were recorded, "
                "so no kernel is checked against it (train a new version to get range warnings)"
            )
        if self.code == OPAQUE_OPERATORS:
            return (
                f"{self.kernels} operator(s) outside the graph IR ({self.kernel_type}) have no kernel "
                "prediction: their time is not in this prediction"
            )
        if self.code == STAND_IN:
            if self.train_networks is None:
                seen = "too rare in training for a model of its own"
            elif self.train_networks == 0:
                seen = "never seen in training"
            else:
                seen = f"seen in only {self.train_networks} training network(s), too few for a model of its own"
            return f"{self.kernels} {self.kernel_type} kernel(s): {seen}; the {self.model} model predicts them"
        whose = "its" if self.model == self.kernel_type else f"the {self.model}"
        features = "; ".join(f.text() for f in self.outside)
        return f"{self.kernels} {self.kernel_type} kernel(s) outside {whose} model's training range: {features}"

    def to_data(self) -> dict[str, Any]:
        """The fields as plain data (stored with a lookup table)."""
        return {
            "code": self.code,
            "kernel_type": self.kernel_type,
            "kernels": self.kernels,
            "model": self.model,
            "outside": [f.to_data() for f in self.outside],
            "train_networks": self.train_networks,
        }

    @classmethod
    def from_data(cls, d: dict[str, Any]) -> PredictionWarning:
        """From ``to_data``."""
        if d["code"] not in CODES:
            raise ValueError(f"unknown warning code {d['code']!r}")
        return cls(
            str(d["code"]),
            str(d["kernel_type"]),
            int(d["kernels"]),
            str(d["model"]),
            tuple(
                FeatureOutside(str(f["feature"]), float(f["value"]), float(f["train_min"]), float(f["train_max"]))
                for f in d["outside"]
            ),
            None if d["train_networks"] is None else int(d["train_networks"]),
        )

    def with_kernels_ms(self, kernels_ms: float) -> PredictionWarning:
        """The same warning with the predicted time of the kernels it concerns."""
        return replace(self, kernels_ms=kernels_ms)

    def to_dict(self, latency_ms: float | None = None) -> dict[str, Any]:
        """What the API answers: the fields, the message, and (given the prediction's end-to-end
        ``latency_ms``) ``share``: the part of the predicted latency the concerned kernels take."""
        out = {**self.to_data(), "message": self.message()}
        out["outside"] = [f.to_dict() for f in self.outside]
        out["kernels_ms"] = self.kernels_ms
        out["share"] = warning_share(self.kernels_ms, latency_ms)
        return out


def warning_share(kernels_ms: float | None, latency_ms: float | None) -> float | None:
    """The share of a predicted end-to-end latency that a warning's kernels take (at most 1;
    None when either is unknown or the latency is not positive)."""
    if kernels_ms is None or latency_ms is None or latency_ms <= 0:
        return None
    return min(1.0, max(0.0, kernels_ms / latency_ms))


def _num(v: float) -> str:
    return f"{v:.3g}"


def outside_warnings(
    kernel_type: str,
    model: str,
    features: Sequence[str],
    x: np.ndarray,
    owners: np.ndarray,
    rng: FeatureRange,
    latency: np.ndarray | None = None,
) -> list[tuple[int, PredictionWarning]]:
    """(network, warning) for the kernels of one type (rows of ``x``, network ``owners[i]``) with
    a feature outside ``rng``: one warning per network, with each feature's farthest value and,
    given each row's predicted ``latency``, the predicted time of its kernels outside."""
    low = np.asarray(rng.low)
    high = np.asarray(rng.high)
    below = x < low
    above = x > high
    flagged = (below | above).any(axis=1)
    if not flagged.any():
        return []
    networks, counts = np.unique(owners[flagged], return_counts=True)
    spent: dict[int, float] = {}
    if latency is not None:
        sums = np.bincount(owners[flagged], weights=latency[flagged])
        spent = {int(n): float(sums[n]) for n in networks}
    found: dict[int, list[FeatureOutside]] = {}
    for j in np.flatnonzero(below.any(axis=0) | above.any(axis=0)):
        for is_above, mask in ((False, below[:, j]), (True, above[:, j])):
            if not mask.any():
                continue
            o = owners[mask]
            v = x[mask, j]
            order = np.argsort(o, kind="stable")
            o, v = o[order], v[order]
            starts = np.flatnonzero(np.r_[True, o[1:] != o[:-1]])
            farthest = (np.maximum if is_above else np.minimum).reduceat(v, starts)
            for n, e in zip(o[starts], farthest):
                found.setdefault(int(n), []).append(
                    FeatureOutside(features[int(j)], float(e), float(low[j]), float(high[j]))
                )
    return [
        (
            int(n),
            PredictionWarning(OUTSIDE, kernel_type, int(c), model, tuple(found[int(n)]), kernels_ms=spent.get(int(n))),
        )
        for n, c in zip(networks, counts)
    ]


__all__ = [
    "CODES",
    "OUTSIDE",
    "RANGE_UNKNOWN",
    "STAND_IN",
    "FeatureOutside",
    "FeatureRange",
    "PredictionWarning",
    "outside_warnings",
    "warning_share",
]
