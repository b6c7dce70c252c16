"""One emitter per IR operator type: the TFLite operators, constants and layouts that compute it.

An emitter sees the export through ``EmitContext`` and writes one ``Group``: an IR operator
together with the batch norm folded into its weights and the activation fused into its
``fused_activation_function``. The TFLite tensor a group writes is named after its operator;
helper tensors of a multi-operator decomposition (the PAD before a convolution, the LOGISTIC of a
swish) are named ``X::<suffix>``, so ``name.split("::")[0]`` always gives the IR operator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from devicelab.graph.builder import conv_pads
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Operator
from devicelab.graph.ops import Shape
from devicelab.graph.tflite.context import NCHW_FROM_NHWC, NHWC_TO_NCHW_AXIS
from devicelab.graph.tflite.encode import Options

SAME, VALID = 0, 1  # tflite.Padding
FLOAT32_LOWEST = float(np.finfo(np.float32).min)  # what max pooling's explicit padding holds


def to_nhwc(shape: Sequence[int]) -> list[int]:
    """A 4-D NCHW shape as NHWC; other ranks unchanged."""
    if len(shape) == 4:
        n, c, h, w = shape
        return [n, h, w, c]
    return list(shape)


def tflite_axis(axis: int, rank: int) -> int:
    """The TFLite axis of an IR axis of a tensor of this rank."""
    return NCHW_FROM_NHWC[axis] if rank == 4 else axis


def activation_code(op: Operator) -> int | None:
    """The ``fused_activation_function`` that computes ``op``, or None if it cannot be fused.

    TANH (4) is in the schema but not fused: LiteRT's conv kernels clamp instead of applying it
    and its fully connected kernel refuses it, so the converter keeps a TANH operator.
    """
    if op.type in ("relu", "relu6"):
        return {"relu": 1, "relu6": 3}[op.type]
    if op.type == "clip":
        return {(0.0, None): 1, (-1.0, 1.0): 2, (0.0, 6.0): 3}.get((op.attrs["min"], op.attrs["max"]))
    return None


@dataclass
class Group:
    """An IR operator with the batch norm folded into it and the activation fused into it."""

    op: Operator
    bn: Operator | None = None
    act: Operator | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The IR operators the group computes, in graph order."""
        return tuple(o.name for o in (self.op, self.bn, self.act) if o is not None)

    @property
    def outputs(self) -> list[str]:
        """The IR tensors that the group's result holds."""
        last = self.act or self.bn
        return list(last.outputs) if last is not None else list(self.op.outputs)

    @property
    def fused(self) -> int:
        """The group's ``fused_activation_function`` (0: none)."""
        code = activation_code(self.act) if self.act is not None else None
        return code or 0


class EmitContext(Protocol):
    """The export in progress, as the emitters see it."""

    group: Group  # the group being written

    def shape(self, t: str) -> Shape:
        """IR (NCHW) shape of an IR tensor."""
        ...

    def x(self, t: str) -> int:
        """The TFLite tensor that holds IR activation ``t``."""
        ...

    def weights(self, op: Operator) -> dict[str, np.ndarray]:
        """The seeded draws of ``op`` in ONNX layouts (``operator_weights``), by suffix."""
        ...

    def const(self, name: str, value: Any, weight: bool = True) -> int:
        """A float32 constant; in fp16 a weight becomes float16 data and a DEQUANTIZE."""
        ...

    def ints(self, name: str, values: Sequence[int], shape: Sequence[int] | None = None) -> int:
        """An int32 constant (shape: a vector of the values unless given)."""
        ...

    def result(self, k: int = 0) -> int:
        """The TFLite tensor of the group's output ``k``, named after its operator."""
        ...

    def helper(self, suffix: str, shape: Sequence[int]) -> int:
        """An intermediate float32 tensor named ``X::<suffix>`` (TFLite shape)."""
        ...

    def add(
        self, builtin: str, inputs: list[int], outputs: list[int], options: Options | None = None, version: int = 1
    ) -> None:
        """Append a TFLite operator."""
        ...


# Writes one group as TFLite operators through the context.
Emitter = Callable[[EmitContext, Operator], None]


def cannot(op: Operator, why: str) -> GraphError:
    """The error for an IR operator that TFLite cannot express."""
    return GraphError(f"TFLite cannot express this operator: {why}", node=op.name, op=op.type)


def _tflite_layout(value: np.ndarray, rank: int) -> np.ndarray:
    """A constant broadcast against a tensor of ``rank``, in that tensor's TFLite layout."""
    if rank != 4 or value.ndim == 0:
        return value
    return value.reshape((1,) * (4 - value.ndim) + value.shape).transpose(0, 2, 3, 1)


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
    return factor.astype(np.float32).reshape(1, covered.shape[0], covered.shape[1], 1)


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
    cx.add("RESHAPE", [cx.x(t), cx.ints(f"{op.name}::broadcast{k}_shape", target)], [out], _reshape_options(target))
    return out


def _binary(cx: EmitContext, op: Operator) -> None:
    out_rank = len(cx.shape(op.outputs[0]))
    if len(op.inputs) == 2:
        ins = [_operand(cx, op, t, k, out_rank) for k, t in enumerate(op.inputs)]
    else:
        const = cx.const(f"{op.name}::const", _tflite_layout(cx.weights(op)["const"], out_rank))
        live = _operand(cx, op, op.inputs[0], 0, out_rank)
        ins = [const, live] if op.attrs["const_first"] else [live, const]
    version = 1
    if out_rank > 4 and len({len(cx.shape(t)) for t in op.inputs}) > 1:
        version = {"sub": 3, "div": 2}.get(op.type, 1)  # broadcasting beyond 4-D
    options = (f"{op.type.capitalize()}Options", {"FusedActivationFunction": cx.group.fused})
    cx.add(op.type.upper(), ins, [cx.result()], options, version)


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


def _batch_norm(cx: EmitContext, op: Operator) -> None:
    # A batch norm with no conv before it: x * s + (beta - mean * s), per channel (IR axis 1).
    p = cx.weights(op)
    s = p["scale"] / np.sqrt(p["var"] + np.float32(op.attrs["epsilon"]))
    shift = p["bias"] - p["mean"] * s
    xs = cx.shape(op.inputs[0])
    per_channel = (1, xs[1]) + (1,) * (len(xs) - 2)

    def constant(suffix: str, v: np.ndarray) -> int:
        return cx.const(f"{op.name}::{suffix}", _tflite_layout(v.astype(np.float32).reshape(per_channel), len(xs)))

    scaled = cx.helper("scaled", to_nhwc(xs))
    cx.add("MUL", [cx.x(op.inputs[0]), constant("scale", s)], [scaled], ("MulOptions", {"FusedActivationFunction": 0}))
    options = ("AddOptions", {"FusedActivationFunction": cx.group.fused})
    cx.add("ADD", [scaled, constant("shift", shift)], [cx.result()], options)


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


def _reshape_options(target: list[int]) -> Options:
    return ("ReshapeOptions", {"NewShape": target})


def _reshape(cx: EmitContext, op: Operator) -> None:
    # Layout is kept by rank only: a 4-D tensor is NHWC, so the element order of a reshape that
    # involves one follows TFLite's layout, as the reader's does (exact for [1, C, 1, 1] -> [1, C]).
    target = to_nhwc(cx.shape(op.outputs[0]))
    shape = cx.ints(f"{op.name}::shape", target)
    cx.add("RESHAPE", [cx.x(op.inputs[0]), shape], [cx.result()], _reshape_options(target))


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
    cx.add("RESHAPE", [cx.x(op.inputs[0]), shape], [grouped], _reshape_options(grouped_shape))
    transposed = cx.helper("transposed", [n, h, w, c // g, g])
    perm = cx.ints(f"{op.name}::perm", [0, 1, 2, 4, 3])
    cx.add("TRANSPOSE", [grouped, perm], [transposed], ("TransposeOptions", {}), 4)
    target = [n, h, w, c]
    cx.add("RESHAPE", [transposed, cx.ints(f"{op.name}::shape", target)], [cx.result()], _reshape_options(target))


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
EMITTERS: dict[str, Emitter] = {
    "conv2d": _conv,
    "depthwise_conv2d": _conv,
    "fully_connected": _fully_connected,
    "matmul": _matmul,
    "max_pool2d": _pool,
    "avg_pool2d": _pool,
    "global_avg_pool": _global_pool,
    "global_max_pool": _global_pool,
    "add": _binary,
    "sub": _binary,
    "mul": _binary,
    "div": _binary,
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
    "batch_norm": _batch_norm,
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
