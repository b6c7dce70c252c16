"""Every SGEMM tenant's own data, from the sweep's seed: numpy only, so the ceiling's separate
process (``ceiling``) builds exactly the matrices the device strategies run without pyopencl."""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Sizes(Protocol):
    """An SGEMM's sizes (``gemm.GemmShape``, or any object with m, n and k)."""

    @property
    def m(self) -> int: ...
    @property
    def n(self) -> int: ...
    @property
    def k(self) -> int: ...


def tenant_matrices(shape: Sizes, seed: int, tenant: int) -> tuple[np.ndarray, np.ndarray]:
    """Tenant ``tenant``'s weights A (m x k) and input B (k x n): standard normal fp32 from
    ``(seed, tenant)``."""
    rng = np.random.default_rng([seed, tenant])
    a = rng.standard_normal((shape.m, shape.k), dtype=np.float32)
    b = rng.standard_normal((shape.k, shape.n), dtype=np.float32)
    return a, b


__all__ = ["Sizes", "tenant_matrices"]
