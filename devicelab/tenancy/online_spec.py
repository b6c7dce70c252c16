"""What an online-scheduling run takes, declared once (``devicelab.spec``): ``OnlineSpec``.

One run replays one seeded Poisson arrival trace of R tenants on one workload under every policy
(``devicelab.tenancy.online``). Its load, latency target and space-time's window are stated in
units of ``t1``, one request of one tenant served alone, measured on the device first
(``online.request_service_ms``): load 1 is R tenants' arrivals adding up to the rate at which one
tenant alone could be served back to back. This module imports nothing heavy (no numpy, no
pyopencl), like ``tenancy.spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devicelab import spec as declared
from devicelab.spec import MAX_SEED, Items, setting
from devicelab.tenancy.spec import MAX_TENANTS

# online_policies.POLICIES, written out (that module imports pyopencl); tests check they agree
ONLINE_POLICIES: tuple[str, ...] = ("time_only", "space_only", "space_time", "space_time_native")
NETWORK_ONLY: tuple[str, ...] = ("space_time_native",)
MAX_DURATION_S = 600.0


@dataclass(frozen=True)
class OnlineSpec:
    """One online-scheduling run (plain data, so a job can store it); each field declared once."""

    workload: str = setting(
        "256x128x1152",
        help="An SGEMM shape MxNxK, or a zoo network every request runs one inference of (default 256x128x1152).",
    )
    tenants: int = setting(4, ge=1, le=MAX_TENANTS, help="R: how many tenants send requests.")
    load: float = setting(
        0.8,
        ge=0.01,
        le=100.0,
        help="Offered load in units of 1/t1 (t1: one request of one tenant served alone), shared by the R tenants.",
    )
    duration_s: float = setting(2.0, ge=0.1, le=MAX_DURATION_S, unit="s", help="Seconds of arrivals in the trace.")
    target_factor: float = setting(
        4.0, ge=0.1, le=1000.0, help="Every request's latency target, in units of t1 (default 4)."
    )
    window_factor: float = setting(
        1.0, ge=0.0, le=1000.0, help="Space-time's batching window in units of t1 (0: launch whatever is pending)."
    )
    policies: tuple[str, ...] = setting(
        (),
        items=Items(choices=ONLINE_POLICIES),
        unique=True,
        help="The policies replayed on the trace (default: every one the workload has).",
    )
    seed: int = setting(0, ge=0, le=MAX_SEED, help="Seeds the tenants' data and the trace.")

    def __post_init__(self) -> None:
        declared.check(self)
        if not self.is_sgemm and (not self.workload or "x" in self.workload.lower()):
            raise ValueError(f"workload is an SGEMM shape MxNxK or a zoo network name, not {self.workload!r}")
        if self.is_sgemm and set(self.policies) & set(NETWORK_ONLY):
            raise ValueError(f"{list(NETWORK_ONLY)} serve network workloads only, not the shape {self.workload}")

    @property
    def is_sgemm(self) -> bool:
        """Whether the workload is an SGEMM shape (``MxNxK``) rather than a network."""
        parts = self.workload.lower().split("x")
        return len(parts) == 3 and all(p.isdigit() and int(p) > 0 for p in parts)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return declared.as_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OnlineSpec:
        """The spec ``as_dict`` wrote (keys left out take their defaults, unknown keys refused)."""
        return declared.from_dict(cls, data, "spec")


__all__ = ["MAX_DURATION_S", "NETWORK_ONLY", "ONLINE_POLICIES", "OnlineSpec"]
