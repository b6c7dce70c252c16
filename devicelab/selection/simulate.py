"""The simulation of seed 002 section 5.2: seeded streams of requests over SLA targets x network
profiles, served by CNNSelect and the baselines it is compared with.

Each request has a real upload and download time, drawn from the network profile (one factor for
both: same network, same moment), and a real execution time per candidate model, drawn from the
model's stored samples where it has them, else from a normal with its mu and sigma truncated to
> 0. A policy sees what it would see in a server and picks a model; the request's end-to-end time
is upload + that model's execution + download, and the SLA is met when that is <= the target.

Policies:

* ``cnnselect``: section 5 as printed (``policy="paper"``) with T_input = the request's real upload
  time (the server sees when the request left and when it arrived) and the scenario's T_threshold.
* ``cnnselect_lab``: the same with the lab's reading (``policy="lab"``: dominated models dropped,
  T_E centred on T_L; ``devicelab.selection.cnnselect``).
* ``greedy``: the paper's "static greedy" baseline (section 5.2.2: "always chooses the most accurate
  CNN model for a given SLA", "greedy naively selects the most accurate model" while CNNSelect
  considers "both the SLA target and network transfer time"): the most accurate model whose mean
  fits the SLA itself; the fastest if none does.
* ``greedy_budget``: greedy on CNNSelect's budget, most accurate model whose mean fits
  T_sla - 2 T_input (not in the paper: shows how much of CNNSelect's gain is network awareness).
* ``fastest``: always the model with the lowest mean.
* ``oracle``: knows the request's real network time (upload + download) and picks the most
  accurate model whose mean fits the real remaining time; the fastest if none does.

The same seed gives the same requests to every policy and every SLA target of a profile (common
random numbers), so differences between policies are not noise between streams.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import numpy as np

from devicelab.selection.cnnselect import ModelProfile, check_models, fastest_index, round_trip_factor, select_batch
from devicelab.selection.network_profiles import PAPER_REQUEST_BYTES, PAPER_RESPONSE_BYTES, NetworkProfile
from devicelab.selection.scenarios import Scenario, check_profiles, check_sla_targets

POLICIES = ("cnnselect", "cnnselect_lab", "greedy", "greedy_budget", "fastest", "oracle")
DEFAULT_POLICIES = ("cnnselect", "cnnselect_lab", "greedy", "fastest", "oracle")


@dataclass(frozen=True)
class PointResult:
    """One policy at one SLA target under one network profile.

    ``effective_accuracy`` is the paper's accuracy: the mean accuracy of the chosen models over
    all requests, SLA misses included at their model's accuracy (figure 13(a) shows greedy with
    "up to 12% higher accuracy" at SLA targets where it misses). ``accuracy_within_sla`` counts
    a miss as 0 (a late answer is no answer).
    """

    policy: str
    sla_ms: float
    profile: str
    requests: int
    attainment: float  # fraction of requests with end-to-end <= SLA
    effective_accuracy: float  # %
    accuracy_within_sla: float  # %
    mean_e2e_ms: float
    p25_e2e_ms: float
    p50_e2e_ms: float
    p75_e2e_ms: float
    p99_e2e_ms: float
    mean_network_ms: float
    usage: dict[str, float]  # share of requests per model (every candidate, 0 included)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PointResult:
        """Inverse of ``as_dict``."""
        try:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__})
        except KeyError as missing:
            raise ValueError(f"a simulation point needs the key {missing}") from None


@dataclass(frozen=True)
class SimulationResult:
    """Every (policy, SLA target, profile) point of one simulation, with what it ran."""

    scenario: str
    models: tuple[ModelProfile, ...]
    profiles: tuple[NetworkProfile, ...]
    sla_targets_ms: tuple[float, ...]
    policies: tuple[str, ...]
    requests: int
    seed: int
    threshold_ms: float
    request_bytes: int
    response_bytes: int
    points: tuple[PointResult, ...]

    @cached_property
    def _index(self) -> dict[tuple[str, float, str], PointResult]:
        return {(p.policy, p.sla_ms, p.profile): p for p in self.points}

    def point(self, policy: str, sla_ms: float, profile: str) -> PointResult:
        """The point of ``policy`` at ``sla_ms`` under ``profile``."""
        try:
            return self._index[(policy, float(sla_ms), profile)]
        except KeyError:
            raise KeyError(f"no point ({policy}, {sla_ms}, {profile})") from None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "scenario": self.scenario,
            "models": [m.as_dict() for m in self.models],
            "profiles": [p.as_dict() for p in self.profiles],
            "sla_targets_ms": list(self.sla_targets_ms),
            "policies": list(self.policies),
            "requests": self.requests,
            "seed": self.seed,
            "threshold_ms": self.threshold_ms,
            "request_bytes": self.request_bytes,
            "response_bytes": self.response_bytes,
            "points": [p.as_dict() for p in self.points],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SimulationResult:
        """Inverse of ``as_dict``."""
        try:
            return cls(
                scenario=str(data["scenario"]),
                models=tuple(ModelProfile.from_dict(m) for m in data["models"]),
                profiles=tuple(NetworkProfile.from_dict(p) for p in data["profiles"]),
                sla_targets_ms=tuple(float(t) for t in data["sla_targets_ms"]),
                policies=tuple(data["policies"]),
                requests=int(data["requests"]),
                seed=int(data["seed"]),
                threshold_ms=float(data["threshold_ms"]),
                request_bytes=int(data["request_bytes"]),
                response_bytes=int(data["response_bytes"]),
                points=tuple(PointResult.from_dict(p) for p in data["points"]),
            )
        except KeyError as missing:
            raise ValueError(f"a simulation result needs the key {missing}") from None


@dataclass(frozen=True)
class PolicyComparison:
    """A policy against a baseline over a set of points (the paper's "88.5% more" is of this kind)."""

    policy: str
    baseline: str
    profiles: tuple[str, ...]
    sla_min_ms: float
    sla_max_ms: float
    points: int
    met: int  # requests that met their SLA, summed over the points
    baseline_met: int
    attainment_improvement_pct: float | None  # (met / baseline_met - 1) x 100; None if the baseline met none
    mean_attainment_gain_pp: float  # mean over points of the attainment difference, percentage points
    mean_accuracy_gain_pp: float  # same for effective accuracy
    max_latency_reduction_pct: float  # largest (1 - mean e2e / baseline's mean e2e) x 100 over the points

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _check_policies(policies: Sequence[str]) -> tuple[str, ...]:
    if isinstance(policies, str) or not isinstance(policies, Sequence) or len(policies) == 0:
        raise ValueError(f"policies must be a non-empty sequence drawn from {', '.join(POLICIES)}")
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise ValueError(f"unknown policies {unknown}; known: {', '.join(POLICIES)}")
    if len(set(policies)) != len(policies):
        raise ValueError("policies holds a policy twice")
    return tuple(policies)


def draw_execution_ms(models: Sequence[ModelProfile], size: int, rng: np.random.Generator) -> np.ndarray:
    """(size, K) execution times: resampled from each model's samples, else normal(mu, sigma) > 0."""
    out = np.empty((size, len(models)))
    for j, m in enumerate(models):
        if m.samples_ms:
            out[:, j] = rng.choice(np.asarray(m.samples_ms), size=size)
            continue
        col = rng.normal(m.mu_ms, m.sigma_ms, size=size)
        # Truncation at > 0 by redrawing: mu > 0, so each redraw succeeds with probability > 1/2.
        bad = col <= 0
        while bad.any():
            col[bad] = rng.normal(m.mu_ms, m.sigma_ms, size=int(bad.sum()))
            bad = col <= 0
        out[:, j] = col
    return out


def _most_accurate_fitting(models: Sequence[ModelProfile], limit: np.ndarray) -> np.ndarray:
    """Per request, the most accurate model whose mean is <= ``limit`` (ties: faster); the fastest if none."""
    mu = np.array([m.mu_ms for m in models])
    acc = np.array([m.accuracy for m in models])
    order = np.lexsort((np.arange(len(models)), mu, -acc))
    fits = (mu[None, :] <= limit[:, None])[:, order]
    return np.where(fits.any(axis=1), order[fits.argmax(axis=1)], fastest_index(models))


def _choose(
    policy: str,
    models: tuple[ModelProfile, ...],
    sla: float,
    upload: np.ndarray,
    network: np.ndarray,
    threshold: float,
    u: np.ndarray,
    download_ratio: float,
) -> np.ndarray:
    n = upload.shape[0]
    if policy == "cnnselect":
        t_upper = sla - 2.0 * upload
        return select_batch(models, t_upper, t_upper - threshold, "paper").draw(u)
    if policy == "cnnselect_lab":
        t_upper = sla - round_trip_factor("lab", download_ratio) * upload
        return select_batch(models, t_upper, t_upper - threshold, "lab").draw(u)
    if policy == "greedy":
        return _most_accurate_fitting(models, np.full(n, sla))
    if policy == "greedy_budget":
        return _most_accurate_fitting(models, sla - 2.0 * upload)
    if policy == "fastest":
        return np.full(n, fastest_index(models))
    if policy == "oracle":
        return _most_accurate_fitting(models, sla - network)
    raise ValueError(f"unknown policy {policy!r}")


def _measure(
    policy: str,
    sla: float,
    profile: str,
    models: tuple[ModelProfile, ...],
    chosen: np.ndarray,
    e2e: np.ndarray,
    network: np.ndarray,
) -> PointResult:
    acc = np.array([m.accuracy for m in models])[chosen]
    met = e2e <= sla
    q25, q50, q75, q99 = np.percentile(e2e, [25, 50, 75, 99])
    counts = np.bincount(chosen, minlength=len(models))
    n = len(e2e)
    return PointResult(
        policy=policy,
        sla_ms=sla,
        profile=profile,
        requests=n,
        attainment=float(met.mean()),
        effective_accuracy=float(acc.mean()),
        accuracy_within_sla=float(np.where(met, acc, 0.0).mean()),
        mean_e2e_ms=float(e2e.mean()),
        p25_e2e_ms=float(q25),
        p50_e2e_ms=float(q50),
        p75_e2e_ms=float(q75),
        p99_e2e_ms=float(q99),
        mean_network_ms=float(network.mean()),
        usage={m.name: float(c / n) for m, c in zip(models, counts, strict=True)},
    )


def simulate(
    scenario_or_models: Scenario | Sequence[ModelProfile],
    *,
    sla_targets_ms: Sequence[float] | None = None,
    profiles: Sequence[NetworkProfile | str] | None = None,
    requests: int = 10_000,
    seed: int = 0,
    policies: Sequence[str] = DEFAULT_POLICIES,
    threshold_ms: float | None = None,
    request_bytes: int | None = None,
    response_bytes: int | None = None,
) -> SimulationResult:
    """Serve ``requests`` seeded requests per (SLA target, profile) with every policy and measure them.

    Given a ``Scenario``, its SLA targets, profiles, T_threshold and sizes are the defaults;
    given a list of models, ``sla_targets_ms``, ``profiles`` and ``threshold_ms`` are required.
    Profiles may be preset names.
    """
    if isinstance(scenario_or_models, Scenario):
        sc = scenario_or_models
        scenario = Scenario(
            name=sc.name,
            models=sc.models,
            sla_targets_ms=sc.sla_targets_ms if sla_targets_ms is None else tuple(sla_targets_ms),
            profiles=sc.profiles if profiles is None else check_profiles(profiles),
            threshold_ms=sc.threshold_ms if threshold_ms is None else threshold_ms,
            request_bytes=sc.request_bytes if request_bytes is None else request_bytes,
            response_bytes=sc.response_bytes if response_bytes is None else response_bytes,
            source=sc.source,
        )
    else:
        if sla_targets_ms is None or profiles is None or threshold_ms is None:
            raise ValueError("simulating a list of models needs sla_targets_ms, profiles and threshold_ms")
        scenario = Scenario(
            name="custom",
            models=check_models(scenario_or_models),
            sla_targets_ms=check_sla_targets(sla_targets_ms),
            profiles=check_profiles(profiles),
            threshold_ms=threshold_ms,
            request_bytes=PAPER_REQUEST_BYTES if request_bytes is None else request_bytes,
            response_bytes=PAPER_RESPONSE_BYTES if response_bytes is None else response_bytes,
        )
    n = _check_int("requests", requests, 1)
    seed = _check_int("seed", seed, 0)
    chosen_policies = _check_policies(policies)
    models = scenario.models
    rows = np.arange(n)
    points: list[PointResult] = []
    for pi, profile in enumerate(scenario.profiles):
        # One stream per profile, shared by every SLA target and policy.
        gen = np.random.default_rng([seed, pi])
        upload, download = profile.sample_exchange_ms(scenario.request_bytes, scenario.response_bytes, n, gen)
        network = upload + download
        execution = draw_execution_ms(models, n, gen)
        # What the lab's reading knows of the network: the profile's mean download over upload time.
        up_ms = profile.transfer_ms(scenario.request_bytes)
        ratio = profile.transfer_ms(scenario.response_bytes) / up_ms if up_ms > 0 else 1.0
        for si, sla in enumerate(scenario.sla_targets_ms):
            u = np.random.default_rng([seed, pi, si]).random(n)  # CNNSelect's stage-3 draws
            for policy in chosen_policies:
                chosen = _choose(policy, models, sla, upload, network, scenario.threshold_ms, u, ratio)
                e2e = network + execution[rows, chosen]
                points.append(_measure(policy, sla, profile.name, models, chosen, e2e, network))
    return SimulationResult(
        scenario=scenario.name,
        models=models,
        profiles=scenario.profiles,
        sla_targets_ms=scenario.sla_targets_ms,
        policies=chosen_policies,
        requests=n,
        seed=seed,
        threshold_ms=scenario.threshold_ms,
        request_bytes=scenario.request_bytes,
        response_bytes=scenario.response_bytes,
        points=tuple(points),
    )


def compare_policies(
    result: SimulationResult,
    policy: str = "cnnselect",
    baseline: str = "greedy",
    *,
    profiles: Sequence[str] | None = None,
    sla_min_ms: float | None = None,
    sla_max_ms: float | None = None,
) -> PolicyComparison:
    """``policy`` against ``baseline`` over the points of ``profiles`` with SLA in [sla_min_ms, sla_max_ms].

    The attainment improvement pools the points: requests that met their SLA under ``policy``
    over those under ``baseline``, minus one.
    """
    for p in (policy, baseline):
        if p not in result.policies:
            raise ValueError(f"policy {p!r} is not in this result (it has {', '.join(result.policies)})")
    known = [p.name for p in result.profiles]
    names = tuple(known if profiles is None else profiles)
    unknown = [p for p in names if p not in known]
    if unknown or not names:
        raise ValueError(f"unknown or no profiles {unknown}; this result has {', '.join(known)}")
    lo = min(result.sla_targets_ms) if sla_min_ms is None else float(sla_min_ms)
    hi = max(result.sla_targets_ms) if sla_max_ms is None else float(sla_max_ms)
    slas = [t for t in result.sla_targets_ms if lo <= t <= hi]
    if not slas:
        raise ValueError(f"no SLA target of this result lies in [{lo}, {hi}] ms")
    pairs = [(result.point(policy, t, prof), result.point(baseline, t, prof)) for prof in names for t in slas]
    met = sum(round(a.attainment * a.requests) for a, _ in pairs)
    base_met = sum(round(b.attainment * b.requests) for _, b in pairs)
    return PolicyComparison(
        policy=policy,
        baseline=baseline,
        profiles=names,
        sla_min_ms=lo,
        sla_max_ms=hi,
        points=len(pairs),
        met=met,
        baseline_met=base_met,
        attainment_improvement_pct=(met / base_met - 1) * 100 if base_met else None,
        mean_attainment_gain_pp=float(np.mean([(a.attainment - b.attainment) * 100 for a, b in pairs])),
        mean_accuracy_gain_pp=float(np.mean([a.effective_accuracy - b.effective_accuracy for a, b in pairs])),
        max_latency_reduction_pct=float(max((1 - a.mean_e2e_ms / b.mean_e2e_ms) * 100 for a, b in pairs)),
    )


@dataclass(frozen=True)
class Shortfall:
    """A point where ``policy`` falls short of ``baseline``: attainment lower by more than noise, or
    accuracy within the SLA lower by more than the allowed points."""

    sla_ms: float
    profile: str
    attainment: float
    baseline_attainment: float
    accuracy_within_sla: float
    baseline_accuracy_within_sla: float

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return asdict(self)


def shortfalls(
    result: SimulationResult,
    policy: str = "cnnselect_lab",
    baseline: str = "greedy",
    *,
    accuracy_pp: float = 1.0,
) -> list[Shortfall]:
    """The points where ``policy`` neither beats nor ties ``baseline``'s SLA attainment, or keeps its
    accuracy within the SLA (a miss counts 0) less than ``accuracy_pp`` points from the baseline's.

    A tie is a difference within two binomial standard errors of the baseline's attainment
    (``2 sqrt(p (1 - p) / n)``): both run on the same requests, so a real shortfall is larger.
    """
    out = []
    for prof in result.profiles:
        for t in result.sla_targets_ms:
            a, b = result.point(policy, t, prof.name), result.point(baseline, t, prof.name)
            noise = 2 * float(np.sqrt(b.attainment * (1 - b.attainment) / b.requests))
            if a.attainment < b.attainment - noise or a.accuracy_within_sla < b.accuracy_within_sla - accuracy_pp:
                out.append(
                    Shortfall(t, prof.name, a.attainment, b.attainment, a.accuracy_within_sla, b.accuracy_within_sla)
                )
    return out
