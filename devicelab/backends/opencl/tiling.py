"""How the OpenCL backend's kernels tile their work: vector widths, register tiles, work-groups.

Tiling (``attrs`` of each planned kernel; the kernel is built with them as ``-D`` options, so
each distinct tiling is one program): a work-item computes ``vector_width`` (VW) consecutive
outputs along the innermost axis, and the convolutions a register tile of ``pixel_vectors``
(NV) such vectors by ``out_channels_per_item`` (OCB) output channels:

* *flat* kernels (``conv2d_1x1``, ``*_flat``) see an output channel plane as one run of
  ``oh * ow`` pixels, so short rows waste no lanes; a tap of a ``_flat`` convolution is one
  contiguous vector load at a fixed offset, masked where it crosses a row edge or the padding;
* *row-tiled* kernels (``conv2d``, ``depthwise_conv2d``, ``pool2d``) tile output rows; their
  loads step through the input row by the horizontal stride (``stride_w``, SW; strides 1 and 2
  are whole-vector loads), and VW narrows for rows shorter than the device's width.
  ``depthwise_conv2d`` and ``pool2d`` tile ``rows_per_item`` (RB) output rows: each input row
  under the tile is loaded once per vector and feeds every output row whose window holds it
  (RB + 2 input rows for RB rows of a 3x3 stride-1 window, not 3 RB); at stride 2 the even and
  odd columns of one 2 VW span are two taps. Their VW is the widest that fits in a row
  (``overlap_vector_width``) and a row's last vector ends at the row's end, overlapping its
  neighbour, so stores are whole vectors. Their whole window (KH, KW, SH, DH, DW) is
  compile-time, so the row and tap loops unroll.

The vector width follows the device's preferred float vector width; the accumulator budget
(``KernelConfig.for_device``) follows its register file; the tile is chosen per layer, within
that budget:

* ``conv2d_1x1``: NV x OCB by a cost model (``pixel_tile``): the multiply-adds of the padded
  tiles, times loads per multiply-add, times how far short the work-items fall of filling the
  device;
* ``conv2d`` / ``conv2d_flat``: two vectors of pixels (one for rows or planes that fit one, or
  for kernels wider than 3 at a 24-vector budget: their KW x NV column masks need registers too)
  by a third of the budget's channels in evenly sized blocks (``balanced``);
* depthwise and pooling: the OCB channels (planes) of a work-item run one after the other, so
  only NV accumulators are live (``row_vectors``: at least two, the fewest padded lanes), or RB
  for the row-tiled ones, whose vectors run one after the other too (RB: a quarter of the
  budget, in evenly sized blocks of rows); OCB is half the budget, smaller when the device
  would otherwise sit idle.

The kernel width KW and the stride SW of row-tiled loads are compile-time constants (the taps
along a row unroll and their column masks are computed once per work-item); for ``conv2d`` and
the flat kernels the kernel height, dilation and padding are run-time arguments, for
``depthwise_conv2d`` and ``pool2d`` only the padding is.

Reads past the end: a flat or strided vector load may read up to ``attrs["overread"]`` elements
past its input tensor's end (lanes that are masked or never stored); the runner allocates every
buffer with that much zeroed slack. Reads before the start are never done: the loads of the few
tiles whose taps start before the tensor (the first rows of the first image, in the padding)
go lane by lane.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devicelab.backends.opencl.limits import DeviceLimits
from devicelab.graph.ir import Graph, Operator

CONV_KERNELS = ("conv2d", "conv2d_flat", "conv2d_1x1", "depthwise_conv2d", "depthwise_conv2d_flat")
ROW_TILED = ("conv2d", "depthwise_conv2d", "pool2d")  # a work-item computes NV * VW outputs of one row
FLAT = ("conv2d_1x1", "conv2d_flat", "depthwise_conv2d_flat")  # ... of one flattened channel plane
MAX_PIXEL_VECTORS = 4  # NV: more gives no further reuse, only longer tails


@dataclass(frozen=True)
class KernelConfig:
    """The tiling budget of one device's kernels, and optional fixed tiles (for tests).

    ``accumulators`` is how many VW-wide accumulator vectors a work-item may keep (NV x OCB of
    the convolutions); the fixed fields, when non-zero, replace the per-layer choice."""

    vector_width: int = 4  # consecutive outputs along the innermost axis (a float vector)
    out_channels_per_item: int = 0  # fixed OCB of the flat convolutions (0: chosen per layer)
    conv_out_channels_per_item: int = 0  # fixed OCB of the row-tiled conv2d (0: chosen per layer)
    pixel_vectors: int = 0  # fixed NV of every convolution (0: chosen per layer)
    rows_per_item: int = 0  # fixed RB of the row-tiled depthwise and pooling kernels (0: chosen per layer)
    accumulators: int = 24  # accumulator vectors per work-item
    min_items: int = 1  # work-items that fill the device (compute units x wave size)

    def __post_init__(self) -> None:
        if self.vector_width not in (4, 8, 16):
            raise ValueError(f"vector_width must be 4, 8 or 16, not {self.vector_width}")
        if min(self.out_channels_per_item, self.conv_out_channels_per_item, self.pixel_vectors, self.rows_per_item) < 0:
            raise ValueError("fixed tile sizes must be >= 0 (0 chooses per layer)")
        if self.pixel_vectors > MAX_PIXEL_VECTORS:
            raise ValueError(f"pixel_vectors must be at most {MAX_PIXEL_VECTORS}")
        if self.accumulators < 1 or self.min_items < 1:
            raise ValueError("accumulators and min_items must be >= 1")

    def row_vector_width(self, out_width: int) -> int:
        """The vector width of a kernel that tiles output rows: narrower for narrow rows, so a
        7-wide row fills 7 of 8 lanes rather than 7 of 16."""
        return min(self.vector_width, max(4, _next_pow2(out_width)))

    def overlap_vector_width(self, out_width: int) -> int:
        """The vector width of a row-tiled kernel whose last vector of a row ends at the row's
        end (``depthwise_conv2d``, ``pool2d``): the widest that fits in the row, so every store
        is a whole vector (a 14-wide row is two overlapping vectors of 8, not 14 of 16 lanes
        stored one by one)."""
        return min(self.vector_width, max(4, _floor_pow2(out_width)))

    @classmethod
    def for_device(cls, limits: DeviceLimits) -> KernelConfig:
        """The tiling budget of a device, from its queries.

        * VW: the preferred float vector width, clamped to 4..16.
        * Accumulators: a CPU keeps them in its vector registers; its preferred width tells
          which register file it has (16: AVX-512, 32 registers; 8: AVX/AVX2, 16 registers;
          4: SSE or NEON, 16 or 32), and three quarters of it hold accumulators (the rest hold
          the loaded inputs, masks and addresses). A GPU work-item should stay near 64 32-bit
          registers to keep occupancy, half of them accumulators: 32 / VW vectors.
        * Work-items wanted: one wave per compute unit at least (``compute_units * wave``).
        """
        width = 1 << max(0, int(limits.preferred_vector_width_float).bit_length() - 1)
        vw = min(16, max(4, width))
        if limits.device_type == "cpu":
            registers = 32 if vw >= 16 else 16
            acc = registers * 3 // 4
        else:
            acc = max(4, 32 // vw)
        return cls(vector_width=vw, accumulators=acc, min_items=max(1, limits.compute_units * limits.wave_size))


# ---------------------------------------------------------------------------------------------
# Small arithmetic


def round_up(n: int, m: int) -> int:
    """``n`` rounded up to a multiple of ``m``."""
    return -(-n // m) * m


def ceil_div(n: int, m: int) -> int:
    """``ceil(n / m)`` for positive integers."""
    return -(-n // m)


def _floor_pow2(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def _next_pow2(n: int) -> int:
    return 1 << max(0, (max(1, n) - 1).bit_length())


def choose_local_size(
    global_size: tuple[int, int], wave: int, max_group: int, max_items: Sequence[int], compute_units: int
) -> tuple[int, int]:
    """A work-group shape from device and kernel queries: one wave to start with (spread over dim 1
    when dim 0 is shorter), then grown along dim 0 up to four waves while every compute unit keeps
    at least four work-groups and rounding wastes at most an eighth of the work."""
    g0, g1 = max(1, global_size[0]), max(1, global_size[1])
    limit = _floor_pow2(max(1, max_group))
    wave = max(1, min(_floor_pow2(max(1, wave)), limit))
    m0, m1 = _floor_pow2(max(1, max_items[0])), _floor_pow2(max(1, max_items[1] if len(max_items) > 1 else 1))
    l0 = min(wave, _next_pow2(g0), m0)
    l1 = 1
    while l0 * l1 * 2 <= wave and l1 * 2 <= min(_next_pow2(g1), m1):
        l1 *= 2
    want_groups = 4 * max(1, compute_units)

    def fits(n0: int, n1: int) -> bool:
        return ceil_div(g0, n0) * ceil_div(g1, n1) >= want_groups and round_up(g0, n0) - g0 <= g0 // 8

    while l0 * 2 * l1 <= min(4 * wave, limit) and l0 * 2 <= m0 and fits(l0 * 2, l1):
        l0 *= 2
    return (l0, l1)


# ---------------------------------------------------------------------------------------------
# Register tiles


def pixel_tile(
    pixels: int, channels: int, instances: int, cfg: KernelConfig, vw: int, fixed_ocb: int = 0
) -> tuple[int, int]:
    """(NV, OCB) of a convolution's register tile: ``pixels`` outputs per channel plane (or
    row), ``channels`` output channels per group, ``instances`` planes (or rows) x groups x
    images. Minimizes the modelled cost: the multiply-adds of the padded tiles, times loads per
    multiply-add (NV vector loads + OCB weights feed NV * OCB of them), times how far short the
    work-items fall of filling the device."""
    best: tuple[float, int, int] | None = None
    nvs = [cfg.pixel_vectors] if cfg.pixel_vectors else range(1, MAX_PIXEL_VECTORS + 1)
    for nv in nvs:
        if not cfg.pixel_vectors and nv > 1 and (nv - 1) * vw >= pixels:
            break  # a vector that would be all tail
        full = max(1, min(cfg.accumulators // nv, channels))
        # the whole budget, or half or a quarter of it when the device needs more work-items
        for ocb in [fixed_ocb] if fixed_ocb else sorted({full, max(1, full // 2), max(1, full // 4)}, reverse=True):
            tiles, blocks = ceil_div(pixels, nv * vw), ceil_div(channels, ocb)
            work = tiles * nv * vw * blocks * ocb
            loads = 1.0 + 0.5 * (nv + ocb) / (nv * ocb)
            spread = max(1.0, cfg.min_items / (tiles * blocks * instances))
            cost = work * loads * spread
            if best is None or cost < best[0] * 0.999:
                best = (cost, nv, ocb)
    assert best is not None
    return best[1], best[2]


def row_vectors(pixels: int, vw: int) -> int:
    """NV of a tile with one accumulator per vector (depthwise, pooling): at least two vectors
    when there are pixels for them (each accumulator is a chain of dependent multiply-adds, so
    one alone stalls), then the most among those that pad ``pixels`` to the fewest lanes."""
    if pixels <= vw:
        return 1
    padded = {nv: ceil_div(pixels, nv * vw) * nv * vw for nv in range(2, MAX_PIXEL_VECTORS + 1)}
    least = min(padded.values())
    return max(nv for nv, lanes in padded.items() if lanes == least)


def balanced(count: int, cap: int, multiple: int = 1) -> int:
    """The block size that splits ``count`` into the fewest blocks of at most ``cap``, as evenly
    as possible (24 channels with a cap of 16: two blocks of 12, not 16 + 8), rounded up to a
    ``multiple`` where that stays within the cap and wastes at most a quarter (fewer distinct
    programs to build)."""
    blocks = ceil_div(count, max(1, cap))
    size = ceil_div(count, blocks)
    rounded = round_up(size, multiple)
    return rounded if rounded <= cap and 4 * rounded * blocks <= 5 * count else size


def kernel_tiling(graph: Graph, op: Operator, kernel: str, cfg: KernelConfig) -> dict[str, Any]:
    """The compile-time tiling of one kernel (its ``-D`` options) and how far it reads past its
    input's end (see the module docstring)."""
    ys = graph.tensors[op.outputs[0]].shape
    if kernel in ("depthwise_conv2d", "pool2d"):
        vw = cfg.overlap_vector_width(ys[3])
    elif kernel in ROW_TILED or kernel == "resize":
        vw = cfg.row_vector_width(ys[3])
    else:
        vw = cfg.vector_width
    t: dict[str, Any] = {"vector_width": vw}
    if kernel not in CONV_KERNELS and kernel != "pool2d":
        return t
    xs = graph.tensors[op.inputs[0]].shape
    a = op.attrs
    n, cout = ys[0], ys[1]
    groups = a.get("groups", 1)
    kh, kw = a["kernel"]
    sw = a["stride"][1]
    dh, dw = a.get("dilation", [1, 1])
    if kernel == "conv2d_1x1":
        nv, ocb = pixel_tile(ys[2] * ys[3], cout // groups, n * groups, cfg, vw, cfg.out_channels_per_item)
    elif kernel in ("conv2d", "conv2d_flat"):
        # two vectors of pixels by a third of the budget's channels, so each weight feeds two
        # multiply-adds per load; one vector when a row or plane fits one, or when the KW x NV
        # column masks, which need registers too, would take more than a quarter of the budget
        fixed = cfg.out_channels_per_item if kernel == "conv2d_flat" else cfg.conv_out_channels_per_item
        pixels = ys[2] * ys[3] if kernel == "conv2d_flat" else ys[3]
        nv = cfg.pixel_vectors or (2 if pixels > vw and 2 * kw <= cfg.accumulators // 4 else 1)
        ocb = fixed or balanced(cout // groups, max(1, cfg.accumulators * 2 // 3 // nv), 4)
    else:  # depthwise and pooling: OCB channels (planes) of one pixel tile share its setup
        planes = n * cout if kernel == "pool2d" else cout
        if kernel == "depthwise_conv2d_flat":
            pixels, rows = ys[2] * ys[3], 1
        else:
            pixels, rows = ys[3], ys[2]
        # the channels run one after the other in the work-item, so only NV accumulators (RB x
        # NV for the row-tiled kernels) are live; half the budget's worth of channels share
        # the masks and the setup
        nv = cfg.pixel_vectors or row_vectors(pixels, vw)
        rb = 1
        if kernel in ROW_TILED:
            # RB output rows share the loads of the input rows under them: as many as a
            # quarter of the budget allows, in evenly sized blocks
            rb = cfg.rows_per_item or balanced(rows, max(1, cfg.accumulators // 4))
            t["rows_per_item"] = rb
        # the row-tiled kernels run their channels one after the other (half the budget's
        # worth share the masks and the setup); the flat one keeps NV x OCB accumulators, in
        # two thirds of the budget (the lanes' coordinates and the loads need registers too)
        cap = max(1, cfg.accumulators * 2 // 3 // nv if kernel == "depthwise_conv2d_flat" else cfg.accumulators // 2)
        tiles = ceil_div(pixels, nv * vw) * ceil_div(rows, rb) * (1 if kernel == "pool2d" else n)
        while cap > 1 and tiles * ceil_div(planes, cap) < cfg.min_items:
            cap //= 2  # keep every compute unit busy
        ocb = cfg.out_channels_per_item or min(planes, cap)
    t["pixel_vectors"] = nv
    t["out_channels_per_item"] = ocb
    if kernel != "conv2d_1x1":  # the width is compile-time: the loops along a row unroll
        t["kernel_size"] = [kh, kw]
    if kernel in ROW_TILED:
        t["stride_w"] = sw
    if kernel in ("depthwise_conv2d", "pool2d"):  # the row loop unrolls: its window is compile-time
        t["stride_h"] = a["stride"][0]
        t["dilation"] = [dh, dw]
    if kernel == "pool2d":  # max or average is compile-time too
        t["pool_avg"] = int(op.type == "avg_pool2d")
    # the farthest a vector load reaches past the input tensor's last element
    pt, pl = a["pads"][0], a["pads"][1]
    if kernel == "conv2d_1x1":
        over = nv * vw
    elif kernel in FLAT:
        over = nv * vw + max(0, (kh - 1) * dh - pt) * xs[3] + max(0, (kw - 1) * dw - pl)
    else:
        over = (nv * vw + 1) * sw + vw + (kw - 1) * dw
    t["overread"] = over
    return t


def variant(kernel: str, attrs: dict[str, Any]) -> str:
    """A short name of a kernel's compile-time tiling (one program per kernel and variant)."""
    parts = [f"{attrs['vector_width']}"]
    if "pixel_vectors" in attrs:
        parts.append(f"nv{attrs['pixel_vectors']}")
    if "out_channels_per_item" in attrs:
        parts.append(f"ocb{attrs['out_channels_per_item']}")
    if "rows_per_item" in attrs:
        parts.append(f"rb{attrs['rows_per_item']}")
    if "pool_avg" in attrs:
        parts.append("avg" if attrs["pool_avg"] else "max")
    if "stride_h" in attrs:  # the whole window is compile-time
        kh, kw = attrs["kernel_size"]
        (dh, dw), sh = attrs["dilation"], attrs["stride_h"]
        parts.append(f"k{kh}x{kw}-s{sh}x{attrs['stride_w']}" + (f"-d{dh}x{dw}" if (dh, dw) != (1, 1) else ""))
    else:
        if "kernel_size" in attrs:
            parts.append(f"kw{attrs['kernel_size'][1]}")
        if "stride_w" in attrs:
            parts.append(f"s{attrs['stride_w']}")
    return "-".join(parts)


__all__ = [
    "CONV_KERNELS",
    "FLAT",
    "MAX_PIXEL_VECTORS",
    "ROW_TILED",
    "KernelConfig",
    "balanced",
    "ceil_div",
    "choose_local_size",
    "kernel_tiling",
    "pixel_tile",
    "round_up",
    "row_vectors",
    "variant",
]
