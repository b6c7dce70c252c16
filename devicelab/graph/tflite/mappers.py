"""Operator handlers: one function per TFLite operator family, each emitting IR operators.

A handler reads its operator through the ``Converter`` interface (shapes, constants, options) and
emits IR operators with NCHW shapes and axes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from devicelab.graph.builder import conv_pads
from devicelab.graph.ops import numel
from devicelab.graph.tflite.context import NCHW_FROM_NHWC, NHWC_TO_NCHW_AXIS, Converter, Handler, OpContext, to_nchw


def _axis(c: OpContext, axis: int, rank: int) -> int:
    """An NHWC axis of a tensor of this rank, as an IR axis."""
    if not -rank <= axis < rank:
        raise c.fail(f"axis {axis} is out of range for rank {rank}")
    axis %= rank
    return NHWC_TO_NCHW_AXIS[axis] if rank == 4 else axis


def _window(
    c: OpContext, o: dict[str, Any], size: Sequence[int], kernel: Sequence[int], dilation: Sequence[int] = (1, 1)
) -> dict[str, Any]:
    stride = [int(o.get("StrideH", 0)), int(o.get("StrideW", 0))]
    if min(stride) < 1 or min(dilation) < 1:
        raise c.fail(f"stride {stride} and dilation {list(dilation)} must be >= 1")
    padding = o.get("Padding", 0)
    if padding not in (0, 1):
        raise c.fail(f"padding {padding} is neither SAME nor VALID")
    rule = "same_tf" if padding == 0 else "valid"
    pads = conv_pads(
        (size[0], size[1]), (kernel[0], kernel[1]), (stride[0], stride[1]), (dilation[0], dilation[1]), rule
    )
    return {"kernel": list(kernel), "stride": stride, "pads": pads}


def _rank4(c: OpContext, shape: Sequence[int], what: str) -> None:
    if len(shape) != 4:
        raise c.fail(f"the {what} must be 4-D, got shape {list(shape)}")


def _conv2d(im: Converter, c: OpContext) -> None:
    o = im.options(c, "Conv2DOptions", required=True)
    x = im.x(c, c.input(0))
    xs = im.raw_shape(c.input(0))
    ws = im.const(c, c.input(1), "filter")
    _rank4(c, xs, "input")
    _rank4(c, ws, "filter")
    cout, kh, kw, cin_f = ws
    if xs[3] % cin_f:
        raise c.fail(f"input channels {xs[3]} are not a multiple of the filter's {cin_f}")
    dilation = [int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1))]
    attrs = _window(c, o, xs[1:3], [kh, kw], dilation)
    attrs.update(dilation=dilation, out_channels=cout, groups=xs[3] // cin_f, bias=c.input(2) >= 0)
    im.emit_act(c, "conv2d", [x], attrs, o.get("FusedActivationFunction", 0))


def _depthwise(im: Converter, c: OpContext) -> None:
    o = im.options(c, "DepthwiseConv2DOptions", required=True)
    x = im.x(c, c.input(0))
    xs = im.raw_shape(c.input(0))
    ws = im.const(c, c.input(1), "filter")
    _rank4(c, xs, "input")
    _rank4(c, ws, "filter")
    _, kh, kw, cout = ws
    # Some converters leave depth_multiplier at 0 or wrong; the filter's shape is the truth.
    if cout % xs[3]:
        raise c.fail(f"filter channels {cout} are not a multiple of input channels {xs[3]}")
    dilation = [int(o.get("DilationHFactor", 1)), int(o.get("DilationWFactor", 1))]
    attrs = _window(c, o, xs[1:3], [kh, kw], dilation)
    attrs.update(dilation=dilation, multiplier=cout // xs[3], bias=c.input(2) >= 0)
    im.emit_act(c, "depthwise_conv2d", [x], attrs, o.get("FusedActivationFunction", 0))


def _fully_connected(im: Converter, c: OpContext) -> None:
    o = im.options(c, "FullyConnectedOptions")
    x = im.x(c, c.input(0))
    xs = im.raw_shape(c.input(0))
    ws = im.const(c, c.input(1), "weights")
    if len(ws) != 2:
        raise c.fail(f"the weights must be 2-D [out, in], got shape {ws}")
    out_features, in_features = ws
    keep = bool(o.get("KeepNumDims", False))
    if keep and len(xs) == 4:
        raise c.fail("keep_num_dims on a 4-D input is not supported (its last axis is C in NHWC, W in NCHW)")
    if not xs or (keep and xs[-1] != in_features):
        raise c.fail(f"input shape {xs} does not end in the weights' {in_features} features")
    if not keep and (len(xs) != 2 or xs[-1] != in_features):
        # TFLite flattens the input to [-1, in]; the IR's fully_connected works on the last axis.
        total = numel(xs)
        if total % in_features:
            raise c.fail(f"input shape {xs} cannot be flattened to rows of {in_features} features")
        flat = im.fresh(f"{c.node}/flatten", (total // in_features, in_features), im.tensors[x].dtype)
        im.emit("reshape", [x], [flat], {"shape": [total // in_features, in_features]}, f"{c.node}/flatten")
        x = flat
    attrs = {"out_features": out_features, "bias": c.input(2) >= 0}
    im.emit_act(c, "fully_connected", [x], attrs, o.get("FusedActivationFunction", 0))


def _pool(ir_type: str) -> Handler:
    def handle(im: Converter, c: OpContext) -> None:
        o = im.options(c, "Pool2DOptions", required=True)
        x = im.x(c, c.input(0))
        xs = im.raw_shape(c.input(0))
        _rank4(c, xs, "input")
        kernel = [int(o.get("FilterHeight", 0)), int(o.get("FilterWidth", 0))]
        if min(kernel) < 1:
            raise c.fail(f"pooling window {kernel} must be >= 1")
        attrs = _window(c, o, xs[1:3], kernel)
        attrs["ceil_mode"] = False
        if ir_type == "avg_pool2d":
            attrs["count_include_pad"] = False  # TensorFlow's SAME average ignores the padding
        im.emit_act(c, ir_type, [x], attrs, o.get("FusedActivationFunction", 0))

    return handle


def _infer_reduced_axes(xs: list[int], ys: list[int], keepdims: bool) -> list[int]:
    if keepdims:
        axes = [a for a, (d, e) in enumerate(zip(xs, ys, strict=False)) if d != e]
        return axes or [a for a in range(1, len(xs)) if ys[a] == 1]
    kept, j = [], 0
    for a, d in enumerate(xs):  # greedy match of the kept dimensions, in order
        if j < len(ys) and ys[j] == d:
            kept.append(a)
            j += 1
    return [a for a in range(len(xs)) if a not in kept]


def _reduce(ir_type: str, global_type: str | None) -> Handler:
    def handle(im: Converter, c: OpContext) -> None:
        o = im.options(c, "ReducerOptions")
        x = im.x(c, c.input(0))
        xs, ys = im.raw_shape(c.input(0)), im.raw_shape(c.op.outputs[0])
        keep = bool(o.get("KeepDims", False))
        axes = im.const_ints(c.input(1))
        if axes is None:
            axes = _infer_reduced_axes(xs, ys, keep)
        for a in axes:
            _axis(c, a, len(xs))
        nhwc = sorted({a % len(xs) for a in axes})
        if len(xs) == 4 and nhwc == [1, 2] and keep and global_type:
            im.emit(global_type, [x], [im.declare(c.op.outputs[0])], {}, c.node)
            return
        ir_axes = sorted(_axis(c, a, len(xs)) for a in nhwc)
        attrs = {"axes": ir_axes, "keepdims": keep}
        kept = [a for a in range(len(xs)) if a not in nhwc]
        natural = sorted(kept, key=lambda a: NHWC_TO_NCHW_AXIS[a])
        if keep or len(xs) != 4 or natural == kept:
            im.emit(ir_type, [x], [im.declare(c.op.outputs[0])], attrs, c.node)
            return
        # Reducing H (or W) without keepdims leaves [N, C, W] in NCHW order but [N, W, C] in
        # TFLite's; a free reshape restores TFLite's shape so later axes keep their meaning.
        y = im.declare(c.op.outputs[0])
        pre = im.fresh(f"{y}/pre_layout", tuple(xs[a] for a in natural), im.dtype(c.op.outputs[0]))
        im.emit(ir_type, [x], [pre], attrs, c.node)
        im.emit("reshape", [pre], [y], {"shape": list(im.tensors[y].shape)}, f"{c.node}/layout")

    return handle


_BINARY_OPTIONS = {"ADD": "AddOptions", "SUB": "SubOptions", "MUL": "MulOptions", "DIV": "DivOptions"}


def _binary(im: Converter, c: OpContext) -> None:
    o = im.options(c, _BINARY_OPTIONS[c.kind])
    if len(c.op.inputs) != 2 or min(c.op.inputs) < 0:
        raise c.fail(f"it needs two inputs, got {c.op.inputs}")
    a, b = c.op.inputs
    rank = len(im.raw_shape(c.op.outputs[0]))

    def nchw_broadcast(shape: list[int]) -> list[int]:
        # A lower-rank operand broadcasts against NHWC's trailing axes (C first): make that
        # explicit before the 4-D shape is turned into NCHW. Scalars broadcast as they are.
        if rank == 4 and 0 < len(shape) <= 4:
            return list(to_nchw([1] * (4 - len(shape)) + shape))
        return shape

    def operand(i: int, k: int) -> str:
        name = im.x(c, i)
        shape = im.raw_shape(i)
        target = nchw_broadcast(shape)
        if list(im.tensors[name].shape) == target:
            return name
        t = im.fresh(f"{c.node}/broadcast{k}", target, im.tensors[name].dtype)
        im.emit("reshape", [name], [t], {"shape": target}, f"{c.node}/broadcast{k}")
        return t

    attrs: dict[str, Any] = {}
    if im.is_live(a) and im.is_live(b):
        inputs = [operand(a, 0), operand(b, 1)]
    else:
        live, const = (a, b) if im.is_live(a) else (b, a)
        inputs = [operand(live, 0)]
        shape = im.raw_shape(const)
        attrs = {"const_shape": nchw_broadcast(shape), "const_first": const == a}
        value = im.const_float(const)
        if value is not None:
            attrs["const_value"] = value
    im.emit_act(c, c.kind.lower(), inputs, attrs, o.get("FusedActivationFunction", 0))


def _unary(ir_type: str, attrs_of: Callable[[Converter, OpContext], dict[str, Any]] | None = None) -> Handler:
    def handle(im: Converter, c: OpContext) -> None:
        x = im.x(c, c.input(0))
        attrs = attrs_of(im, c) if attrs_of else {}
        im.emit(ir_type, [x], [im.declare(c.op.outputs[0])], attrs, c.node)

    return handle


def _leaky_alpha(im: Converter, c: OpContext) -> dict[str, Any]:
    return {"alpha": float(im.options(c, "LeakyReluOptions").get("Alpha", 0.0))}


def _softmax_axis(im: Converter, c: OpContext) -> dict[str, Any]:
    rank = len(im.raw_shape(c.input(0)))
    return {"axis": _axis(c, -1, rank)}  # TFLite's softmax always runs over the last (NHWC) axis


def _bound(attr: str) -> Handler:
    """MAXIMUM (``attr`` "min") or MINIMUM ("max") of an activation and a scalar: a one-sided clip."""

    def handle(im: Converter, c: OpContext) -> None:
        if len(c.op.inputs) != 2 or min(c.op.inputs) < 0:
            raise c.fail(f"it needs two inputs, got {c.op.inputs}")
        a, b = c.op.inputs
        if im.is_live(a) and im.is_live(b):
            raise c.fail("an element-wise extremum of two computed tensors has no IR equivalent")
        live, const = (a, b) if im.is_live(a) else (b, a)
        value = im.const_float(const)
        if value is None:
            raise c.fail("its constant operand is not a float scalar with data; only a scalar bound reads as a clip")
        if im.raw_shape(c.op.outputs[0]) != im.raw_shape(live):
            raise c.fail("its constant operand broadcasts the computed one to a larger shape")
        attrs: dict[str, Any] = {"min": None, "max": None, attr: value}
        im.emit("clip", [im.x(c, live)], [im.declare(c.op.outputs[0])], attrs, c.node)

    return handle


def _batch_matmul(im: Converter, c: OpContext) -> None:
    o = im.options(c, "BatchMatMulOptions")
    if o.get("AdjX") or o.get("AdjY"):
        raise c.fail("adj_x / adj_y (a transposed operand) are not supported")
    left, right = im.x(c, c.input(0), "left operand"), im.x(c, c.input(1), "right operand")
    if any(len(im.raw_shape(i)) == 4 for i in (c.input(0), c.input(1))):
        raise c.fail("a 4-D operand multiplies NHWC's last two axes (W, C), which are not the IR's (H, W)")
    im.emit("matmul", [left, right], [im.declare(c.op.outputs[0])], {}, c.node)


def _dropped(im: Converter, c: OpContext) -> None:
    """A float-to-float QUANTIZE / DEQUANTIZE (float16 activations): the output is the input."""
    im.x(c, c.input(0))
    out = c.op.outputs[0]
    im.alias[out] = c.input(0)
    im.live.add(out)


def _quantize(im: Converter, c: OpContext) -> None:
    """QUANTIZE to int8 / uint8 (from float, or requantizing): ``quantize_linear``."""
    x = im.x(c, c.input(0))
    dtype = im.dtype(c.op.outputs[0])
    if dtype not in ("int8", "uint8"):
        if dtype in ("float32", "float16") and im.tensors[x].dtype in ("float32", "float16"):
            _dropped(im, c)
            return
        raise c.fail(f"quantizes to {dtype}; the vocabulary quantizes to int8 or uint8")
    im.emit("quantize_linear", [x], [im.declare(c.op.outputs[0])], {"dtype": dtype}, c.node)


def _dequantize(im: Converter, c: OpContext) -> None:
    """DEQUANTIZE of an int8 / uint8 activation: ``dequantize_linear`` (of float16: dropped)."""
    x = im.x(c, c.input(0))
    if im.tensors[x].dtype in ("float32", "float16"):
        _dropped(im, c)
        return
    if im.tensors[x].dtype not in ("int8", "uint8", "int32"):
        raise c.fail(f"dequantizes a {im.tensors[x].dtype} tensor; int8, uint8 and int32 are")
    im.emit("dequantize_linear", [x], [im.declare(c.op.outputs[0])], {}, c.node)


def _reshape(im: Converter, c: OpContext) -> None:
    x = im.x(c, c.input(0))
    y = im.declare(c.op.outputs[0])
    if numel(im.tensors[x].shape) != numel(im.tensors[y].shape):
        raise c.fail(f"cannot reshape {im.raw_shape(c.input(0))} to {im.raw_shape(c.op.outputs[0])}")
    im.emit("reshape", [x], [y], {"shape": list(im.tensors[y].shape)}, c.node)


def _concat(im: Converter, c: OpContext) -> None:
    o = im.options(c, "ConcatenationOptions")
    xs = [im.x(c, i, f"input {k}") for k, i in enumerate(c.op.inputs)]
    axis = _axis(c, int(o.get("Axis", 0)), len(im.raw_shape(c.op.outputs[0])))
    im.emit_act(c, "concat", xs, {"axis": axis}, o.get("FusedActivationFunction", 0))


def _split(im: Converter, c: OpContext) -> None:
    if c.kind == "SPLIT":
        im.options(c, "SplitOptions")
        data, axis_t = c.input(1), c.input(0)
    else:
        im.options(c, "SplitVOptions")
        data, axis_t = c.input(0), c.input(2)
    x = im.x(c, data)
    xs = im.raw_shape(data)
    outs = [im.raw_shape(o) for o in c.op.outputs]
    if any(len(s) != len(xs) for s in outs):
        raise c.fail(f"its outputs {outs} do not have the input's rank {len(xs)}")
    given = im.const_ints(axis_t)
    if given:
        ir_axis = _axis(c, given[0], len(xs))  # checks the range
        axis = given[0] % len(xs)
    else:
        # Shape-only file: the axis is the one whose size the split changes.
        differ = [a for a in range(len(xs)) if outs[0][a] != xs[a]]
        axis = differ[0] if differ else len(xs) - 1
        ir_axis = _axis(c, axis, len(xs))
    sizes = [s[axis] for s in outs]
    names = [im.declare(o) for o in c.op.outputs]
    im.emit("split", [x], names, {"axis": ir_axis, "sizes": sizes}, c.node)


def _pad(im: Converter, c: OpContext) -> None:
    x = im.x(c, c.input(0))
    xs, ys = im.raw_shape(c.input(0)), im.raw_shape(c.op.outputs[0])
    rank = len(xs)
    flat = im.const_ints(c.input(1))
    if flat is not None:
        if len(flat) != 2 * rank:
            raise c.fail(f"paddings hold {len(flat)} values; a rank-{rank} input needs {2 * rank}")
        pairs = [(flat[2 * a], flat[2 * a + 1]) for a in range(rank)]
    else:
        pairs = [((y - d) // 2, (y - d) - (y - d) // 2) for d, y in zip(xs, ys, strict=False)]
    order = NCHW_FROM_NHWC if rank == 4 else tuple(range(rank))
    pads = [pairs[a][0] for a in order] + [pairs[a][1] for a in order]
    attrs: dict[str, Any] = {"pads": pads, "mode": "constant", "value": 0.0}
    if c.kind == "MIRROR_PAD":
        attrs["mode"] = "reflect"  # SYMMETRIC mirrors too, with the same cost
    elif c.kind == "PADV2" and c.input(2) >= 0:
        value = im.const_float(c.input(2))
        attrs["value"] = 0.0 if value is None else value
    im.emit("pad", [x], [im.declare(c.op.outputs[0])], attrs, c.node)


def _resize(mode: str, options: str) -> Handler:
    def handle(im: Converter, c: OpContext) -> None:
        o = im.options(c, options)
        x = im.x(c, c.input(0))
        ys = im.raw_shape(c.op.outputs[0])
        _rank4(c, ys, "output")
        attrs = {"size": [ys[1], ys[2]], "mode": mode, "align_corners": bool(o.get("AlignCorners", False))}
        im.emit("resize", [x], [im.declare(c.op.outputs[0])], attrs, c.node)

    return handle


def _transpose(im: Converter, c: OpContext) -> None:
    x = im.x(c, c.input(0))
    xs, ys = im.raw_shape(c.input(0)), im.raw_shape(c.op.outputs[0])
    rank = len(xs)
    perm = im.const_ints(c.input(1))
    if perm is None:
        # Shape-only file: any permutation that maps the shapes has the same cost.
        perm = next((list(p) for p in itertools.permutations(range(rank)) if [xs[i] for i in p] == ys), None)
    if perm is None or sorted(perm) != list(range(rank)):
        raise c.fail(f"no permutation {perm} maps shape {xs} to {ys}")
    # out_nhwc[i] = in_nhwc[perm[i]]; with IR axis j of a 4-D tensor holding NHWC axis q[j],
    # out_ir[j] = in_ir[q^-1[perm[q[j]]]].
    q = NCHW_FROM_NHWC if rank == 4 else tuple(range(rank))
    q_inv = [q.index(a) for a in range(rank)]
    ir_perm = [q_inv[perm[q[j]]] for j in range(rank)]
    im.emit("transpose", [x], [im.declare(c.op.outputs[0])], {"perm": ir_perm}, c.node)


# TFLite builtin operator name -> its handler.
HANDLERS: dict[str, Handler] = {
    "CONV_2D": _conv2d,
    "DEPTHWISE_CONV_2D": _depthwise,
    "FULLY_CONNECTED": _fully_connected,
    "MAX_POOL_2D": _pool("max_pool2d"),
    "AVERAGE_POOL_2D": _pool("avg_pool2d"),
    "MEAN": _reduce("reduce_mean", "global_avg_pool"),
    "REDUCE_MAX": _reduce("reduce_max", "global_max_pool"),
    "SUM": _reduce("reduce_sum", None),
    "ADD": _binary,
    "SUB": _binary,
    "MUL": _binary,
    "DIV": _binary,
    "RELU": _unary("relu"),
    "RELU6": _unary("relu6"),
    "RELU_N1_TO_1": _unary("clip", lambda im, c: {"min": -1.0, "max": 1.0}),
    "RELU_0_TO_1": _unary("clip", lambda im, c: {"min": 0.0, "max": 1.0}),
    "HARD_SWISH": _unary("hard_swish"),
    "LOGISTIC": _unary("sigmoid"),
    "TANH": _unary("tanh"),
    "GELU": _unary("gelu"),
    "ELU": _unary("elu"),
    "LEAKY_RELU": _unary("leaky_relu", _leaky_alpha),
    "SOFTMAX": _unary("softmax", _softmax_axis),
    "CONCATENATION": _concat,
    "SPLIT": _split,
    "SPLIT_V": _split,
    "PAD": _pad,
    "PADV2": _pad,
    "MIRROR_PAD": _pad,
    "RESHAPE": _reshape,
    "SQUEEZE": _reshape,
    "EXPAND_DIMS": _reshape,
    "RESIZE_BILINEAR": _resize("linear", "ResizeBilinearOptions"),
    "RESIZE_NEAREST_NEIGHBOR": _resize("nearest", "ResizeNearestNeighborOptions"),
    "TRANSPOSE": _transpose,
    "MAXIMUM": _bound("min"),
    "MINIMUM": _bound("max"),
    "BATCH_MATMUL": _batch_matmul,
    "QUANTIZE": _quantize,
    "DEQUANTIZE": _dequantize,
}
