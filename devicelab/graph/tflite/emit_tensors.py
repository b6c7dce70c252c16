"""Emitters of the IR operators without weights: activations (some as the converter decomposes
them), and the operators that move, reshape or reduce data, with their axes in TFLite's layout.
"""

from __future__ import annotations

import numpy as np

from devicelab.graph.ir import Operator
from devicelab.graph.tflite.context import NCHW_FROM_NHWC, NHWC_TO_NCHW_AXIS
from devicelab.graph.tflite.emit import EmitContext, Emitter, cannot, reshape_options, tflite_axis, to_nhwc

_UNARY = {"relu": "RELU", "relu6": "RELU6", "sigmoid": "LOGISTIC", "tanh": "TANH", "hard_swish": "HARD_SWISH"}


def _unary(cx: EmitContext, op: Operator) -> None:
    cx.add(_UNARY[op.type], [cx.x(op.inputs[0])], [cx.result()])


def _gelu(cx: EmitContext, op: Operator) -> None:
    cx.add("GELU", [cx.x(op.inputs[0])], [cx.result()], ("GeluOptions", {"Approximate": False}))


def _leaky_relu(cx: EmitContext, op: Operator) -> None:
    options = ("LeakyReluOptions", {"Alpha": op.attrs["alpha"]})
    cx.add("LEAKY_RELU", [cx.x(op.inputs[0])], [cx.result()], options)


def _elu(cx: EmitContext, op: Operator) -> None:
    if op.attrs["alpha"] != 1.0:
        raise cannot(op, f"TFLite's ELU has alpha 1, not {op.attrs['alpha']}")
    cx.add("ELU", [cx.x(op.inputs[0])], [cx.result()])


_CLIPS = {(0.0, None): "RELU", (0.0, 6.0): "RELU6", (-1.0, 1.0): "RELU_N1_TO_1", (0.0, 1.0): "RELU_0_TO_1"}


def _clip(cx: EmitContext, op: Operator) -> None:
    lo, hi = op.attrs["min"], op.attrs["max"]
    builtin = _CLIPS.get((lo, hi))
    if builtin is not None:
        cx.add(builtin, [cx.x(op.inputs[0])], [cx.result()])
        return
    if lo is None and hi is None:
        raise cannot(op, "a clip without bounds computes nothing, and TFLite has no identity operator")
    y = cx.x(op.inputs[0])
    if lo is not None:
        lower = cx.result() if hi is None else cx.helper("lower", to_nhwc(cx.shape(op.inputs[0])))
        cx.add("MAXIMUM", [y, cx.const(f"{op.name}::min", np.float32(lo), weight=False)], [lower])
        y = lower
    if hi is not None:
        cx.add("MINIMUM", [y, cx.const(f"{op.name}::max", np.float32(hi), weight=False)], [cx.result()])


def _swish(cx: EmitContext, op: Operator) -> None:
    x = cx.x(op.inputs[0])
    gate = cx.helper("sigmoid", to_nhwc(cx.shape(op.inputs[0])))
    cx.add("LOGISTIC", [x], [gate])
    cx.add("MUL", [x, gate], [cx.result()], ("MulOptions", {"FusedActivationFunction": 0}))


def _hard_sigmoid(cx: EmitContext, op: Operator) -> None:
    # relu6(x + 3) / 6, as Keras' MobileNetV3 writes it and the converter keeps it.
    shifted = cx.helper("shifted", to_nhwc(cx.shape(op.inputs[0])))
    three = cx.const(f"{op.name}::three", np.float32(3.0), weight=False)
    cx.add("ADD", [cx.x(op.inputs[0]), three], [shifted], ("AddOptions", {"FusedActivationFunction": 3}))
    sixth = cx.const(f"{op.name}::sixth", np.float32(1.0 / 6.0), weight=False)
    cx.add("MUL", [shifted, sixth], [cx.result()], ("MulOptions", {"FusedActivationFunction": 0}))


def _concat(cx: EmitContext, op: Operator) -> None:
    axis = tflite_axis(op.attrs["axis"], len(cx.shape(op.outputs[0])))
    options = ("ConcatenationOptions", {"Axis": axis, "FusedActivationFunction": 0})
    cx.add("CONCATENATION", [cx.x(t) for t in op.inputs], [cx.result()], options)


def _split(cx: EmitContext, op: Operator) -> None:
    sizes = op.attrs["sizes"]
    axis = tflite_axis(op.attrs["axis"], len(cx.shape(op.inputs[0])))
    outs = [cx.result(k) for k in range(len(sizes))]
    x = cx.x(op.inputs[0])
    if len(set(sizes)) == 1:
        axis_t = cx.ints(f"{op.name}::axis", [axis], [])
        cx.add("SPLIT", [axis_t, x], outs, ("SplitOptions", {"NumSplits": len(sizes)}))
    else:
        ins = [x, cx.ints(f"{op.name}::sizes", sizes), cx.ints(f"{op.name}::axis", [axis], [])]
        cx.add("SPLIT_V", ins, outs, ("SplitVOptions", {"NumSplits": len(sizes)}))


def _pad(cx: EmitContext, op: Operator) -> None:
    a = op.attrs
    if a["mode"] == "edge":
        raise cannot(op, "TFLite pads with a constant or a mirror (MIRROR_PAD), never by repeating the edge")
    rank = len(cx.shape(op.inputs[0]))
    order = NHWC_TO_NCHW_AXIS if rank == 4 else range(rank)  # the IR axis of each TFLite axis
    flat = [p for j in order for p in (a["pads"][j], a["pads"][j + rank])]
    paddings = cx.ints(f"{op.name}::paddings", flat, [rank, 2])
    x, version = cx.x(op.inputs[0]), 4 if rank > 4 else 1
    if a["mode"] == "reflect":
        cx.add("MIRROR_PAD", [x, paddings], [cx.result()], ("MirrorPadOptions", {"Mode": 0}))  # REFLECT
    elif a["value"] == 0.0:
        cx.add("PAD", [x, paddings], [cx.result()], ("PadOptions", {}), version)
    else:
        value = cx.const(f"{op.name}::value", np.float32(a["value"]), weight=False)
        cx.add("PADV2", [x, paddings, value], [cx.result()], ("PadV2Options", {}), version)


_REDUCERS = {"reduce_mean": "MEAN", "reduce_max": "REDUCE_MAX", "reduce_sum": "SUM"}


def _reduce(cx: EmitContext, op: Operator) -> None:
    a = op.attrs
    xs = cx.shape(op.inputs[0])
    rank = len(xs)
    axes = sorted(tflite_axis(j, rank) for j in a["axes"])
    x, options = cx.x(op.inputs[0]), ("ReducerOptions", {"KeepDims": a["keepdims"]})
    builtin = _REDUCERS[op.type]
    kept = [i for i in range(rank) if i not in axes]  # TFLite axes left, in TFLite's order
    wanted = [tflite_axis(j, rank) for j in range(rank) if j not in a["axes"]]  # in the IR's order
    if a["keepdims"] or kept == wanted:
        cx.add(builtin, [x, cx.ints(f"{op.name}::axes", axes)], [cx.result()], options)
        return
    # Dropping axes of a 4-D tensor leaves them in NHWC order; the IR's result is in NCHW order.
    t_in = to_nhwc(xs)
    reduced = cx.helper("reduced", [t_in[i] for i in kept])
    cx.add(builtin, [x, cx.ints(f"{op.name}::axes", axes)], [reduced], options)
    perm = cx.ints(f"{op.name}::perm", [kept.index(i) for i in wanted])
    cx.add("TRANSPOSE", [reduced, perm], [cx.result()], ("TransposeOptions", {}))


def _reshape(cx: EmitContext, op: Operator) -> None:
    # Layout is kept by rank only: a 4-D tensor is NHWC, so the element order of a reshape that
    # involves one follows TFLite's layout, as the reader's does (exact for [1, C, 1, 1] -> [1, C]).
    target = to_nhwc(cx.shape(op.outputs[0]))
    shape = cx.ints(f"{op.name}::shape", target)
    cx.add("RESHAPE", [cx.x(op.inputs[0]), shape], [cx.result()], reshape_options(target))


def _transpose(cx: EmitContext, op: Operator) -> None:
    perm = op.attrs["perm"]
    rank = len(perm)
    if rank == 4:  # out_t[i] = out_ir[q'[i]] = in_ir[perm[q'[i]]] = in_t[q[perm[q'[i]]]]
        perm = [NCHW_FROM_NHWC[perm[NHWC_TO_NCHW_AXIS[i]]] for i in range(4)]
    version = 6 if rank > 5 else 4 if rank > 4 else 1
    p = cx.ints(f"{op.name}::perm", perm)
    cx.add("TRANSPOSE", [cx.x(op.inputs[0]), p], [cx.result()], ("TransposeOptions", {}), version)


def _softmax(cx: EmitContext, op: Operator) -> None:
    rank = len(cx.shape(op.inputs[0]))
    if tflite_axis(op.attrs["axis"], rank) != rank - 1:
        raise cannot(op, f"TFLite's SOFTMAX runs over the last axis (C of a 4-D tensor), not axis {op.attrs['axis']}")
    cx.add("SOFTMAX", [cx.x(op.inputs[0])], [cx.result()], ("SoftmaxOptions", {"Beta": 1.0}))


def _channel_shuffle(cx: EmitContext, op: Operator) -> None:
    # [N, H, W, C] -> [N, H, W, g, C/g] -> swap the last two -> [N, H, W, C], as the converter writes it.
    n, c, h, w = cx.shape(op.inputs[0])
    g = op.attrs["groups"]
    grouped_shape = [n, h, w, g, c // g]
    grouped = cx.helper("grouped", grouped_shape)
    shape = cx.ints(f"{op.name}::grouped_shape", grouped_shape)
    cx.add("RESHAPE", [cx.x(op.inputs[0]), shape], [grouped], reshape_options(grouped_shape))
    transposed = cx.helper("transposed", [n, h, w, c // g, g])
    perm = cx.ints(f"{op.name}::perm", [0, 1, 2, 4, 3])
    cx.add("TRANSPOSE", [grouped, perm], [transposed], ("TransposeOptions", {}), 4)
    target = [n, h, w, c]
    cx.add("RESHAPE", [transposed, cx.ints(f"{op.name}::shape", target)], [cx.result()], reshape_options(target))


def _resize(cx: EmitContext, op: Operator) -> None:
    a = op.attrs
    size = cx.ints(f"{op.name}::size", a["size"])
    align = a["align_corners"]
    if a["mode"] == "linear":
        # half_pixel_centers is ONNX's half_pixel, what the ONNX export writes without align_corners.
        builtin, kind, half = "RESIZE_BILINEAR", "ResizeBilinearOptions", not align
        version = 3 if half else 1
    else:
        builtin, kind, half = "RESIZE_NEAREST_NEIGHBOR", "ResizeNearestNeighborOptions", False
        version = 3 if align else 1
    options = (kind, {"AlignCorners": align, "HalfPixelCenters": half})
    cx.add(builtin, [cx.x(op.inputs[0]), size], [cx.result()], options, version)


def _matmul(cx: EmitContext, op: Operator) -> None:
    if any(len(cx.shape(t)) == 4 for t in op.inputs):
        raise cannot(op, "a 4-D operand's last two IR axes (H, W) are not TFLite's last two (W, C) in NHWC")
    options = ("BatchMatMulOptions", {"AdjX": False, "AdjY": False})
    cx.add("BATCH_MATMUL", [cx.x(t) for t in op.inputs], [cx.result()], options)


# IR operator type -> the emitter that writes it as TFLite operators.
TENSOR_EMITTERS: dict[str, Emitter] = {
    "relu": _unary,
    "relu6": _unary,
    "sigmoid": _unary,
    "tanh": _unary,
    "hard_swish": _unary,
    "hard_sigmoid": _hard_sigmoid,
    "swish": _swish,
    "gelu": _gelu,
    "leaky_relu": _leaky_relu,
    "elu": _elu,
    "clip": _clip,
    "matmul": _matmul,
    "concat": _concat,
    "split": _split,
    "pad": _pad,
    "reduce_mean": _reduce,
    "reduce_max": _reduce,
    "reduce_sum": _reduce,
    "reshape": _reshape,
    "flatten": _reshape,
    "transpose": _transpose,
    "softmax": _softmax,
    "channel_shuffle": _channel_shuffle,
    "resize": _resize,
}
