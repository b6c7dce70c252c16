"""Seeded Poisson arrival traces: when each tenant's inference requests arrive, and the latency
target each request must meet (issue 21 item 6; seed 003, section 2: "queries often arriving
stochastically").

A trace is plain data (``ArrivalTrace.as_dict`` / ``from_dict``): the online scheduler
(``devicelab.tenancy.online``) replays the very same trace for every policy, so their attainment
and throughput are compared on the same requests.

Tenant r's arrivals are a Poisson process of its own rate: exponential inter-arrival times with
mean ``1 / rate`` drawn from the tenant's own stream ``numpy.random.default_rng([seed, r])``. The
same seed gives the same trace, and adding a tenant does not move the arrivals of the others.
Each request carries its latency target: the tenant's ``target_ms``, or, when the tenant lists
``targets_ms``, one of those drawn uniformly per request (from the stream ``[seed, r, 1]``), so
targets can be per tenant or per request. Nothing here needs a device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

MAX_REQUESTS = 1_000_000  # a trace is replayed in real time and kept in memory


@dataclass(frozen=True)
class TenantLoad:
    """One tenant's offered load: its request rate and the latency target of its requests."""

    rate_per_s: float
    target_ms: float
    targets_ms: tuple[float, ...] = ()  # when given, each request's target is drawn from these

    def validate(self) -> None:
        """``ValueError`` naming what is wrong."""
        if not (math.isfinite(self.rate_per_s) and self.rate_per_s > 0):
            raise ValueError(f"a tenant's request rate must be positive, not {self.rate_per_s!r}")
        for t in (self.target_ms, *self.targets_ms):
            if not (math.isfinite(t) and t > 0):
                raise ValueError(f"a latency target must be a positive number of ms, not {t!r}")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {"rate_per_s": self.rate_per_s, "target_ms": self.target_ms, "targets_ms": list(self.targets_ms)}


@dataclass(frozen=True)
class Request:
    """One inference request: its tenant, when it arrives (s after the trace starts) and its target."""

    id: int
    tenant: int
    arrival_s: float
    target_ms: float

    @property
    def deadline_s(self) -> float:
        """When its result must be back (s after the trace starts)."""
        return self.arrival_s + self.target_ms / 1e3


@dataclass(frozen=True)
class ArrivalTrace:
    """Every request of every tenant, ordered by arrival (ids 0, 1, ... in that order)."""

    seed: int
    loads: tuple[TenantLoad, ...]
    duration_s: float  # requests arrive in [0, duration_s)
    requests: tuple[Request, ...] = field(repr=False)

    @property
    def tenants(self) -> int:
        """R, the number of tenants (some may have no request in a short trace)."""
        return len(self.loads)

    @property
    def offered_per_s(self) -> float:
        """The requests per second the tenants' rates add up to."""
        return sum(load.rate_per_s for load in self.loads)

    def of_tenant(self, tenant: int) -> list[Request]:
        """Tenant ``tenant``'s requests, in arrival order."""
        return [r for r in self.requests if r.tenant == tenant]

    def inter_arrivals_s(self, tenant: int) -> np.ndarray:
        """The gaps between a tenant's arrivals (the first measured from 0)."""
        times = np.array([r.arrival_s for r in self.of_tenant(tenant)], dtype=np.float64)
        return np.diff(times, prepend=0.0)

    def validate(self) -> None:
        """``ValueError`` when the requests are not a trace of these tenants."""
        if not self.loads:
            raise ValueError("a trace needs at least one tenant")
        for load in self.loads:
            load.validate()
        last = 0.0
        for i, r in enumerate(self.requests):
            if r.id != i:
                raise ValueError(f"request ids must be 0, 1, ... in arrival order; request {i} has id {r.id}")
            if not 0 <= r.tenant < self.tenants:
                raise ValueError(f"request {r.id} is for tenant {r.tenant}; the trace has {self.tenants}")
            if not (math.isfinite(r.arrival_s) and last <= r.arrival_s):
                raise ValueError(f"request {r.id} arrives at {r.arrival_s!r} s, before the one ahead of it")
            if not (math.isfinite(r.target_ms) and r.target_ms > 0):
                raise ValueError(f"request {r.id} has target {r.target_ms!r} ms; targets are positive")
            last = r.arrival_s
        if len(self.requests) > MAX_REQUESTS:
            raise ValueError(f"a trace holds at most {MAX_REQUESTS} requests, not {len(self.requests)}")

    def summary(self) -> dict[str, Any]:
        """Counts and rates, without the requests."""
        counts = [0] * self.tenants
        for r in self.requests:
            counts[r.tenant] += 1
        return {
            "seed": self.seed,
            "tenants": self.tenants,
            "duration_s": self.duration_s,
            "requests": len(self.requests),
            "requests_per_tenant": counts,
            "offered_per_s": self.offered_per_s,
            "arrived_per_s": len(self.requests) / self.duration_s if self.duration_s > 0 else None,
        }

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data: the loads and every request as ``[tenant, arrival_s, target_ms]``."""
        return {
            "seed": self.seed,
            "duration_s": self.duration_s,
            "loads": [load.as_dict() for load in self.loads],
            "requests": [[r.tenant, r.arrival_s, r.target_ms] for r in self.requests],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArrivalTrace:
        """The trace ``as_dict`` wrote (checked)."""
        loads = tuple(
            TenantLoad(float(d["rate_per_s"]), float(d["target_ms"]), tuple(float(t) for t in d.get("targets_ms", ())))
            for d in data["loads"]
        )
        requests = tuple(
            Request(i, int(tenant), float(arrival), float(target))
            for i, (tenant, arrival, target) in enumerate(data["requests"])
        )
        trace = cls(int(data["seed"]), loads, float(data["duration_s"]), requests)
        trace.validate()
        return trace


def _tenant_arrivals(
    load: TenantLoad, seed: int, tenant: int, duration_s: float | None, count: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """One tenant's arrival times and targets: exponential gaps until ``duration_s`` or ``count``."""
    rng = np.random.default_rng([seed, tenant])
    mean_gap = 1.0 / load.rate_per_s
    if count is not None:
        times = np.cumsum(rng.exponential(mean_gap, count))
    else:
        assert duration_s is not None
        chunks: list[np.ndarray] = []
        t = 0.0
        block = max(16, int(load.rate_per_s * duration_s * 1.2) + 16)
        while t < duration_s:
            gaps = rng.exponential(mean_gap, block)
            chunk = t + np.cumsum(gaps)
            chunks.append(chunk)
            t = float(chunk[-1])
        times = np.concatenate(chunks)
        times = times[times < duration_s]
    if load.targets_ms:  # a stream of their own: the arrivals do not depend on whether targets vary
        pick = np.random.default_rng([seed, tenant, 1]).integers(0, len(load.targets_ms), len(times))
        targets = np.asarray(load.targets_ms, dtype=np.float64)[pick]
    else:
        targets = np.full(len(times), load.target_ms, dtype=np.float64)
    return times, targets


def poisson_trace(
    loads: Sequence[TenantLoad],
    *,
    seed: int = 0,
    duration_s: float | None = None,
    requests_per_tenant: int | None = None,
) -> ArrivalTrace:
    """A trace of Poisson arrivals per tenant (see the module docstring): for ``duration_s``
    seconds, or ``requests_per_tenant`` requests of every tenant (exactly one of the two)."""
    if (duration_s is None) == (requests_per_tenant is None):
        raise ValueError("give exactly one of duration_s and requests_per_tenant")
    if duration_s is not None and not (math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"a trace's duration must be positive, not {duration_s!r}")
    if requests_per_tenant is not None and requests_per_tenant < 1:
        raise ValueError(f"requests per tenant must be at least 1, not {requests_per_tenant!r}")
    if not loads:
        raise ValueError("a trace needs at least one tenant")
    for load in loads:
        load.validate()
    if duration_s is not None and duration_s * sum(x.rate_per_s for x in loads) > MAX_REQUESTS:
        raise ValueError(f"the rates and duration would make more than {MAX_REQUESTS} requests")
    rows: list[tuple[float, int, float]] = []
    for tenant, load in enumerate(loads):
        times, targets = _tenant_arrivals(load, seed, tenant, duration_s, requests_per_tenant)
        rows.extend(zip(times.tolist(), [tenant] * len(times), targets.tolist(), strict=True))
    rows.sort()
    requests = tuple(Request(i, tenant, t, target) for i, (t, tenant, target) in enumerate(rows))
    if duration_s is None:
        duration_s = rows[-1][0] if rows else 0.0
    trace = ArrivalTrace(seed, tuple(loads), float(duration_s), requests)
    trace.validate()
    return trace


def uniform_loads(
    tenants: int, total_rate_per_s: float, target_ms: float, targets_ms: Sequence[float] = ()
) -> tuple[TenantLoad, ...]:
    """``tenants`` tenants sharing ``total_rate_per_s`` equally, all with the same target(s)."""
    if tenants < 1:
        raise ValueError(f"at least one tenant, not {tenants}")
    return tuple(TenantLoad(total_rate_per_s / tenants, target_ms, tuple(targets_ms)) for _ in range(tenants))


__all__ = ["MAX_REQUESTS", "ArrivalTrace", "Request", "TenantLoad", "poisson_trace", "uniform_loads"]
