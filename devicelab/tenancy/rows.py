"""One result row per (workload, R, strategy): raw samples, and the measures derived from them.

``SharingRow.as_dict`` is the stored form (plain JSON data, documented in docs/tenancy.md):

* ``workload``: ``{"kind": "sgemm" | "network", "name", "flops", ...}`` (flops of one request);
* ``tenants`` (R), ``strategy``, ``status`` (``ok``, ``memory_bound``, ``unsupported``,
  ``error``) and ``error`` (why, when not ok);
* ``served_per_step`` (requests a step serves: 1 for exclusive, R otherwise) and
  ``launches_per_step`` (kernel launches a step enqueues);
* ``makespan_ms`` and ``device_ms``: one sample per timed round (a step's wall time, and the span
  of its kernels on the device clock where the strategy owns the events), with statistics;
* ``throughput``: ``gflops`` and ``per_s`` (requests per second: SGEMMs or inferences) from the
  median makespan, and ``gflops_samples`` per round (paired across strategies by round);
* ``latency_ms``: per tenant its samples, p50 and p99; pooled p50 and p99 over all tenants;
* ``straggler``: the tenants with the lowest and highest p50 latency, the gap in ms and relative
  to the fastest (figure 4);
* ``memory``: the footprint and the budget (``MemoryBudget.as_dict``);
* ``checks``: outputs against each tenant's exclusive run (and numpy for SGEMM);
* ``network``: for network rows, which steps space-time batches;
* ``of_ceiling``: for SGEMM rows, the row's GFLOP/s over numpy's ceiling on the same tenants'
  operands, paired by round (``devicelab.measure.ratios.RatioEstimate``; None: no ceiling).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devicelab.measure.stats import summarize

STATUSES = ("ok", "memory_bound", "unsupported", "error")


def _percentile(samples: list[float], q: float) -> float:
    # SampleStats stops at p90; tail latency needs p99 (figure 3), from the same raw samples
    return float(np.percentile(np.asarray(samples, dtype=np.float64), q))


@dataclass
class SharingRow:
    """The raw outcome of one strategy at one R on one workload."""

    workload: dict[str, Any]
    tenants: int
    strategy: str
    status: str = "ok"
    error: str = ""
    served_per_step: int = 0
    launches_per_step: int = 0
    makespan_ms: list[float] = field(default_factory=list)
    device_ms: list[float] = field(default_factory=list)
    latencies_ms: list[list[float]] = field(default_factory=list)  # [tenant][round]
    memory: dict[str, Any] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    network: dict[str, Any] | None = None
    of_ceiling: dict[str, Any] | None = None  # RatioEstimate.as_dict() of the row over the ceiling

    def add(self, makespan_ms: float, latencies_ms: tuple[float, ...], device_ms: float | None) -> None:
        """Keep one timed round's sample."""
        if not self.latencies_ms:
            self.latencies_ms = [[] for _ in latencies_ms]
        self.makespan_ms.append(makespan_ms)
        for tenant, ms in zip(self.latencies_ms, latencies_ms, strict=True):
            tenant.append(ms)
        if device_ms is not None:
            self.device_ms.append(device_ms)

    def fail(self, status: str, error: str) -> None:
        """Mark the row as not measured (its samples dropped)."""
        self.status = status
        self.error = error
        self.makespan_ms.clear()
        self.device_ms.clear()
        self.latencies_ms.clear()

    def _throughput(self) -> dict[str, Any] | None:
        if not self.makespan_ms:
            return None
        flops = float(self.workload["flops"]) * self.served_per_step
        median_s = float(np.median(self.makespan_ms)) / 1e3
        return {
            "gflops": flops / median_s / 1e9 if median_s > 0 else None,
            "per_s": self.served_per_step / median_s if median_s > 0 else None,
            "gflops_samples": [flops / (ms / 1e3) / 1e9 if ms > 0 else None for ms in self.makespan_ms],
        }

    def _latency(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        if not self.latencies_ms or not self.latencies_ms[0]:
            return None, None
        p50 = [_percentile(s, 50) for s in self.latencies_ms]
        per = [
            {"tenant": i, "p50": p50[i], "p99": _percentile(s, 99), "samples": list(s)}
            for i, s in enumerate(self.latencies_ms)
        ]
        pooled = [ms for s in self.latencies_ms for ms in s]
        latency = {"p50": _percentile(pooled, 50), "p99": _percentile(pooled, 99), "per_tenant": per}
        fastest = int(np.argmin(p50))
        slowest = int(np.argmax(p50))
        gap = p50[slowest] - p50[fastest]
        straggler = {
            "fastest_tenant": fastest,
            "slowest_tenant": slowest,
            "fastest_p50_ms": p50[fastest],
            "slowest_p50_ms": p50[slowest],
            "gap_ms": gap,
            "gap_ratio": gap / p50[fastest] if p50[fastest] > 0 else None,
        }
        return latency, straggler

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data (see the module docstring)."""
        latency, straggler = self._latency()
        return {
            "workload": dict(self.workload),
            "tenants": self.tenants,
            "strategy": self.strategy,
            "status": self.status,
            "error": self.error,
            "served_per_step": self.served_per_step,
            "launches_per_step": self.launches_per_step,
            "makespan_ms": _samples(self.makespan_ms),
            "device_ms": _samples(self.device_ms) if len(self.device_ms) == len(self.makespan_ms) else None,
            "throughput": self._throughput(),
            "latency_ms": latency,
            "straggler": straggler,
            "memory": dict(self.memory),
            "checks": dict(self.checks),
            "network": self.network,
            "of_ceiling": self.of_ceiling,
        }


def _samples(samples: list[float]) -> dict[str, Any] | None:
    if not samples:
        return None
    return {"samples": list(samples), "stats": summarize(samples).as_dict()}


__all__ = ["STATUSES", "SharingRow"]
