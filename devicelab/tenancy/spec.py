"""What a sharing sweep takes, declared once (``devicelab.spec``): ``SharingSpec`` with the names
it chooses from (the strategies) and its bounds.

The API's request body (``server.tenancy.api.requests``) and ``latencylab sharing sweep``'s flags
are derived from this declaration. This module imports nothing heavy (no numpy, no pyopencl): the
command line builds its parser from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devicelab import spec as declared
from devicelab.backends.profile_settings import MAX_RUNS, MAX_WARMUP_RUNS
from devicelab.spec import MAX_SEED, Items, setting

PAPER_SHAPES: tuple[tuple[int, int, int], ...] = ((512, 1, 512), (256, 128, 1152), (256, 256, 256))
DEFAULT_TENANTS: tuple[int, ...] = (1, 2, 4, 8, 10, 16, 20, 32, 64, 120)
# The SGEMM strategies (devicelab.tenancy.gemm_strategies), then the networks' own
# (network_strategies); tests/devicelab/tenancy/test_spec.py checks they agree.
STRATEGIES: tuple[str, ...] = (
    "exclusive",
    "exclusive_batched",
    "time_only",
    "space_only",
    "space_time",
    "space_time_vbatched",
    "space_time_clblast",
    "space_time_native",
)
DEFAULT_STRATEGIES: tuple[str, ...] = tuple(s for s in STRATEGIES if s != "space_time_clblast")
MAX_TENANTS = 4096
# An SGEMM dimension: a bound well past the paper's largest (1152). At 8192 one fp32 operand is
# already 256 MiB, and the host's float64 check of a tenant's output against numpy 512 MiB.
MAX_DIMENSION = 8192
MAX_SHAPES = 16
MAX_TENANT_COUNTS = 64  # R values in one sweep: the paper's are 10
MAX_MEMORY_CAP_BYTES = 2**62


@dataclass(frozen=True)
class SharingSpec:
    """What a sharing sweep measures (plain data, so a job can store it); each field declared once,
    with its bounds and help, for the API's request body too (``devicelab.spec``)."""

    shapes: tuple[tuple[int, int, int], ...] = setting(
        PAPER_SHAPES,
        items=Items(items=Items(ge=1, le=MAX_DIMENSION)),
        max_items=MAX_SHAPES,
        unique=True,
        flag="--shape",
        help="SGEMM shapes [m, n, k] (default: the paper's three, [[512, 1, 512], [256, 128, 1152], "
        "[256, 256, 256]]); [] with networks: networks only.",
    )
    # zoo names, or the names of graphs handed to the sweep (the server takes zoo names only)
    networks: tuple[str, ...] = setting(
        (),
        unique=True,
        help="Zoo networks every tenant runs one inference of (resnet18, mobilenet_v2, ...; default none).",
    )
    tenants: tuple[int, ...] = setting(
        DEFAULT_TENANTS,
        items=Items(ge=1, le=MAX_TENANTS),
        min_items=1,
        max_items=MAX_TENANT_COUNTS,
        unique=True,
        help="The R values: how many tenants share the device (default [1, 2, 4, 8, 10, 16, 20, 32, 64, 120]).",
    )
    strategies: tuple[str, ...] = setting(
        DEFAULT_STRATEGIES,
        items=Items(choices=STRATEGIES),
        min_items=1,
        unique=True,
        help="How the tenants share the device. Default: all but space_time_clblast (CLBlast's batched GEMM, "
        "optional on the worker).",
    )
    warmup: int = setting(3, ge=0, le=MAX_WARMUP_RUNS, help="Rounds dropped per (workload, R).")
    runs: int = setting(20, ge=1, le=MAX_RUNS, help="Rounds kept per (workload, R).")
    seed: int = setting(0, ge=0, le=MAX_SEED, help="Seeds every tenant's data.")
    memory_cap_bytes: int | None = setting(
        None,
        ge=1,
        le=MAX_MEMORY_CAP_BYTES,
        flag="--memory-cap-mb",
        help="A memory budget below the device's global memory (default null: the device's); a strategy whose "
        "footprint is over it is a memory_bound row.",
    )
    ceiling: bool = setting(True, help="Measure numpy's SGEMM on the worker's cores beside (a few seconds).")

    def __post_init__(self) -> None:
        declared.check(self)
        if not self.shapes and not self.networks:
            raise ValueError("a sharing sweep needs at least one SGEMM shape or network")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return declared.as_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SharingSpec:
        """The spec ``as_dict`` wrote (keys left out take their defaults, unknown keys refused);
        ``ValueError`` naming what is wrong (``devicelab.spec.SpecError`` for one field)."""
        return declared.from_dict(cls, data, "spec")


__all__ = [
    "DEFAULT_STRATEGIES",
    "DEFAULT_TENANTS",
    "MAX_DIMENSION",
    "MAX_MEMORY_CAP_BYTES",
    "MAX_SHAPES",
    "MAX_TENANTS",
    "MAX_TENANT_COUNTS",
    "PAPER_SHAPES",
    "STRATEGIES",
    "SharingSpec",
]
