"""Simulation scenarios: candidate models, SLA targets and network profiles; the paper's own among them.

The built-in scenario is seed 002's simulation (section 5.2.2, figure 13) as far as its text gives
it: table 5's eleven models with their top-1 accuracy and hot-start execution time (mean and std,
EC2 p2.xlarge, 1000 requests each), 330 KB requests, SLA targets across and beyond the range the
text discusses (< 30 ms to > 250 ms), the prototype's campus WiFi (63 ms, section 5.2.1) and
figure 10's three conditions. The paper states neither T_threshold nor its SLA grid; our choices
are below and in ``docs/selection.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.selection.cnnselect import DEFAULT_THRESHOLD_MS, ModelProfile, check_models
from devicelab.selection.network_profiles import (
    PAPER_REQUEST_BYTES,
    PAPER_RESPONSE_BYTES,
    PRESETS,
    NetworkProfile,
)


@dataclass(frozen=True)
class Table5Row:
    """One row of seed 002's table 5: accuracy (%) and inference time (ms, mean and std) hot and cold."""

    name: str
    top1: float
    top5: float
    hot_mu_ms: float
    hot_sigma_ms: float
    cold_mu_ms: float
    cold_sigma_ms: float


# Seed 002 table 5, as printed ("We measured the average inference time (with standard deviation)
# with/out startup latency for each model running on an EC2 p2.xlarge GPU server").
TABLE5: tuple[Table5Row, ...] = (
    Table5Row("SqueezeNet", 49.0, 72.9, 28.61, 1.13, 173.38, 25.73),
    Table5Row("MobileNetV1 0.25", 49.7, 74.1, 25.73, 1.22, 272.81, 45.00),
    Table5Row("MobileNetV1 0.5", 63.2, 84.9, 26.34, 1.19, 302.77, 45.50),
    Table5Row("DenseNet", 64.2, 85.6, 49.55, 3.21, 1149.04, 108.00),
    Table5Row("MobileNetV1 0.75", 68.3, 88.1, 28.02, 1.14, 351.92, 47.38),
    Table5Row("MobileNetV1 1.0", 71.8, 90.6, 28.15, 1.22, 421.23, 47.14),
    Table5Row("NasNet Mobile", 73.9, 91.5, 55.31, 4.09, 2817.25, 123.73),
    Table5Row("InceptionResNetV2", 77.5, 94.0, 76.30, 5.74, 2844.29, 106.49),
    Table5Row("InceptionV3", 77.9, 93.8, 55.75, 1.20, 1950.71, 101.21),
    Table5Row("InceptionV4", 80.1, 95.1, 82.78, 0.89, 3162.24, 133.99),
    Table5Row("NasNet Large", 82.6, 96.1, 112.61, 6.09, 7054.52, 238.36),
)

# T_threshold of the built-in scenario. The paper bounds it to [0, T_D] (T_D: on-device time,
# hundreds of ms for these models on its phones) and never states the value its simulation used.
# Ours: 20 ms, about three times the largest hot-start std in table 5 (NasNet Large, 6.09 ms),
# i.e. "the profiles may be off by a few standard deviations". The benchmark sweeps it.
PAPER_THRESHOLD_MS = DEFAULT_THRESHOLD_MS

# SLA targets: every 10 ms from 10 to 700 ms. Figure 13's discussion runs from < 30 ms to > 250 ms
# on a 63 ms network; figure 10's conditions (200-400 ms of network) need the longer end.
PAPER_SLA_TARGETS_MS: tuple[float, ...] = tuple(float(t) for t in range(10, 701, 10))
PAPER_PROFILES = ("prototype_wifi", "campus_wifi", "lte", "cellular_hotspot")


def paper_models(accuracy: str = "top1") -> tuple[ModelProfile, ...]:
    """Table 5's models as CNNSelect candidates (hot start: models are loaded, section 5)."""
    if accuracy not in ("top1", "top5"):
        raise ValueError(f"accuracy must be 'top1' or 'top5', got {accuracy!r}")
    return tuple(
        ModelProfile(r.name, r.top1 if accuracy == "top1" else r.top5, r.hot_mu_ms, r.hot_sigma_ms) for r in TABLE5
    )


@dataclass(frozen=True)
class Scenario:
    """What a simulation runs: candidate models, the SLA targets x network profiles grid, T_threshold
    and the request's size on the wire."""

    name: str
    models: tuple[ModelProfile, ...]
    sla_targets_ms: tuple[float, ...]
    profiles: tuple[NetworkProfile, ...]
    threshold_ms: float
    request_bytes: int = PAPER_REQUEST_BYTES
    response_bytes: int = PAPER_RESPONSE_BYTES
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a scenario needs a non-empty name, got {self.name!r}")
        object.__setattr__(self, "models", check_models(tuple(self.models)))
        object.__setattr__(self, "sla_targets_ms", check_sla_targets(self.sla_targets_ms))
        object.__setattr__(self, "profiles", check_profiles(self.profiles))
        thr = float(self.threshold_ms)
        if not math.isfinite(thr) or thr < 0:
            raise ValueError(f"threshold_ms must be finite and >= 0, got {self.threshold_ms!r}")
        object.__setattr__(self, "threshold_ms", thr)
        for label in ("request_bytes", "response_bytes"):
            v = getattr(self, label)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{label} must be a non-negative integer, got {v!r}")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "name": self.name,
            "models": [m.as_dict() for m in self.models],
            "sla_targets_ms": list(self.sla_targets_ms),
            "profiles": [p.as_dict() for p in self.profiles],
            "threshold_ms": self.threshold_ms,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Inverse of ``as_dict``."""
        try:
            return cls(
                name=data["name"],
                models=tuple(ModelProfile.from_dict(m) for m in data["models"]),
                sla_targets_ms=tuple(data["sla_targets_ms"]),
                profiles=tuple(NetworkProfile.from_dict(p) for p in data["profiles"]),
                threshold_ms=data["threshold_ms"],
                request_bytes=data.get("request_bytes", PAPER_REQUEST_BYTES),
                response_bytes=data.get("response_bytes", PAPER_RESPONSE_BYTES),
                source=str(data.get("source", "")),
            )
        except KeyError as missing:
            raise ValueError(f"a scenario needs the key {missing}") from None


def check_sla_targets(targets: Sequence[float]) -> tuple[float, ...]:
    """SLA targets as floats, or ValueError when empty, repeated, or not finite and > 0."""
    if isinstance(targets, str) or not isinstance(targets, Sequence) or len(targets) == 0:
        raise ValueError("sla_targets_ms must be a non-empty sequence of milliseconds")
    out = []
    for t in targets:
        try:
            v = float(t)
        except (TypeError, ValueError):
            raise ValueError(f"sla_targets_ms must hold numbers, got {t!r}") from None
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"every SLA target must be finite and > 0 ms, got {t!r}")
        out.append(v)
    if len(set(out)) != len(out):
        raise ValueError("sla_targets_ms holds a target twice")
    return tuple(out)


def check_profiles(profiles: Sequence[NetworkProfile | str]) -> tuple[NetworkProfile, ...]:
    """Network profiles (preset names resolved), or ValueError when empty, unknown or repeated."""
    if isinstance(profiles, str | NetworkProfile) or not isinstance(profiles, Sequence) or len(profiles) == 0:
        raise ValueError("profiles must be a non-empty sequence of NetworkProfile or preset names")
    out = []
    for p in profiles:
        if isinstance(p, str):
            out.append(NetworkProfile.preset(p))
        elif isinstance(p, NetworkProfile):
            out.append(p)
        else:
            raise ValueError(f"profiles must hold NetworkProfile or preset names, got {type(p).__name__}")
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        raise ValueError(f"network profile names must be unique, got {names}")
    return tuple(out)


def paper_scenario(threshold_ms: float = PAPER_THRESHOLD_MS) -> Scenario:
    """Seed 002's simulation: table 5's models, the SLA grid and the paper's network conditions."""
    return Scenario(
        name="ogden_guo_table5",
        models=paper_models(),
        sla_targets_ms=PAPER_SLA_TARGETS_MS,
        profiles=tuple(PRESETS[p] for p in PAPER_PROFILES),
        threshold_ms=threshold_ms,
        source="seed 002 (Ogden & Guo): table 5 models (top-1, hot start mean/std on p2.xlarge), section 5.2 "
        "(10,000 requests per SLA target and network profile), figure 10 and section 5.2.1 networks; "
        f"T_threshold {threshold_ms:g} ms and the SLA grid are ours",
    )


def synthetic_scenario(seed: int, *, sla_points: int = 40) -> Scenario:
    """A seeded random scenario for judging a policy beyond table 5: 4-10 models whose accuracy grows
    with their mean time (45-83 %, 3-400 ms, cv 2-35 %, a third with skewed measured samples), two
    network profiles of random latency, throughput and spread, requests of 20-500 KB and responses
    of 1-300 KB, and ``sla_points`` SLA targets spanning the fastest to the slowest end to end."""
    rng = np.random.default_rng([20261207, seed])
    k = int(rng.integers(4, 11))
    mu = np.sort(np.exp(rng.uniform(np.log(3.0), np.log(400.0), k)))
    # Accuracy grows with time on the whole (bigger models), with noise: some slower models are
    # less accurate, the dominated models the lab's reading must never draw.
    acc = np.clip(np.sort(rng.uniform(45.0, 83.0, k)) + rng.normal(0.0, 3.0, k), 1.0, 100.0)
    models = []
    for j in range(k):
        cv = float(rng.uniform(0.02, 0.35))
        if rng.random() < 1 / 3:
            # Measured-looking samples: lognormal, a long right tail (the phone's slow runs).
            s = float(np.sqrt(np.log(1 + cv**2)))
            samples = mu[j] * np.exp(rng.normal(-s * s / 2, s, 60))
            models.append(ModelProfile.from_samples(f"m{j}", round(float(acc[j]), 1), samples.tolist()))
        else:
            models.append(ModelProfile(f"m{j}", round(float(acc[j]), 1), float(mu[j]), float(mu[j]) * cv))
    profiles = tuple(
        NetworkProfile.user(
            f"net{i}",
            latency_ms=float(np.exp(rng.uniform(np.log(5.0), np.log(150.0)))),
            throughput_mbps=float(np.exp(rng.uniform(np.log(2.0), np.log(100.0)))),
            cv=float(rng.uniform(0.05, 0.5)),
            source=f"synthetic seed {seed}",
        )
        for i in range(2)
    )
    request_bytes = int(rng.integers(20_000, 500_001))
    response_bytes = int(np.exp(rng.uniform(np.log(1_000), np.log(300_000))))
    slowest = max(p.transfer_ms(request_bytes) + p.transfer_ms(response_bytes) for p in profiles)
    top = 1.5 * (slowest + float(mu[-1]) * 1.5)
    slas = np.unique(np.round(np.linspace(top / sla_points, top, sla_points), 1))
    return Scenario(
        name=f"synthetic_{seed}",
        models=tuple(models),
        sla_targets_ms=tuple(float(t) for t in slas),
        profiles=profiles,
        threshold_ms=DEFAULT_THRESHOLD_MS,
        request_bytes=request_bytes,
        response_bytes=response_bytes,
        source=f"devicelab.selection.scenarios.synthetic_scenario({seed})",
    )
