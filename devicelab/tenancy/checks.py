"""Sharing must not change anyone's numbers: each tenant's outputs against its exclusive run.

Where a strategy runs the exclusive run's own kernel on the tenant's data (SGEMM: exclusive,
time-only, space-only, space-time with either batch kernel; networks: time-only, space-only) its
outputs must be the same **bit for bit**. Where another kernel computes them (CLBlast; the
batched GEMM layers of a network's space-time; the batch-R network of exclusive batched) they
must agree within a tolerance: for SGEMM, every element within the fp32 accumulation bound of
numpy's float64 product (``gemm.error_bound``); for networks, the largest difference within
``NETWORK_TOLERANCE`` of the largest reference value (the backend's own tolerance against
onnxruntime).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from devicelab.tenancy.gemm import check_against_numpy

NETWORK_TOLERANCE = 1e-3
MAX_NUMPY_CHECKS = 8  # tenants checked against numpy per row (spread over R); float64 products are slow


def _bitwise(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint8), b.view(np.uint8))


def _relative(got: np.ndarray, want: np.ndarray) -> float:
    if got.shape != want.shape:
        return float("inf")
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-30)
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    return float(np.max(diff)) / scale if diff.size else 0.0


def compare_bitwise(got: Sequence[np.ndarray], want: Sequence[np.ndarray]) -> dict[str, Any]:
    """Every tenant's outputs the same bits as its reference."""
    if len(got) != len(want):
        return {"correct": False, "bitwise": False, "note": f"{len(got)} outputs for {len(want)} tenants"}
    differ = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if not _bitwise(g, w)]
    worst = max((_relative(got[i], want[i]) for i in differ), default=0.0)
    return {
        "against": "exclusive",
        "rule": "bitwise",
        "correct": not differ,
        "bitwise": not differ,
        "tenants_checked": len(want),
        "tenants_differing": differ[:16],
        "max_relative_error": worst,
    }


def compare_within(
    got: Sequence[np.ndarray], want: Sequence[np.ndarray], tolerance: float, against: str
) -> dict[str, Any]:
    """Every tenant's outputs within ``tolerance`` relative to the largest reference value."""
    if len(got) != len(want):
        return {"correct": False, "bitwise": False, "note": f"{len(got)} outputs for {len(want)} tenants"}
    errors = [_relative(g, w) for g, w in zip(got, want, strict=True)]
    worst = max(errors, default=0.0)
    return {
        "against": against,
        "rule": f"relative error <= {tolerance:g}",
        "correct": bool(np.isfinite(worst) and worst <= tolerance),
        "bitwise": all(_bitwise(g, w) for g, w in zip(got, want, strict=True)),
        "tenants_checked": len(want),
        "max_relative_error": worst,
    }


def spread(count: int, most: int = MAX_NUMPY_CHECKS) -> list[int]:
    """Up to ``most`` indices spread evenly over ``range(count)``, first and last included."""
    if count <= most:
        return list(range(count))
    return sorted({round(i * (count - 1) / (most - 1)) for i in range(most)})


def compare_with_numpy(
    got: Sequence[np.ndarray], operands: Sequence[tuple[np.ndarray, np.ndarray]], exclusive: Sequence[np.ndarray] | None
) -> dict[str, Any]:
    """SGEMM results against numpy's float64 product of each tenant's operands, element by element
    within the accumulation bound (on up to ``MAX_NUMPY_CHECKS`` tenants), and whether they
    happen to equal the exclusive run's bits."""
    picked = spread(len(got))
    checks = [check_against_numpy(operands[i][0], operands[i][1], got[i]) for i in picked]
    out: dict[str, Any] = {
        "against": "numpy float64",
        "rule": "every element within 2 gamma_K (|A||B|)",
        "correct": all(c.correct for c in checks),
        "tenants_checked": len(picked),
        "max_relative_error": max((c.max_relative_error for c in checks), default=0.0),
        "worst_bound_fraction": max((c.worst_bound_fraction for c in checks), default=0.0),
    }
    if exclusive is not None:
        out["bitwise"] = len(got) == len(exclusive) and all(_bitwise(g, w) for g, w in zip(got, exclusive, strict=True))
    return out


__all__ = ["MAX_NUMPY_CHECKS", "NETWORK_TOLERANCE", "compare_bitwise", "compare_with_numpy", "compare_within", "spread"]
