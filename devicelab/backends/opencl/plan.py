"""Which kernels the OpenCL backend runs for a graph: its fusion rule, kernel choice and work sizes.

The fusion rule (this backend's own; the predictors learn it from ``kernels_for_graph``):

1. **Epilogue anchors.** ``conv2d``, ``depthwise_conv2d`` and ``fully_connected`` run with a fused
   bias and activation, as mobile frameworks (MNN, TFLite GPU) do; element-wise ``add`` / ``sub``
   / ``mul`` / ``div`` and a standalone ``batch_norm`` take a fused activation too.
2. **Batch norm folds into the producer.** A ``batch_norm`` directly after a ``conv2d`` or
   ``depthwise_conv2d`` (or after a ``fully_connected`` whose output is 2-D, so the features are
   the channel axis) is folded into that operator's weights and bias.
3. **One activation follows.** An activation (relu, relu6, hard_swish, hard_sigmoid, sigmoid,
   swish, tanh, gelu, leaky_relu, elu, clip) directly after an anchor, or after the batch norm
   folded into it, is applied in the anchor's epilogue.
4. **Only a sole consumer is absorbed.** An operator is absorbed only when it is the one reader
   of its producer's output and that output is not a graph output (else the unfused value would
   be needed and is never written).
5. **Views cost nothing.** ``reshape`` and ``flatten`` alias their input's buffer (NCHW is
   contiguous) and run no kernel; only a view of a graph input is materialized by a copy.
6. **Several kernels for one operator.** ``concat`` runs one ``copy_slice`` per input and
   ``split`` one per output.
7. Every other operator is one kernel of its own.

Kernel choice: a ``conv2d`` whose groups equal its input channels (> 1) runs a depthwise
kernel; a 1x1, stride-1, unpadded ``conv2d`` runs ``conv2d_1x1``; a stride-1 convolution whose
output rows are as wide as its input rows (``same`` padding) runs the ``_flat`` variant
(``conv2d_flat``, and ``depthwise_conv2d_flat`` when its rows would fill less than half a
device vector: 7-wide rows with vectors of 16); every other convolution the row-tiled
``conv2d`` / ``depthwise_conv2d``.

Work sizes: every kernel has a 2-D ND-range whose logical sizes (``global_size``) are passed as
its first two arguments; the launched size is rounded up to the work-group size (the kernels
return early past the logical size).

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

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from devicelab.graph.ir import Graph, Operator

if TYPE_CHECKING:  # devices imports pyopencl; the plan itself needs no driver
    from devicelab.backends.opencl.devices import DeviceLimits

ACTIVATIONS: dict[str, int] = {  # IR type -> code of the kernels' fused activation (``ll_act``)
    "relu": 1,
    "relu6": 2,
    "hard_swish": 3,
    "sigmoid": 4,
    "swish": 5,
    "tanh": 6,
    "hard_sigmoid": 7,
    "leaky_relu": 8,
    "elu": 9,
    "clip": 10,
    "gelu": 11,
}
BINARY_OPS = {"add": 0, "sub": 1, "mul": 2, "div": 3}
BN_FOLDERS = ("conv2d", "depthwise_conv2d", "fully_connected")
EPILOGUE_ANCHORS = (*BN_FOLDERS, *BINARY_OPS, "batch_norm")
VIEWS = ("reshape", "flatten")

KERNEL_OF_TYPE = {
    "fully_connected": "fully_connected",
    "matmul": "matmul",
    "max_pool2d": "pool2d",
    "avg_pool2d": "pool2d",
    "global_avg_pool": "global_pool",
    "global_max_pool": "global_pool",
    **{t: "binary" for t in BINARY_OPS},
    **{t: "activation" for t in ACTIVATIONS},
    "batch_norm": "scale_shift",
    "concat": "copy_slice",
    "split": "copy_slice",
    "pad": "pad",
    "reduce_mean": "reduce",
    "reduce_max": "reduce",
    "reduce_sum": "reduce",
    "transpose": "transpose",
    "softmax": "softmax",
    "channel_shuffle": "channel_shuffle",
    "resize": "resize",
    "depthwise_conv2d": "depthwise_conv2d",
}
CONV_KERNELS = ("conv2d", "conv2d_flat", "conv2d_1x1", "depthwise_conv2d", "depthwise_conv2d_flat")
KERNELS = tuple(sorted({*CONV_KERNELS, *KERNEL_OF_TYPE.values()}))
ROW_TILED = ("conv2d", "depthwise_conv2d", "pool2d")  # a work-item computes NV * VW outputs of one row
FLAT = ("conv2d_1x1", "conv2d_flat", "depthwise_conv2d_flat")  # ... of one flattened channel plane
MAX_PIXEL_VECTORS = 4  # NV: more gives no further reuse, only longer tails
MAX_ELEMENTS = 2**31 - 2**24  # the kernels index a tensor with int offsets (plus the buffer slack)
FLOAT_DTYPES = ("float32", "float16")
MAX_RANK = 4  # shapes the kernels index (after collapsing broadcast axes / padding with ones)


class PlanError(ValueError):
    """The graph holds something this backend cannot run; the message names the operator."""


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


@dataclass(frozen=True)
class PlannedKernel:
    """One kernel launch of a graph run."""

    name: str  # unique in the plan: the anchor operator's name, with "#i" for its i-th kernel
    kernel: str  # the kernel function (and its file kernels/<kernel>.cl)
    ops: tuple[str, ...]  # IR operators it computes: the anchor first, then what it absorbed
    op_types: tuple[str, ...]
    global_size: tuple[int, int]  # logical work size, passed to the kernel as gs0, gs1
    local_size: tuple[int, int] | None = None  # chosen from device queries; None without a device
    part: int = 0  # which of the anchor's kernels (the input of a concat, the output of a split)
    attrs: dict[str, Any] = field(default_factory=dict)  # activation, folded batch norm, tiling

    @property
    def anchor(self) -> str:
        """The operator that owns the kernel."""
        return self.ops[0]

    @property
    def launch_size(self) -> tuple[int, int]:
        """The global size enqueued: the logical size rounded up to the work-group size."""
        if self.local_size is None:
            return self.global_size
        return (round_up(self.global_size[0], self.local_size[0]), round_up(self.global_size[1], self.local_size[1]))

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "name": self.name,
            "kernel": self.kernel,
            "ops": list(self.ops),
            "op_types": list(self.op_types),
            "global_size": list(self.global_size),
            "local_size": None if self.local_size is None else list(self.local_size),
            "launch_size": list(self.launch_size),
            "part": self.part,
            "attrs": dict(self.attrs),
        }


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
# Shape helpers shared with the runner (it binds the same numbers the plan sized)


def numel(shape: Sequence[int]) -> int:
    """Elements of a shape."""
    return math.prod(shape)


def as_rank4(shape: Sequence[int], what: str, op: Operator) -> tuple[int, int, int, int]:
    """A shape of rank <= 4 padded with leading ones to rank 4."""
    if len(shape) > MAX_RANK:
        raise PlanError(
            f"operator {op.name!r} ({op.type}): rank {len(shape)} {what} is beyond the "
            f"opencl backend's rank-{MAX_RANK} kernels"
        )
    s = (1,) * (MAX_RANK - len(shape)) + tuple(int(d) for d in shape)
    return (s[0], s[1], s[2], s[3])


def broadcast_layout(
    out: Sequence[int], a: Sequence[int], b: Sequence[int], op: Operator
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Output dims and the element strides of both operands (0 along broadcast axes), with
    adjacent axes merged where both operands allow and padded to rank 4."""
    rank = len(out)

    def strides(shape: Sequence[int]) -> list[int]:
        s = (1,) * (rank - len(shape)) + tuple(shape)
        st, acc = [0] * rank, 1
        for i in range(rank - 1, -1, -1):
            st[i] = 0 if s[i] == 1 and out[i] != 1 else acc
            acc *= s[i]
        return st

    dims = [int(d) for d in out]
    sa, sb = strides(a), strides(b)
    keep = [i for i in range(rank) if dims[i] != 1]  # size-1 axes index nothing
    dims, sa, sb = [dims[i] for i in keep], [sa[i] for i in keep], [sb[i] for i in keep]
    merged_d: list[int] = []
    merged_a: list[int] = []
    merged_b: list[int] = []
    for d, x, y in zip(dims, sa, sb, strict=True):
        if merged_d and merged_a[-1] == x * d and merged_b[-1] == y * d:
            merged_d[-1] *= d
            merged_a[-1], merged_b[-1] = x, y
        else:
            merged_d.append(d)
            merged_a.append(x)
            merged_b.append(y)
    if len(merged_d) > MAX_RANK:
        raise PlanError(
            f"operator {op.name!r} ({op.type}): broadcasting {list(a)} with {list(b)} needs "
            f"{len(merged_d)} axes, beyond the opencl backend's {MAX_RANK}"
        )
    pad = MAX_RANK - len(merged_d)
    return (tuple([1] * pad + merged_d), tuple([0] * pad + merged_a), tuple([0] * pad + merged_b))


def concat_geometry(graph: Graph, op: Operator) -> tuple[int, int, list[int]]:
    """(outer, inner, per-part axis sizes) of a concat or split: parts are contiguous runs of
    ``size * inner`` elements in each of ``outer`` rows of the whole tensor."""
    whole = graph.tensors[op.outputs[0] if op.type == "concat" else op.inputs[0]].shape
    axis = op.attrs["axis"]
    parts = op.inputs if op.type == "concat" else op.outputs
    return numel(whole[:axis]), numel(whole[axis + 1 :]), [graph.tensors[t].shape[axis] for t in parts]


def conv_kernel(graph: Graph, op: Operator, cfg: KernelConfig | None = None) -> str:
    """The kernel that runs a convolution operator (``cfg``: the device's tiling budget)."""
    a = op.attrs
    xs, ys = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
    flat = a["stride"] == [1, 1] and ys[3] == xs[3]  # output rows as wide as input rows
    cin = xs[1]
    if op.type == "depthwise_conv2d" or (a["groups"] > 1 and a["groups"] == cin and a["out_channels"] % cin == 0):
        # rows that fill at least half a device vector run row-tiled (input rows loaded once
        # for several output rows); shorter rows flat, where a vector spans rows
        vw = (cfg or KernelConfig()).vector_width
        short = 2 * (cfg or KernelConfig()).overlap_vector_width(ys[3]) < vw
        return "depthwise_conv2d_flat" if flat and short else "depthwise_conv2d"
    if a["kernel"] == [1, 1] and a["stride"] == [1, 1] and a["pads"] == [0, 0, 0, 0]:
        return "conv2d_1x1"
    return "conv2d_flat" if flat else "conv2d"


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


# ---------------------------------------------------------------------------------------------
# The plan


def canonical(graph: Graph) -> Graph:
    """A checked copy with canonical attributes (the caller's graph is left alone)."""
    return copy.deepcopy(graph).check()


def _check_supported(graph: Graph) -> None:
    for name, t in graph.tensors.items():
        if numel(t.shape) > MAX_ELEMENTS:
            raise PlanError(f"tensor {name!r} has {numel(t.shape)} elements, beyond the opencl kernels' {MAX_ELEMENTS}")
    for name in graph.inputs:
        if graph.tensors[name].dtype not in FLOAT_DTYPES:
            raise PlanError(
                f"graph input {name!r} is {graph.tensors[name].dtype}; the opencl backend runs float graphs only"
            )
    for o in graph.operators:
        if o.type not in KERNEL_OF_TYPE and o.type not in VIEWS and o.type != "conv2d":
            raise PlanError(f"operator {o.name!r}: type {o.type!r} has no opencl kernel")
        for name in (*o.inputs, *o.outputs):
            if graph.tensors[name].dtype not in FLOAT_DTYPES:
                raise PlanError(
                    f"operator {o.name!r} ({o.type}) uses {graph.tensors[name].dtype} tensor {name!r}; "
                    "the opencl backend runs float graphs only"
                )


def _sole_consumer(graph: Graph, op: Operator, consumers: dict[str, list[Operator]]) -> Operator | None:
    """The one operator reading ``op``'s single output, if it reads nothing else and that output
    is not a graph output."""
    if len(op.outputs) != 1 or op.outputs[0] in graph.outputs:
        return None
    readers = consumers.get(op.outputs[0], [])
    if len(readers) != 1 or len(readers[0].inputs) != 1:
        return None
    return readers[0]


def fusion_groups(graph: Graph) -> list[list[Operator]]:
    """The operators of a canonical graph grouped by the fusion rule, in topological order: each
    group is an anchor and what it absorbs (a view is a group of its own)."""
    consumers = graph.consumers()
    absorbed: set[str] = set()
    groups: list[list[Operator]] = []
    for op in graph.topological_order():
        if op.name in absorbed:
            continue
        chain = [op]
        if op.type in EPILOGUE_ANCHORS:
            nxt = _sole_consumer(graph, op, consumers)
            foldable = op.type in BN_FOLDERS and (
                op.type != "fully_connected" or len(graph.tensors[op.outputs[0]].shape) == 2
            )
            if nxt is not None and nxt.type == "batch_norm" and foldable:
                chain.append(nxt)
                nxt = _sole_consumer(graph, nxt, consumers)
            if nxt is not None and nxt.type in ACTIVATIONS:
                chain.append(nxt)
        absorbed.update(o.name for o in chain)
        groups.append(chain)
    return groups


def _tiling(graph: Graph, op: Operator, kernel: str, cfg: KernelConfig) -> dict[str, Any]:
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
        cap = max(1, cfg.accumulators // 2)
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


def _sizes(graph: Graph, chain: list[Operator], kernel: str, part: int, t: dict[str, Any]) -> tuple[int, int]:
    """The logical 2-D work size of one kernel (what the runner passes as gs0, gs1)."""
    op = chain[0]
    vw = t["vector_width"]
    nv, ocb = t.get("pixel_vectors", 1), t.get("out_channels_per_item", 1)
    xs = graph.tensors[op.inputs[0]].shape if op.inputs else ()
    ys = graph.tensors[op.outputs[0]].shape
    if kernel in ("conv2d_1x1", "conv2d_flat"):
        g = op.attrs["groups"]
        return ceil_div(ys[2] * ys[3], nv * vw), ys[0] * g * ceil_div(ys[1] // g, ocb)
    if kernel == "conv2d":
        g = op.attrs["groups"]
        return ys[2] * ceil_div(ys[3], nv * vw), ys[0] * g * ceil_div(ys[1] // g, ocb)
    if kernel == "depthwise_conv2d_flat":
        return ceil_div(ys[2] * ys[3], nv * vw), ys[0] * ceil_div(ys[1], ocb)
    if kernel == "depthwise_conv2d":
        return ceil_div(ys[2], t["rows_per_item"]) * ceil_div(ys[3], nv * vw), ys[0] * ceil_div(ys[1], ocb)
    if kernel == "pool2d":
        return ceil_div(ys[2], t["rows_per_item"]) * ceil_div(ys[3], nv * vw), ceil_div(ys[0] * ys[1], ocb)
    if kernel == "fully_connected":
        return ceil_div(ys[-1], vw), numel(ys[:-1])
    if kernel == "matmul":
        return ys[-1], numel(ys[:-1])
    if kernel == "global_pool":
        return ys[0] * ys[1], 1
    if kernel == "binary":
        shapes = [graph.tensors[t].shape for t in op.inputs]
        other = shapes[1] if len(shapes) > 1 else tuple(op.attrs["const_shape"])
        dims, _, _ = broadcast_layout(ys, shapes[0], other, op)
        return ceil_div(dims[3], vw), dims[0] * dims[1] * dims[2]
    if kernel == "activation":
        return ceil_div(numel(ys), vw), 1
    if kernel == "scale_shift":
        return ceil_div(numel(ys[2:]), vw), ys[0] * ys[1]
    if kernel == "copy_slice":
        if op.type in VIEWS:
            return ceil_div(numel(ys), vw), 1
        outer, inner, parts = concat_geometry(graph, op)
        return ceil_div(parts[part] * inner, vw), outer
    if kernel in ("pad", "transpose"):
        o = as_rank4(ys, "output", op)
        return o[3], o[0] * o[1] * o[2]
    if kernel == "reduce":
        as_rank4(xs, "input", op)
        return numel(ys), 1
    if kernel == "softmax":
        axis = op.attrs["axis"]
        return numel(xs[axis + 1 :]), numel(xs[:axis])
    if kernel == "channel_shuffle":
        return ceil_div(ys[2] * ys[3], vw), ys[0] * ys[1]
    if kernel == "resize":
        return ceil_div(ys[3], vw), ys[0] * ys[1] * ys[2]
    raise PlanError(f"operator {op.name!r}: no work size for kernel {kernel!r}")  # a bug, not bad input


def _kernel_attrs(chain: list[Operator], kernel: str, tiling: dict[str, Any]) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    act = next((o for o in chain[1:] if o.type in ACTIVATIONS), None)
    bn = next((o for o in chain[1:] if o.type == "batch_norm"), None)
    if chain[0].type in EPILOGUE_ANCHORS:
        attrs["activation"] = act.type if act is not None else None
    if bn is not None:
        attrs["folded_batch_norm"] = bn.name
    attrs.update(tiling)
    attrs["variant"] = variant(kernel, tiling)
    return attrs


def kernels_for_graph(
    graph: Graph, limits: DeviceLimits | None = None, config: KernelConfig | None = None
) -> list[PlannedKernel]:
    """The kernels that run for ``graph``, in launch (topological) order. With a device's
    ``limits`` the tiling and work-group sizes are that device's (the runner refines the local
    size with each built kernel's own limits); without, a generic tiling and no local size."""
    g = canonical(graph)
    _check_supported(g)
    cfg = config or (KernelConfig.for_device(limits) if limits is not None else KernelConfig())
    producers = g.producers()
    planned: list[PlannedKernel] = []
    for chain in fusion_groups(g):
        op = chain[0]
        if op.type in VIEWS:
            if op.inputs[0] in producers:
                continue  # an alias of a buffer some kernel writes
            kernels = [("copy_slice", 0)]  # a view of a graph input is materialized
        elif op.type in ("conv2d", "depthwise_conv2d"):
            kernels = [(conv_kernel(g, op, cfg), 0)]
        elif op.type == "concat":
            kernels = [("copy_slice", i) for i in range(len(op.inputs))]
        elif op.type == "split":
            kernels = [("copy_slice", i) for i in range(len(op.outputs))]
        else:
            kernels = [(KERNEL_OF_TYPE[op.type], 0)]
        for kernel, part in kernels:
            tiling = _tiling(g, op, kernel, cfg)
            gs = _sizes(g, chain, kernel, part, tiling)
            local = None
            if limits is not None:
                local = choose_local_size(
                    gs, limits.wave_size, limits.max_work_group_size, limits.max_work_item_sizes, limits.compute_units
                )
            planned.append(
                PlannedKernel(
                    name=op.name if len(kernels) == 1 else f"{op.name}#{part}",
                    kernel=kernel,
                    ops=tuple(o.name for o in chain),
                    op_types=tuple(o.type for o in chain),
                    global_size=gs,
                    local_size=local,
                    part=part,
                    attrs=_kernel_attrs(chain, kernel, tiling),
                )
            )
    return planned


def view_owner(graph: Graph, planned: list[PlannedKernel]) -> dict[str, str]:
    """For each view operator that runs no kernel, the kernel it is counted as fused into: the
    kernel that writes its input buffer (for a chain of views, the first view's)."""
    producers = graph.producers()
    last_kernel: dict[str, str] = {}  # operator -> the (last) kernel that computes it
    for k in planned:
        for o in k.ops:
            last_kernel[o] = k.name
    out: dict[str, str] = {}
    for op in graph.topological_order():
        if op.type in VIEWS and op.name not in last_kernel:
            src = producers.get(op.inputs[0])
            if src is not None:
                out[op.name] = out.get(src.name) or last_kernel[src.name]
    return out


__all__ = [
    "ACTIVATIONS",
    "CONV_KERNELS",
    "KERNELS",
    "KernelConfig",
    "PlanError",
    "PlannedKernel",
    "broadcast_layout",
    "choose_local_size",
    "fusion_groups",
    "kernels_for_graph",
    "pixel_tile",
    "row_vectors",
    "variant",
    "view_owner",
]
