"""Attribute normalizers: raw attributes and input shapes in, complete canonical attributes out.

Filling in every default means two graphs that mean the same thing compare equal.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from devicelab.graph.ops.common import Attrs, Shape, check_axis, int_list, need, numel

# (raw attributes, input shapes) -> canonical attributes.
Normalizer = Callable[[Attrs, list[Shape]], Attrs]


def _window(attrs: Attrs, with_kernel: bool = True) -> Attrs:
    """The window attributes: kernel (when ``with_kernel``), stride, pads and dilation, with defaults."""
    out: Attrs = {}
    if with_kernel:
        need("kernel" in attrs, "attribute 'kernel' is required")
        out["kernel"] = int_list(attrs["kernel"], 2, "kernel")
        need(all(k >= 1 for k in out["kernel"]), "kernel sizes must be >= 1")
    out["stride"] = int_list(attrs.get("stride", 1), 2, "stride")
    need(all(s >= 1 for s in out["stride"]), "strides must be >= 1")
    out["pads"] = int_list(attrs.get("pads", 0), 4, "pads")
    need(all(p >= 0 for p in out["pads"]), "pads must be >= 0 (top, left, bottom, right)")
    out["dilation"] = int_list(attrs.get("dilation", 1), 2, "dilation")
    return out


def conv(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """conv2d: the window, out_channels, groups (dividing both channel counts) and bias."""
    x = shapes[0]
    need(len(x) == 4, f"conv2d needs a 4-D NCHW input, got shape {list(x)}")
    out = _window(attrs)
    need("out_channels" in attrs, "attribute 'out_channels' is required")
    out["out_channels"] = int(attrs["out_channels"])
    out["groups"] = int(attrs.get("groups", 1))
    out["bias"] = bool(attrs.get("bias", True))
    g, cin, cout = out["groups"], x[1], out["out_channels"]
    need(g >= 1 and cin % g == 0, f"input channels {cin} are not divisible by groups {g}")
    need(cout >= 1 and cout % g == 0, f"out_channels {cout} is not divisible by groups {g}")
    return out


def dwconv(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """depthwise_conv2d: the window, multiplier and bias."""
    x = shapes[0]
    need(len(x) == 4, f"depthwise_conv2d needs a 4-D NCHW input, got shape {list(x)}")
    out = _window(attrs)
    out["multiplier"] = int(attrs.get("multiplier", 1))
    need(out["multiplier"] >= 1, "multiplier must be >= 1")
    out["bias"] = bool(attrs.get("bias", True))
    return out


def conv_integer(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """conv_integer: conv2d's attributes; it has no bias (its int32 sums are rescaled after it)."""
    need(not attrs.get("bias", False), "conv_integer has no bias (ONNX ConvInteger takes none)")
    return {**conv({**attrs, "bias": False}, shapes), "bias": False}


def quantize(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """quantize_linear: the dtype it writes (int8 or uint8, default uint8 as in ONNX)."""
    dtype = attrs.get("dtype", "uint8")
    need(dtype in ("int8", "uint8"), f"quantize_linear writes int8 or uint8, not {dtype!r}")
    return {"dtype": dtype}


def matmul_integer(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """matmul_integer: with one input, the weight is a constant of ``out_features`` columns."""
    if len(shapes) == 2:
        need("out_features" not in attrs, "'out_features' is only for a matmul_integer with one input")
        return {}
    need("out_features" in attrs, "a matmul_integer with one input needs 'out_features' (its constant weight)")
    out = int(attrs["out_features"])
    need(out >= 1, "out_features must be >= 1")
    return {"out_features": out}


def fully_connected(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """fully_connected: out_features and bias."""
    need("out_features" in attrs, "attribute 'out_features' is required")
    out = int(attrs["out_features"])
    need(out >= 1, "out_features must be >= 1")
    return {"out_features": out, "bias": bool(attrs.get("bias", True))}


def pool(avg: bool) -> Normalizer:
    """max_pool2d (``avg`` false) or avg_pool2d: the window without dilation, ceil_mode, count_include_pad."""

    def norm(attrs: Attrs, shapes: list[Shape]) -> Attrs:
        need(len(shapes[0]) == 4, f"pooling needs a 4-D NCHW input, got shape {list(shapes[0])}")
        out = _window(attrs)
        del out["dilation"]
        out["ceil_mode"] = bool(attrs.get("ceil_mode", False))
        if avg:
            out["count_include_pad"] = bool(attrs.get("count_include_pad", False))
        return out

    return norm


def binary(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """add / sub / mul / div: the constant operand's shape, value and side when there is one input."""
    out: Attrs = {}
    if len(shapes) == 1:
        need("const_shape" in attrs, "a binary operator with one input needs 'const_shape'")
        out["const_shape"] = [int(v) for v in attrs["const_shape"]]
        if attrs.get("const_value") is not None:
            out["const_value"] = float(attrs["const_value"])
        out["const_first"] = bool(attrs.get("const_first", False))
    else:
        need("const_shape" not in attrs, "'const_shape' is only for a binary operator with one input")
    return out


def no_attributes(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """An operator without attributes."""
    return {}


def alpha(default: float) -> Normalizer:
    """leaky_relu or elu: alpha, with its default."""

    def norm(attrs: Attrs, shapes: list[Shape]) -> Attrs:
        return {"alpha": float(attrs.get("alpha", default))}

    return norm


def clip(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """clip: min and max, either may be None."""
    lo, hi = attrs.get("min"), attrs.get("max")
    return {"min": None if lo is None else float(lo), "max": None if hi is None else float(hi)}


def batch_norm(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """batch_norm: epsilon."""
    need(len(shapes[0]) >= 2, "batch_norm needs an input with a channel axis")
    return {"epsilon": float(attrs.get("epsilon", 1e-5))}


def concat(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """concat: the axis."""
    return {"axis": check_axis(attrs.get("axis", 1), len(shapes[0]))}


def split(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """split: the axis and the sizes, which must add up to the input's size there."""
    x = shapes[0]
    axis = check_axis(attrs.get("axis", 1), len(x))
    need("sizes" in attrs, "attribute 'sizes' is required")
    sizes = [int(s) for s in attrs["sizes"]]
    need(all(s >= 1 for s in sizes), f"split sizes must be >= 1, got {sizes}")
    need(sum(sizes) == x[axis], f"split sizes {sizes} do not add up to {x[axis]} on axis {axis}")
    return {"axis": axis, "sizes": sizes}


def pad(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """pad: 2 x rank pads (all begins, then all ends), mode and value."""
    rank = len(shapes[0])
    pads = int_list(attrs.get("pads", 0), 2 * rank, "pads")
    mode = attrs.get("mode", "constant")
    need(mode in ("constant", "reflect", "edge"), f"pad mode {mode!r} is not constant, reflect or edge")
    return {"pads": pads, "mode": mode, "value": float(attrs.get("value", 0.0))}


def reduce(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """reduce_*: sorted axes (default all) and keepdims."""
    rank = len(shapes[0])
    axes = attrs.get("axes")
    axes = list(range(rank)) if axes is None else [check_axis(a, rank, "axes") for a in axes]
    return {"axes": sorted(set(axes)), "keepdims": bool(attrs.get("keepdims", True))}


def reshape(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """reshape: the target shape, with 0 copied and one -1 inferred."""
    x = shapes[0]
    need("shape" in attrs, "attribute 'shape' is required")
    target = [int(v) for v in attrs["shape"]]
    # ONNX semantics: 0 copies the input dimension, one -1 is inferred.
    target = [x[i] if v == 0 and i < len(x) else v for i, v in enumerate(target)]
    need(target.count(-1) <= 1, f"reshape target {target} has more than one -1")
    if -1 in target:
        known = math.prod(v for v in target if v != -1)
        need(known > 0 and numel(x) % known == 0, f"cannot reshape {list(x)} to {target}")
        target[target.index(-1)] = numel(x) // known
    need(all(v >= 1 for v in target), f"reshape target {target} has a non-positive dimension")
    need(numel(target) == numel(x), f"cannot reshape {list(x)} ({numel(x)} elements) to {target}")
    return {"shape": target}


def flatten(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """flatten: the axis, non-negative."""
    rank = len(shapes[0])
    axis = int(attrs.get("axis", 1))
    need(-rank <= axis <= rank, f"flatten axis {axis} is out of range for rank {rank}")
    return {"axis": axis % (rank + 1) if axis < 0 else axis}


def transpose(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """transpose: the permutation (default: reverse the axes)."""
    rank = len(shapes[0])
    perm = attrs.get("perm")
    perm = list(reversed(range(rank))) if perm is None else [int(p) for p in perm]
    need(sorted(perm) == list(range(rank)), f"perm {perm} is not a permutation of {rank} axes")
    return {"perm": perm}


def softmax(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """softmax: the axis."""
    return {"axis": check_axis(attrs.get("axis", -1), len(shapes[0]))}


def channel_shuffle(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """channel_shuffle: the number of groups, which must divide the channels."""
    x = shapes[0]
    need(len(x) == 4, f"channel_shuffle needs a 4-D NCHW input, got shape {list(x)}")
    groups = int(attrs.get("groups", 0))
    need(groups >= 1 and x[1] % groups == 0, f"channels {x[1]} are not divisible by groups {groups}")
    return {"groups": groups}


def resize(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """resize: the output size (from ``size`` or ``scales``), mode and align_corners."""
    x = shapes[0]
    need(len(x) == 4, f"resize needs a 4-D NCHW input, got shape {list(x)}")
    if "size" in attrs:
        size = int_list(attrs["size"], 2, "size")
    else:
        need("scales" in attrs, "resize needs 'size' (output H, W) or 'scales'")
        sh, sw = (float(s) for s in attrs["scales"])
        size = [int(math.floor(x[2] * sh)), int(math.floor(x[3] * sw))]
    need(all(s >= 1 for s in size), f"resize output size {size} must be positive")
    mode = attrs.get("mode", "nearest")
    need(mode in ("nearest", "linear"), f"resize mode {mode!r} is not nearest or linear")
    align = bool(attrs.get("align_corners", False))
    return {"size": size, "mode": mode, "align_corners": align}


def opaque(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    """opaque: the source operator's name, whether it is a custom one, and its outputs' declared
    shapes and dtypes (the IR cannot infer what it does not know)."""
    from devicelab.graph.ops.common import DTYPES

    name = attrs.get("op")
    need(isinstance(name, str) and name != "", "attribute 'op' (the source operator's name) is required")
    out_shapes: Any = attrs.get("output_shapes")
    need(
        isinstance(out_shapes, (list, tuple))
        and len(out_shapes) >= 1
        and all(isinstance(s, (list, tuple)) and all(type(d) is int and d >= 1 for d in s) for s in out_shapes),
        "attribute 'output_shapes' must be a non-empty list of shapes of positive integers",
    )
    out_dtypes: Any = attrs.get("output_dtypes", ["float32"] * len(out_shapes))
    need(
        isinstance(out_dtypes, (list, tuple))
        and len(out_dtypes) == len(out_shapes)
        and all(d in DTYPES for d in out_dtypes),
        f"attribute 'output_dtypes' must list one of {list(DTYPES)} per output",
    )
    return {
        "op": name,
        "custom": bool(attrs.get("custom", False)),
        "output_shapes": [[int(d) for d in s] for s in out_shapes],
        "output_dtypes": [str(d) for d in out_dtypes],
    }
