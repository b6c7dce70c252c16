"""SGEMM problems, their register tiles and launches of the batched kernels, and the check of a
result against numpy in float64.

Every launch is described by a ``GemmLaunch`` (a kernel object with its arguments set, and its
global and local sizes), so a strategy enqueues it on whatever queue it owns. A single tenant's
SGEMM is the strided batch kernel with one problem at that tenant's offsets: the per-tenant,
space-only and time-only launches and the space-time super-kernel then run the same
instructions on every element, so sharing cannot change a tenant's bits.

The accuracy bound (``error_bound``): each element is a dot product of length K accumulated in
fp32 with one fused multiply-add per term, so its rounding error is at most ``gamma_K *
sum_k |a_ik| |b_kj|`` with ``gamma_K = K u / (1 - K u)`` and ``u = 2**-24`` (Higham, *Accuracy
and Stability of Numerical Algorithms*, section 3.1; the inputs are fp32 values, exact in
float64). The check allows twice that per element (the bias add and the final rounding fit well
inside), against numpy's float64 product: a correct kernel never fails it, and a wrong index or
a lost term is off by orders of magnitude more.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.backends.opencl.limits import DeviceLimits
from devicelab.backends.opencl.tiling import choose_local_size
from devicelab.tenancy.programs import BUILDS, GEMM_SOURCE, KernelInfo

FLOAT_BYTES = 4
UNIT_ROUNDOFF = 2.0**-24
ACTIVATION_CODES = {"none": 0, "relu": 1, "relu6": 2}
MAX_VECTOR = 16


@dataclass(frozen=True)
class GemmShape:
    """One SGEMM problem: C (m x n) = A (m x k) x B (k x n), all row-major."""

    m: int
    n: int
    k: int

    def __post_init__(self) -> None:
        if min(self.m, self.n, self.k) < 1:
            raise ValueError(f"a GEMM needs positive sizes, not {self.m}x{self.n}x{self.k}")

    @property
    def name(self) -> str:
        """``MxNxK``, the way the paper's table 1 names its shapes."""
        return f"{self.m}x{self.n}x{self.k}"

    @property
    def flops(self) -> int:
        """Floating-point operations of one problem (a multiply and an add per term)."""
        return 2 * self.m * self.n * self.k

    @property
    def a_elems(self) -> int:
        return self.m * self.k

    @property
    def b_elems(self) -> int:
        return self.k * self.n

    @property
    def c_elems(self) -> int:
        return self.m * self.n

    @property
    def tenant_bytes(self) -> int:
        """A, B and C of one tenant."""
        return (self.a_elems + self.b_elems + self.c_elems) * FLOAT_BYTES

    @classmethod
    def parse(cls, text: str) -> GemmShape:
        """``"256x128x1152"`` -> GemmShape(256, 128, 1152)."""
        parts = text.lower().split("x")
        if len(parts) != 3 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"a GEMM shape is MxNxK, e.g. 256x128x1152, not {text!r}")
        return cls(*(int(p) for p in parts))


@dataclass(frozen=True)
class GemmTile:
    """A work-item's register tile: ``rows`` rows by ``vector`` consecutive columns."""

    vector: int
    rows: int

    def options(self) -> tuple[str, ...]:
        """The build options that fix the tile."""
        vw = self.vector
        vec = f"float{vw}" if vw > 1 else "float"
        load, store = (f"vload{vw}", f"vstore{vw}") if vw > 1 else ("ll_vload1", "ll_vstore1")
        opts = [f"-DVW={vw}", f"-DTM={self.rows}", f"-Dreal_v={vec}", f"-Dvload_v={load}", f"-Dvstore_v={store}"]
        if vw == 1:  # OpenCL C has no vload1/vstore1: plain element access
            opts += ["-Dll_vload1(i,p)=((p)[i])", "-Dll_vstore1(v,i,p)=((p)[i]=(v))"]
        return tuple(opts)


def _floor_pow2(x: int) -> int:
    return 1 << (max(1, x).bit_length() - 1)


def choose_tile(limits: DeviceLimits, n: int) -> GemmTile:
    """The device's preferred float vector width (a power of two, at most 16), no wider than the
    problem's columns (a matrix-vector product gets scalar columns), by 8 rows: eight independent
    accumulators keep a CPU's fused multiply-add pipes full (measured on PoCL, 2026-11-26:
    256x256x256 at 16x8 ran up to 1.7x faster than at 16x4; docs/tenancy.md)."""
    vector = min(_floor_pow2(max(1, limits.preferred_vector_width_float)), MAX_VECTOR, _floor_pow2(n))
    return GemmTile(vector=vector, rows=8)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def launch_sizes(
    found: FoundDevice, info: KernelInfo, grid: tuple[int, int, int]
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(global, local) sizes for a 3-D grid whose third axis is the problem: the work-group shape
    of the first two axes as the backend chooses it, one problem per work-group."""
    limits = found.limits
    l0, l1 = choose_local_size(
        (grid[0], grid[1]), info.preferred_multiple, info.max_work_group_size, limits.max_work_item_sizes, 1
    )
    glob = (_ceil_div(grid[0], l0) * l0, _ceil_div(grid[1], l1) * l1, grid[2])
    return glob, (l0, l1, 1)


@dataclass
class GemmLaunch:
    """A kernel with its arguments set, ready to enqueue on any queue of its context."""

    kernel: cl.Kernel
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    problems: int

    def enqueue(self, queue: cl.CommandQueue) -> cl.Event:
        """Enqueue the launch; its event."""
        return cl.enqueue_nd_range_kernel(queue, self.kernel, self.global_size, self.local_size)


def _i32(*values: int) -> list[np.int32]:
    return [np.int32(v) for v in values]


def _i64(*values: int) -> list[np.int64]:
    return [np.int64(v) for v in values]


@dataclass(frozen=True)
class Strided:
    """Where a strided batch's operands live: element offset of problem 0 and the stride between
    problems (0 broadcasts the operand to every problem)."""

    offset: int = 0
    stride: int = 0


def strided_launch(
    found: FoundDevice,
    ctx: cl.Context,
    shape: GemmShape,
    problems: int,
    a: cl.Buffer,
    b: cl.Buffer,
    c: cl.Buffer,
    a_at: Strided,
    b_at: Strided,
    c_at: Strided,
    *,
    tile: GemmTile | None = None,
    bias: cl.Buffer | None = None,
    bias_at: Strided = Strided(),
    activation: str = "none",
    lda: int | None = None,
    ldb: int | None = None,
    ldc: int | None = None,
) -> GemmLaunch:
    """``problems`` SGEMMs of one shape in one launch of ``sgemm_batched`` (contiguous rows unless
    leading dimensions are given; with ``bias``, one value per row of C, then ``activation``)."""
    if activation not in ACTIVATION_CODES:
        raise ValueError(f"activation {activation!r} is not one of {sorted(ACTIVATION_CODES)}")
    tile = tile or choose_tile(found.limits, shape.n)
    kernel, info = BUILDS.kernel(found, ctx, GEMM_SOURCE, "sgemm_batched", tile.options())
    grid = (_ceil_div(shape.n, tile.vector), _ceil_div(shape.m, tile.rows), problems)
    glob, local = launch_sizes(found, info, grid)
    args: list[Any] = [
        *_i32(*grid),
        a,
        b,
        c,
        bias if bias is not None else a,
        *_i32(shape.m, shape.n, shape.k, lda or shape.k, ldb or shape.n, ldc or shape.n),
        *_i64(a_at.offset, b_at.offset, c_at.offset, bias_at.offset),
        *_i64(a_at.stride, b_at.stride, c_at.stride, bias_at.stride),
        *_i32(int(bias is not None), ACTIVATION_CODES[activation]),
    ]
    kernel.set_args(*args)
    return GemmLaunch(kernel, glob, local, problems)


@dataclass(frozen=True)
class VariableProblem:
    """One problem of a variable-sized batch: its shape and element offsets of A, B and C."""

    shape: GemmShape
    a_offset: int
    b_offset: int
    c_offset: int


class VariableBatch:
    """A launch of ``sgemm_vbatched`` over problems of any shapes; owns its small size and offset
    buffers (``release``)."""

    def __init__(
        self,
        found: FoundDevice,
        ctx: cl.Context,
        queue: cl.CommandQueue,
        problems: Sequence[VariableProblem],
        a: cl.Buffer,
        b: cl.Buffer,
        c: cl.Buffer,
        tile: GemmTile | None = None,
    ) -> None:
        if not problems:
            raise ValueError("a variable-sized batch needs at least one problem")
        tile = tile or choose_tile(found.limits, min(p.shape.n for p in problems))
        dims = np.array(
            [[p.shape.m, p.shape.n, p.shape.k, p.shape.k, p.shape.n, p.shape.n] for p in problems], np.int32
        )
        offsets = np.array([[p.a_offset, p.b_offset, p.c_offset] for p in problems], np.int64)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        self.dims = cl.Buffer(ctx, flags, hostbuf=dims)
        self.offsets = cl.Buffer(ctx, flags, hostbuf=offsets)
        self.bytes = dims.nbytes + offsets.nbytes
        kernel, info = BUILDS.kernel(found, ctx, GEMM_SOURCE, "sgemm_vbatched", tile.options())
        grid = (
            max(_ceil_div(p.shape.n, tile.vector) for p in problems),
            max(_ceil_div(p.shape.m, tile.rows) for p in problems),
            len(problems),
        )
        glob, local = launch_sizes(found, info, grid)
        kernel.set_args(*_i32(*grid), a, b, c, self.dims, self.offsets)
        self.launch = GemmLaunch(kernel, glob, local, len(problems))
        queue.finish()

    def release(self) -> None:
        """Free the size and offset buffers."""
        self.dims.release()
        self.offsets.release()


def error_bound(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per element of A x B, twice the fp32 accumulation bound ``gamma_K * (|A| |B|)`` (see the
    module docstring), in float64."""
    k = a.shape[-1]
    gamma = k * UNIT_ROUNDOFF / (1 - k * UNIT_ROUNDOFF)
    bound: np.ndarray = 2.0 * gamma * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64)))
    return bound


@dataclass(frozen=True)
class ReferenceCheck:
    """A result against numpy's float64 product."""

    correct: bool  # every element within its bound
    max_relative_error: float  # the largest difference over the largest reference value
    worst_bound_fraction: float  # the largest difference over its element's bound (<= 1 passes)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "correct": self.correct,
            "max_relative_error": self.max_relative_error,
            "worst_bound_fraction": self.worst_bound_fraction,
        }


def check_against_numpy(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> ReferenceCheck:
    """C computed in fp32 against A x B in float64, element by element within ``error_bound``."""
    want = a.astype(np.float64) @ b.astype(np.float64)
    diff = np.abs(c.astype(np.float64) - want)
    bound = error_bound(a, b) + np.finfo(np.float32).tiny
    fraction = float(np.max(diff / bound)) if diff.size else 0.0
    scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-30)
    rel = float(np.max(diff)) / scale if diff.size else 0.0
    return ReferenceCheck(bool(np.isfinite(fraction) and fraction <= 1.0), rel, fraction)


__all__ = [
    "ACTIVATION_CODES",
    "FLOAT_BYTES",
    "GemmLaunch",
    "GemmShape",
    "GemmTile",
    "ReferenceCheck",
    "Strided",
    "VariableBatch",
    "VariableProblem",
    "check_against_numpy",
    "choose_tile",
    "error_bound",
    "launch_sizes",
    "strided_launch",
]
