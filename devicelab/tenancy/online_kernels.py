"""Launches of the batched kernels over any subset of the tenants, for the online scheduler.

Offline, a space-time step serves every tenant, so its super-kernel is a strided batch over all
R regions (``gemm.strided_launch``). Online, a batch holds whichever tenants have a request
pending: tenants 1, 4 and 5, say. The indexed kernels (``sgemm_indexed`` in
``kernels/sgemm_batched.cl``, ``im2col_indexed`` in ``kernels/im2col_batched.cl``) read problem
p's tenant from a small device array (``TenantIndex``) and address that tenant's region exactly
as the strided kernels address region t, through the same tile routine: a tenant's numbers are
the same bits as in its exclusive run.

A launch's arguments are set once; per batch only the problem count (argument 2, ``gs2``) and the
third global size change (``IndexedLaunch.enqueue``), so a kernel object is used by one thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.tenancy.gemm import ACTIVATION_CODES, GemmShape, Strided, choose_tile, launch_sizes
from devicelab.tenancy.network_layers import Im2col
from devicelab.tenancy.programs import BUILDS, GEMM_SOURCE, IM2COL_SOURCE

INDEX_BYTES = 4  # one int32 per problem


class TenantIndex:
    """The tenants a batch serves, one int32 per problem, in a device buffer rewritten per batch."""

    def __init__(self, ctx: cl.Context, capacity: int) -> None:
        self.capacity = capacity
        self.buffer = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, size=max(1, capacity) * INDEX_BYTES)

    def write(self, queue: cl.CommandQueue, tenants: Sequence[int]) -> None:
        """Enqueue the batch's tenants (kernels enqueued after it on ``queue``, an in-order queue,
        see them; pyopencl keeps the host array alive until the copy is done)."""
        if not 0 < len(tenants) <= self.capacity:
            raise ValueError(f"a batch of {len(tenants)} tenants; this index holds 1 .. {self.capacity}")
        cl.enqueue_copy(queue, self.buffer, np.asarray(tenants, dtype=np.int32), is_blocking=False)

    def release(self) -> None:
        """Free the buffer."""
        self.buffer.release()


@dataclass
class IndexedLaunch:
    """An indexed kernel with its arguments set: the first two global sizes fixed, the third the
    batch's size."""

    kernel: cl.Kernel
    global01: tuple[int, int]
    local_size: tuple[int, int, int]

    def enqueue(self, queue: cl.CommandQueue, problems: int) -> cl.Event:
        """Enqueue over the first ``problems`` entries of the index; its event."""
        self.kernel.set_arg(2, np.int32(problems))
        return cl.enqueue_nd_range_kernel(queue, self.kernel, (*self.global01, problems), self.local_size)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def indexed_gemm(
    found: FoundDevice,
    ctx: cl.Context,
    shape: GemmShape,
    a: cl.Buffer,
    b: cl.Buffer,
    c: cl.Buffer,
    a_at: Strided,
    b_at: Strided,
    c_at: Strided,
    index: TenantIndex,
    *,
    bias: cl.Buffer | None = None,
    bias_at: Strided | None = None,
    activation: str = "none",
) -> IndexedLaunch:
    """SGEMMs of one shape for the tenants in ``index``: tenant t's operands at ``offset + t *
    stride`` (the arguments of ``gemm.strided_launch``, with the tile it would choose)."""
    if activation not in ACTIVATION_CODES:
        raise ValueError(f"activation {activation!r} is not one of {sorted(ACTIVATION_CODES)}")
    tile = choose_tile(found.limits, shape.n)
    bias_at = bias_at or Strided()
    kernel, info = BUILDS.kernel(found, ctx, GEMM_SOURCE, "sgemm_indexed", tile.options())
    grid = (_ceil_div(shape.n, tile.vector), _ceil_div(shape.m, tile.rows))
    glob, local = launch_sizes(found, info, (*grid, 1))
    i32, i64 = np.int32, np.int64
    args: list[Any] = [
        i32(grid[0]),
        i32(grid[1]),
        i32(0),
        a,
        b,
        c,
        bias if bias is not None else a,
        index.buffer,
        *(i32(v) for v in (shape.m, shape.n, shape.k, shape.k, shape.n, shape.n)),
        *(i64(v) for v in (a_at.offset, b_at.offset, c_at.offset, bias_at.offset)),
        *(i64(v) for v in (a_at.stride, b_at.stride, c_at.stride, bias_at.stride)),
        i32(int(bias is not None)),
        i32(ACTIVATION_CODES[activation]),
    ]
    kernel.set_args(*args)
    return IndexedLaunch(kernel, (glob[0], glob[1]), local)


def indexed_im2col(
    found: FoundDevice,
    ctx: cl.Context,
    geometry: Im2col,
    x: cl.Buffer,
    x_stride: int,
    col: cl.Buffer,
    col_stride: int,
    index: TenantIndex,
) -> IndexedLaunch:
    """The im2col of the tenants in ``index``: tenant t's image at ``t * x_stride`` elements of
    ``x``, its columns at ``t * col_stride`` of ``col``."""
    g = geometry
    kernel, info = BUILDS.kernel(found, ctx, IM2COL_SOURCE, "im2col_indexed", ())
    grid = (g.oh * g.ow, g.rows)
    glob, local = launch_sizes(found, info, (*grid, 1))
    kernel.set_args(
        np.int32(grid[0]),
        np.int32(grid[1]),
        np.int32(0),
        x,
        col,
        index.buffer,
        np.int64(0),
        np.int64(x_stride),
        np.int64(0),
        np.int64(col_stride),
        *(np.int32(v) for v in (g.ih, g.iw, g.ow, g.kh, g.kw, g.sh, g.sw, g.pt, g.pl, g.dh, g.dw)),
    )
    return IndexedLaunch(kernel, (glob[0], glob[1]), local)


__all__ = ["IndexedLaunch", "TenantIndex", "indexed_gemm", "indexed_im2col"]
