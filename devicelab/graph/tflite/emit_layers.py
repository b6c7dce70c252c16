"""Emitters of the IR operators that carry weights or slide a window: convolutions, fully
connected, pooling, batch norm, and the element-wise binaries (their constant operand).

Weights are the ONNX export's seeded draws (``EmitContext.weights``) moved to TFLite's layouts;
a batch norm folded into a group scales the weights and shifts the bias as converters do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from devicelab.graph.builder import conv_pads
from devicelab.graph.ir import Operator
from devicelab.graph.tflite.emit import EmitContext, Emitter, cannot, reshape_options, tflite_layout, to_nhwc

SAME, VALID = 0, 1  # tflite.Padding
FLOAT32_LOWEST = float(np.finfo(np.float32).min)  # what max pooling's explicit padding holds


def _fold_bn(cx: EmitContext, weight: np.ndarray, bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """Weights with the group's batch norm folded in (output channels on axis 0), as converters do."""
    bn = cx.group.bn
    if bn is None:
        return weight, bias
    p = cx.weights(bn)
    s = p["scale"] / np.sqrt(p["var"] + np.float32(bn.attrs["epsilon"]))
    folded = weight * s.reshape((-1,) + (1,) * (weight.ndim - 1))
    shift = ((bias if bias is not None else 0.0) - p["mean"]) * s + p["bias"]
    return folded.astype(np.float32), shift.astype(np.float32)


def _window_input(
    cx: EmitContext, op: Operator, dilation: Sequence[int], fill: float, same_ok: bool
) -> tuple[int, int, bool]:
    """The input and padding (SAME or VALID) of a windowed operator, with a PAD when neither fits
    (the flag says whether one was written).

    ceil_mode's last window may run past the end pad: the padding is extended that far, which
    keeps the IR's output size. ``same_ok`` is false when SAME's treatment of the padding (zeros
    for a conv, ignored by pooling) would differ from the IR's (an average counting the pads).
    """
    a, x = op.attrs, op.inputs[0]
    n, c, h, w = cx.shape(x)
    out = cx.shape(op.outputs[0])[2:]
    kernel, stride, pads = a["kernel"], a["stride"], list(a["pads"])
    for axis, size in enumerate((h, w)):
        eff = dilation[axis] * (kernel[axis] - 1) + 1
        short = (out[axis] - 1) * stride[axis] + eff - (size + pads[axis] + pads[axis + 2])
        pads[axis + 2] += max(short, 0)
    if not any(pads):
        return cx.x(x), VALID, False
    same = conv_pads((h, w), (kernel[0], kernel[1]), (stride[0], stride[1]), (dilation[0], dilation[1]), "same_tf")
    if same_ok and pads == same:
        return cx.x(x), SAME, False
    top, left, bottom, right = pads
    padded = cx.helper("pad", [n, h + top + bottom, w + left + right, c])
    paddings = cx.ints(f"{op.name}::paddings", [0, 0, top, bottom, left, right, 0, 0], [4, 2])
    if fill == 0.0:
        cx.add("PAD", [cx.x(x), paddings], [padded], ("PadOptions", {}))
    else:
        value = cx.const(f"{op.name}::pad_value", np.float32(fill), weight=False)
        cx.add("PADV2", [cx.x(x), paddings, value], [padded], ("PadV2Options", {}))
    return padded, VALID, True


def _conv(cx: EmitContext, op: Operator) -> None:
    a = op.attrs
    cin = cx.shape(op.inputs[0])[1]
    drawn = cx.weights(op)
    weight, bias = _fold_bn(cx, drawn["weight"], drawn.get("bias"))  # (cout, cin / groups, kh, kw)
    x, padding, _ = _window_input(cx, op, a["dilation"], 0.0, same_ok=True)
    options: dict[str, Any] = {
        "Padding": padding,
        "StrideH": a["stride"][0],
        "StrideW": a["stride"][1],
        "DilationHFactor": a["dilation"][0],
        "DilationWFactor": a["dilation"][1],
        "FusedActivationFunction": cx.group.fused,
    }
    # A conv with one group per input channel is depthwise, as the converter writes it.
    if op.type == "depthwise_conv2d" or (a["groups"] == cin and cin > 1):
        builtin, kind, filt = "DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions", weight.transpose(1, 2, 3, 0)
        options["DepthMultiplier"] = weight.shape[0] // cin
        version = 2 if a["dilation"] != [1, 1] else 1
    else:
        builtin, kind, filt = "CONV_2D", "Conv2DOptions", weight.transpose(0, 2, 3, 1)  # OHWI
        version = 6 if a["groups"] > 1 else 1
    # LiteRT's conv kernels require a bias, so a conv without one gets zeros, as the converter writes.
    bias = np.zeros(weight.shape[0], np.float32) if bias is None else bias
    ins = [x, cx.const(f"{op.name}::weight", filt), cx.const(f"{op.name}::bias", bias)]
    cx.add(builtin, ins, [cx.result()], (kind, options), version)


def _fully_connected(cx: EmitContext, op: Operator) -> None:
    rank = len(cx.shape(op.inputs[0]))
    if rank == 4:
        raise cannot(op, "its input is 4-D; the IR multiplies along W, which TFLite's NHWC layout keeps second to last")
    drawn = cx.weights(op)
    # The ONNX draw is (out, in) for Gemm (2-D input) and (in, out) for MatMul; TFLite wants (out, in).
    weight = drawn["weight"] if rank == 2 else np.ascontiguousarray(drawn["weight"].T)
    weight, bias = _fold_bn(cx, weight, drawn.get("bias"))
    keep = rank > 2  # keep [B, S, in] -> [B, S, out] rather than flattening to 2-D
    options = ("FullyConnectedOptions", {"FusedActivationFunction": cx.group.fused, "KeepNumDims": keep})
    b = -1 if bias is None else cx.const(f"{op.name}::bias", bias)
    x = cx.x(op.inputs[0])
    cx.add("FULLY_CONNECTED", [x, cx.const(f"{op.name}::weight", weight), b], [cx.result()], options, 5 if keep else 1)


def _pool(cx: EmitContext, op: Operator) -> None:
    a = op.attrs
    if op.type == "max_pool2d":
        builtin, fill, same_ok = "MAX_POOL_2D", FLOAT32_LOWEST, True
    else:
        builtin, fill, same_ok = "AVERAGE_POOL_2D", 0.0, not a["count_include_pad"]
    x, padding, padded = _window_input(cx, op, [1, 1], fill, same_ok)
    options = {
        "Padding": padding,
        "StrideH": a["stride"][0],
        "StrideW": a["stride"][1],
        "FilterHeight": a["kernel"][0],
        "FilterWidth": a["kernel"][1],
        "FusedActivationFunction": 0,
    }
    rescale = _average_rescale(cx, op) if builtin == "AVERAGE_POOL_2D" and padded else None
    if rescale is None:
        cx.add(builtin, [x], [cx.result()], ("Pool2DOptions", options))
        return
    # A VALID average over explicit zero padding divides every window by kh * kw; the IR's
    # average divides by what its window covers, so a MUL by kh * kw / covered makes it exact.
    pooled = cx.helper("pooled", to_nhwc(cx.shape(op.outputs[0])))
    cx.add(builtin, [x], [pooled], ("Pool2DOptions", options))
    factor = cx.const(f"{op.name}::rescale", rescale)
    cx.add("MUL", [pooled, factor], [cx.result()], ("MulOptions", {"FusedActivationFunction": 0}))


def _average_rescale(cx: EmitContext, op: Operator) -> np.ndarray | None:
    """[1, OH, OW, 1] factors kh * kw / (window elements the IR's average counts), or None if all 1.

    The IR (ONNX, PyTorch) counts the input, plus its pads when ``count_include_pad``, never the
    part of a ceil_mode window that runs past the end pad.
    """
    a = op.attrs
    counts = []
    for axis in (0, 1):
        size = cx.shape(op.inputs[0])[2 + axis]
        out = cx.shape(op.outputs[0])[2 + axis]
        k, s, p0, p1 = a["kernel"][axis], a["stride"][axis], a["pads"][axis], a["pads"][axis + 2]
        lo, hi = (-p0, size + p1) if a["count_include_pad"] else (0, size)
        starts = np.arange(out) * s - p0
        counts.append(np.maximum(np.minimum(starts + k, hi) - np.maximum(starts, lo), 1))
    covered = np.outer(counts[0], counts[1])
    if np.all(covered == a["kernel"][0] * a["kernel"][1]):
        return None
    factor = (a["kernel"][0] * a["kernel"][1]) / covered
    scale: np.ndarray = factor.astype(np.float32).reshape(1, covered.shape[0], covered.shape[1], 1)
    return scale


def _global_pool(cx: EmitContext, op: Operator) -> None:
    builtin = "MEAN" if op.type == "global_avg_pool" else "REDUCE_MAX"
    axes = cx.ints(f"{op.name}::axes", [1, 2])
    cx.add(builtin, [cx.x(op.inputs[0]), axes], [cx.result()], ("ReducerOptions", {"KeepDims": True}))


def _operand(cx: EmitContext, op: Operator, t: str, k: int, rank: int) -> int:
    """An activation operand of a binary operator; a lower-rank one is made 4-D for a 4-D output."""
    shape = cx.shape(t)
    if rank != 4 or len(shape) in (0, 4):
        return cx.x(t)
    target = to_nhwc((1,) * (4 - len(shape)) + tuple(shape))
    out = cx.helper(f"broadcast{k}", target)
    cx.add("RESHAPE", [cx.x(t), cx.ints(f"{op.name}::broadcast{k}_shape", target)], [out], reshape_options(target))
    return out


def _binary(cx: EmitContext, op: Operator) -> None:
    out_rank = len(cx.shape(op.outputs[0]))
    if len(op.inputs) == 2:
        ins = [_operand(cx, op, t, k, out_rank) for k, t in enumerate(op.inputs)]
    else:
        const = cx.const(f"{op.name}::const", tflite_layout(cx.weights(op)["const"], out_rank))
        live = _operand(cx, op, op.inputs[0], 0, out_rank)
        ins = [const, live] if op.attrs["const_first"] else [live, const]
    version = 1
    if out_rank > 4 and len({len(cx.shape(t)) for t in op.inputs}) > 1:
        version = {"sub": 3, "div": 2}.get(op.type, 1)  # broadcasting beyond 4-D
    options = (f"{op.type.capitalize()}Options", {"FusedActivationFunction": cx.group.fused})
    cx.add(op.type.upper(), ins, [cx.result()], options, version)


def _batch_norm(cx: EmitContext, op: Operator) -> None:
    # A batch norm with no conv before it: x * s + (beta - mean * s), per channel (IR axis 1).
    p = cx.weights(op)
    s = p["scale"] / np.sqrt(p["var"] + np.float32(op.attrs["epsilon"]))
    shift = p["bias"] - p["mean"] * s
    xs = cx.shape(op.inputs[0])
    per_channel = (1, xs[1]) + (1,) * (len(xs) - 2)

    def constant(suffix: str, v: np.ndarray) -> int:
        return cx.const(f"{op.name}::{suffix}", tflite_layout(v.astype(np.float32).reshape(per_channel), len(xs)))

    scaled = cx.helper("scaled", to_nhwc(xs))
    cx.add("MUL", [cx.x(op.inputs[0]), constant("scale", s)], [scaled], ("MulOptions", {"FusedActivationFunction": 0}))
    options = ("AddOptions", {"FusedActivationFunction": cx.group.fused})
    cx.add("ADD", [scaled, constant("shift", shift)], [cx.result()], options)


# IR operator type -> the emitter that writes it as TFLite operators.
LAYER_EMITTERS: dict[str, Emitter] = {
    "conv2d": _conv,
    "depthwise_conv2d": _conv,
    "fully_connected": _fully_connected,
    "max_pool2d": _pool,
    "avg_pool2d": _pool,
    "global_avg_pool": _global_pool,
    "global_max_pool": _global_pool,
    "add": _binary,
    "sub": _binary,
    "mul": _binary,
    "div": _binary,
    "batch_norm": _batch_norm,
}
