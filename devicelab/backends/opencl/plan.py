"""Which kernels the OpenCL backend runs for a graph, and with what work sizes: the plan.

``kernels_for_graph`` puts together the fusion rule (``fusion``: which operators share a kernel),
the kernel choice and work sizes (this module) and each kernel's tile and work-group size
(``tiling``). None of it needs an OpenCL driver, so the predictors plan in the web process.

Kernel choice: a ``conv2d`` whose groups equal its input channels (> 1) runs a depthwise
kernel; a 1x1, stride-1, unpadded ``conv2d`` runs ``conv2d_1x1``; a stride-1 convolution whose
output rows are as wide as its input rows (``same`` padding) runs the ``_flat`` variant
(``conv2d_flat``, and ``depthwise_conv2d_flat`` when its rows would fill less than half a
device vector: 7-wide rows with vectors of 16); every other convolution the row-tiled
``conv2d`` / ``depthwise_conv2d``.

Work sizes: every kernel has a 2-D ND-range whose logical sizes (``global_size``) are passed as
its first two arguments; the launched size is rounded up to the work-group size (the kernels
return early past the logical size).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from devicelab.backends.opencl.fusion import ACTIVATIONS, BINARY_OPS, EPILOGUE_ANCHORS, VIEWS, fusion_groups
from devicelab.backends.opencl.limits import DeviceLimits
from devicelab.backends.opencl.tiling import (
    CONV_KERNELS,
    KernelConfig,
    ceil_div,
    choose_local_size,
    kernel_tiling,
    round_up,
    variant,
)
from devicelab.graph.ir import Graph, Operator

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
KERNELS = tuple(sorted({*CONV_KERNELS, *KERNEL_OF_TYPE.values()}))
MAX_ELEMENTS = 2**31 - 2**24  # the kernels index a tensor with int offsets (plus the buffer slack)
FLOAT_DTYPES = ("float32", "float16")
MAX_RANK = 4  # shapes the kernels index (after collapsing broadcast axes / padding with ones)


class PlanError(ValueError):
    """The graph holds something this backend cannot run; the message names the operator."""


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
            tiling = kernel_tiling(g, op, kernel, cfg)
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
    "KERNELS",
    "KERNEL_OF_TYPE",
    "PlanError",
    "PlannedKernel",
    "as_rank4",
    "broadcast_layout",
    "canonical",
    "concat_geometry",
    "conv_kernel",
    "kernels_for_graph",
    "numel",
    "view_owner",
]
