"""Node mappers: one per ONNX op type that can become an IR operator.

A mapper reads its node's inputs and attributes through the ``ImportContext`` and emits the IR
operator; weights (initializers) become attributes such as ``out_channels``. Opsets below 11
use the attribute forms (Clip min/max, Pad pads, Split split, Upsample), which are read too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Tensor
from devicelab.graph.onnx.context import ImportContext, Mapper
from devicelab.graph.onnx.wire import short_float

# Most values of an operand that describes a shape (Reshape's target, Pad's pads, axes, Resize's
# sizes or scales, Split's sizes): such a list becomes Python ints, so it is bounded before it is
# read (a folded constant of millions of values would otherwise become a list of millions).
OPERAND_VALUES = 1024


def _same_pads(
    size: Sequence[int], kernel: Sequence[int], stride: Sequence[int], dilation: Sequence[int], upper: bool
) -> list[int]:
    begins, ends = [], []
    for n, k, s, d in zip(size, kernel, stride, dilation, strict=False):
        eff = d * (k - 1) + 1
        total = max((-(-n // s) - 1) * s + eff - n, 0)
        small, big = total // 2, total - total // 2
        begins.append(small if upper else big)
        ends.append(big if upper else small)
    return [begins[0], begins[1], ends[0], ends[1]]


def _window(
    imp: ImportContext, x: Tensor, a: dict[str, Any], kernel: list[int], name: str, op: str, dilation_ok: bool = True
) -> dict[str, Any]:
    if len(x.shape) != 4 or len(kernel) != 2:
        raise GraphError(
            f"only 2-D windows over a 4-D NCHW input are supported, got input shape {list(x.shape)}", node=name, op=op
        )
    stride = a.get("strides", [1, 1])
    dilation = a.get("dilations", [1, 1])
    if not dilation_ok and dilation != [1, 1]:
        raise GraphError(f"dilations {dilation} are not supported for pooling", node=name, op=op)
    auto_pad = a.get("auto_pad", "NOTSET")
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        pads = _same_pads(x.shape[2:], kernel, stride, dilation, upper=auto_pad == "SAME_UPPER")
    elif auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    elif auto_pad == "NOTSET":
        pads = a.get("pads", [0, 0, 0, 0])  # ONNX order x1_begin, x2_begin, x1_end, x2_end = IR's t, l, b, r
    else:
        raise GraphError(f"auto_pad {auto_pad!r} is not NOTSET, SAME_UPPER, SAME_LOWER or VALID", node=name, op=op)
    out: dict[str, Any] = {"kernel": list(kernel), "stride": list(stride), "pads": list(pads)}
    if dilation_ok:
        out["dilation"] = list(dilation)
    return out


def conv_operator(
    imp: ImportContext,
    name: str,
    op: str,
    a: dict[str, Any],
    x_name: str,
    w_name: str | None,
    bias_name: str | None,
) -> tuple[str, dict[str, Any]]:
    """The IR type and attributes of a convolution of ``x_name`` by the constant weight ``w_name``
    (Conv, and the quantized QLinearConv and ConvInteger, whose operands sit elsewhere)."""
    x = imp.act(x_name, name, op)
    if not w_name or not imp.is_const(w_name):
        raise GraphError(
            "the weight must be an initializer or constant; weights computed at run time are not supported",
            node=name,
            op=op,
        )
    w = imp.const_shape(w_name)
    if len(x.shape) != 4 or len(w) != 4:
        raise GraphError(
            f"only 2-D convolution is supported (4-D NCHW input and weight), got input "
            f"{list(x.shape)} and weight {list(w)}",
            node=name,
            op=op,
        )
    group = int(a.get("group", 1))
    cout, cin_per_group, kh, kw = w
    cin = x.shape[1]
    if cin_per_group * group != cin:
        raise GraphError(
            f"weight shape {list(w)} with group {group} does not fit {cin} input channels", node=name, op=op
        )
    kernel = a.get("kernel_shape", [kh, kw])
    if list(kernel) != [kh, kw]:
        raise GraphError(f"kernel_shape {kernel} differs from the weight's {[kh, kw]}", node=name, op=op)
    bias = bool(bias_name)
    if bias_name and not imp.is_const(bias_name):
        raise GraphError("the bias must be an initializer or constant", node=name, op=op)
    attrs = _window(imp, x, a, kernel, name, op)
    attrs["bias"] = bias
    if group == cin and group > 1 and cout % cin == 0:
        return "depthwise_conv2d", {**attrs, "multiplier": cout // cin}
    return "conv2d", {**attrs, "out_channels": cout, "groups": group}


def _map_conv(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    bias = ins[2] if len(ins) > 2 and ins[2] else None
    ir_type, attrs = conv_operator(imp, name, node.op_type, a, ins[0], ins[1] if len(ins) > 1 else None, bias)
    imp.emit(node, name, ir_type, [ins[0]], attrs)


def _map_gemm(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    imp.act(ins[0], name, op, "left operand")
    if a.get("transA", 0):
        raise GraphError("Gemm with transA=1 is not supported", node=name, op=op)
    has_c = len(ins) > 2 and bool(ins[2])
    if not imp.is_const(ins[1]):
        if a.get("transB", 0) or has_c:
            raise GraphError("Gemm of two activations with transB or C is not supported", node=name, op=op)
        imp.emit(node, name, "matmul", [ins[0], ins[1]], {})
        return
    w = imp.const_shape(ins[1])
    if len(w) != 2:
        raise GraphError(f"the weight must be 2-D, got shape {list(w)}", node=name, op=op)
    if has_c and not imp.is_const(ins[2]):
        raise GraphError("C must be an initializer or constant (a bias)", node=name, op=op)
    n = w[0] if a.get("transB", 0) else w[1]
    imp.emit(node, name, "fully_connected", [ins[0]], {"out_features": n, "bias": has_c})


def _map_matmul(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    imp.act(ins[0], name, op, "left operand")
    if ins[1] in imp.tensors:
        imp.emit(node, name, "matmul", [ins[0], ins[1]], {})
        return
    w = imp.const_shape(ins[1])
    if len(w) != 2:
        raise GraphError(f"a constant right operand must be a 2-D weight, got shape {list(w)}", node=name, op=op)
    imp.emit(node, name, "fully_connected", [ins[0]], {"out_features": w[1], "bias": False})


def _map_binary(ir_type: str) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        if len(ins) != 2:
            raise GraphError(f"expected 2 inputs, got {len(ins)}", node=name, op=node.op_type)
        if ins[0] in imp.tensors and ins[1] in imp.tensors:
            imp.emit(node, name, ir_type, list(ins), {})
            return
        k = 0 if ins[1] in imp.tensors else 1  # index of the constant operand
        c = imp.const(ins[k], name, node.op_type)
        attrs: dict[str, Any] = {"const_shape": [int(d) for d in c.shape], "const_first": k == 0}
        flat = c.reshape(-1)
        if flat.size and bool(np.all(flat == flat[0])):
            attrs["const_value"] = short_float(flat[0], c.dtype)
        imp.emit(node, name, ir_type, [ins[1 - k]], attrs)

    return mapper


def _map_unary(ir_type: str, defaults: dict[str, Any] | None = None) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        attrs = {k: a.get(k, v) for k, v in (defaults or {}).items()}
        imp.emit(node, name, ir_type, [ins[0]], attrs, [node.output[0]])

    return mapper


def _map_clip(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    x = imp.act(ins[0], name, node.op_type)
    if x.dtype in ("int8", "uint8"):
        # Bounds of quantized values are in the quantized domain, whose scale the IR does not keep:
        # a lower bound alone is a ReLU, both bounds a ReLU6 (as quantization tools write them).
        has = [len(ins) > i and bool(ins[i]) for i in (1, 2)] if imp.opset >= 11 else ["min" in a, "max" in a]
        if not has[0]:
            raise GraphError("a Clip of quantized values without a lower bound is not in the vocabulary", node=name)
        imp.emit(node, name, "relu6" if has[1] else "relu", [ins[0]], {})
        return
    bounds: list[float | None] = []
    for i, key in ((1, "min"), (2, "max")):
        if imp.opset >= 11:
            c = imp.optional_const(ins, i, name, node.op_type)
            v = None if c is None else short_float(c.reshape(-1)[0], c.dtype)
        else:
            v = a.get(key)
        bounds.append(None if v is None or not np.isfinite(v) or abs(v) >= 3.4e38 else v)
    lo, hi = bounds
    if lo == 0.0 and hi == 6.0:
        imp.emit(node, name, "relu6", [ins[0]], {})
    else:
        imp.emit(node, name, "clip", [ins[0]], {"min": lo, "max": hi})


def _map_bn(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    for t in ins[1:5]:
        if not imp.is_const(t):
            raise GraphError(
                f"scale, bias, mean and variance must be constants; {t!r} is computed at run time",
                node=name,
                op=node.op_type,
            )
    imp.emit(node, name, "batch_norm", [ins[0]], {"epsilon": a.get("epsilon", 1e-5)}, [node.output[0]])


def _map_pool(ir_type: str) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        x = imp.act(ins[0], name, node.op_type)
        if "kernel_shape" not in a:
            raise GraphError("kernel_shape is required", node=name, op=node.op_type)
        attrs = _window(imp, x, a, a["kernel_shape"], name, node.op_type, dilation_ok=False)
        attrs["ceil_mode"] = bool(a.get("ceil_mode", 0))
        if ir_type == "avg_pool2d":
            attrs["count_include_pad"] = bool(a.get("count_include_pad", 0))
        imp.emit(node, name, ir_type, [ins[0]], attrs, [node.output[0]])

    return mapper


def _map_concat(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    for t in ins:
        imp.act(t, name, node.op_type, "concatenated input")
    imp.emit(node, name, "concat", list(ins), {"axis": a.get("axis", 1)})


def _map_split(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    x = imp.act(ins[0], name, node.op_type)
    axis = a.get("axis", 0)
    if not -len(x.shape) <= axis < len(x.shape):
        raise GraphError(f"axis {axis} is out of range for shape {list(x.shape)}", node=name, op=node.op_type)
    if any(not t for t in node.output):
        raise GraphError("unnamed (skipped) Split outputs are not supported", node=name, op=node.op_type)
    given = imp.optional_const(ins, 1, name, node.op_type, OPERAND_VALUES)
    if given is not None:
        sizes = [int(s) for s in given.reshape(-1)]
    elif "split" in a:
        sizes = list(a["split"])
    else:
        total, parts = x.shape[axis], len(node.output)
        chunk = -(-total // parts)  # ONNX: equal chunks, the last one smaller when it does not divide
        sizes = [min(chunk, total - i * chunk) for i in range(parts)]
    imp.emit(node, name, "split", [ins[0]], {"axis": axis, "sizes": sizes})


def _map_pad(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    rank = len(x.shape)
    if len(ins) > 1 and ins[1]:
        pads = [int(p) for p in imp.const(ins[1], name, op, OPERAND_VALUES).reshape(-1)]
        c = imp.optional_const(ins, 2, name, op)
        value = 0.0 if c is None or c.size == 0 else short_float(c.reshape(-1)[0], c.dtype)
        axes = imp.optional_const(ins, 3, name, op, OPERAND_VALUES)
        if axes is not None:
            axes_list = [int(v) % rank for v in axes.reshape(-1)]
            full = [0] * (2 * rank)
            for i, ax in enumerate(axes_list):
                full[ax], full[ax + rank] = pads[i], pads[i + len(axes_list)]
            pads = full
    else:
        pads, value = list(a.get("pads", [0] * (2 * rank))), a.get("value", 0.0)
    mode = a.get("mode", "constant")
    imp.emit(node, name, "pad", [ins[0]], {"pads": pads, "mode": mode, "value": value})


def _map_reduce(ir_type: str, axes_input_from: int) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        axes = None
        if imp.opset >= axes_input_from:
            c = imp.optional_const(ins, 1, name, node.op_type, OPERAND_VALUES)
            axes = None if c is None else [int(v) for v in c.reshape(-1)]
        else:
            axes = a.get("axes")
        if not axes and a.get("noop_with_empty_axes", 0):
            imp.alias[node.output[0]] = ins[0]
            return
        imp.emit(node, name, ir_type, [ins[0]], {"axes": axes or None, "keepdims": bool(a.get("keepdims", 1))})

    return mapper


def _map_reshape(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    if len(ins) > 1 and imp.is_const(ins[1]):
        target = [int(v) for v in imp.const(ins[1], name, op, OPERAND_VALUES).reshape(-1)]
        if a.get("allowzero", 0) and 0 in target:
            raise GraphError(f"allowzero reshape to {target} makes an empty tensor", node=name, op=op)
    elif len(ins) > 1:
        target = list(imp.inferred(node.output[0], name, op, "the target shape is computed at run time"))
    else:
        target = list(a.get("shape", x.shape))  # opset < 5 form
    imp.emit(node, name, "reshape", [ins[0]], {"shape": target})


def _map_squeeze(unsqueeze: bool) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        op = node.op_type
        x = imp.act(ins[0], name, op)
        c = imp.optional_const(ins, 1, name, op, OPERAND_VALUES)
        axes = [int(v) for v in c.reshape(-1)] if c is not None else a.get("axes")
        shape = list(x.shape)
        if unsqueeze:
            if not axes:
                raise GraphError("Unsqueeze needs axes", node=name, op=op)
            rank = len(shape) + len(axes)
            for ax in sorted(v % rank for v in axes):
                shape.insert(ax, 1)
        else:
            drop = {v % len(shape) for v in axes} if axes else {i for i, d in enumerate(shape) if d == 1}
            if any(shape[i] != 1 for i in drop):
                raise GraphError(f"cannot squeeze axes {sorted(drop)} of shape {list(x.shape)}", node=name, op=op)
            shape = [d for i, d in enumerate(shape) if i not in drop]
        imp.emit(node, name, "reshape", [ins[0]], {"shape": shape})

    return mapper


def _map_transpose(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    imp.emit(node, name, "transpose", [ins[0]], {"perm": a.get("perm")})


def _map_softmax(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # Before opset 13 Softmax flattened the input at ``axis`` (default 1); the shape is the same.
    imp.emit(node, name, "softmax", [ins[0]], {"axis": a.get("axis", -1 if imp.opset >= 13 else 1)})


def _map_flatten(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    imp.emit(node, name, "flatten", [ins[0]], {"axis": a.get("axis", 1)})


def _map_resize(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    mode = {"bilinear": "linear"}.get(a.get("mode", "nearest"), a.get("mode", "nearest"))
    if mode not in ("nearest", "linear"):
        raise GraphError(f"resize mode {mode!r} is not in the vocabulary (nearest or linear)", node=name, op=op)
    if len(x.shape) != 4:
        raise GraphError(f"only 4-D NCHW resize is supported, got input shape {list(x.shape)}", node=name, op=op)
    axes = a.get("axes")
    if axes is not None and sorted(v % 4 for v in axes) != [2, 3]:
        raise GraphError(f"resize over axes {axes} is not supported (only H and W)", node=name, op=op)
    if op == "Upsample" or imp.opset < 11:
        scales_c = imp.optional_const(ins, 1, name, op, OPERAND_VALUES) if len(ins) > 1 else None
        scales = list(scales_c.reshape(-1)) if scales_c is not None else a.get("scales")
        sizes = None
    else:
        scales_c = (
            imp.optional_const(ins, 2, name, op, OPERAND_VALUES) if len(ins) > 2 and imp.is_const(ins[2]) else None
        )
        sizes_c = (
            imp.optional_const(ins, 3, name, op, OPERAND_VALUES) if len(ins) > 3 and imp.is_const(ins[3]) else None
        )
        scales = list(scales_c.reshape(-1)) if scales_c is not None and scales_c.size else None
        sizes = [int(v) for v in sizes_c.reshape(-1)] if sizes_c is not None and sizes_c.size else None
    attrs: dict[str, Any] = {"mode": mode, "align_corners": a.get("coordinate_transformation_mode") == "align_corners"}
    if a.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        out = imp.inferred(node.output[0], name, op, "the output size depends on keep_aspect_ratio_policy")
        attrs["size"] = list(out[2:4])
    elif sizes is not None:
        attrs["size"] = sizes[-2:]
    elif scales is not None:
        if len(scales) == 4 and (scales[0] != 1 or scales[1] != 1):
            raise GraphError(f"resize scales {scales} change N or C; only H and W may be scaled", node=name, op=op)
        attrs["scales"] = [float(s) for s in scales[-2:]]
    else:
        out = imp.inferred(node.output[0], name, op, "the output size is computed at run time")
        attrs["size"] = list(out[2:4])
    imp.emit(node, name, "resize", [ins[0]], attrs, [node.output[0]])


# ONNX op type -> the mapper that turns its node into IR operators.
MAPPERS: dict[str, Mapper] = {
    "Conv": _map_conv,
    "Gemm": _map_gemm,
    "MatMul": _map_matmul,
    "MaxPool": _map_pool("max_pool2d"),
    "AveragePool": _map_pool("avg_pool2d"),
    "GlobalAveragePool": _map_unary("global_avg_pool"),
    "GlobalMaxPool": _map_unary("global_max_pool"),
    "Add": _map_binary("add"),
    "Sub": _map_binary("sub"),
    "Mul": _map_binary("mul"),
    "Div": _map_binary("div"),
    "Relu": _map_unary("relu"),
    "Clip": _map_clip,
    "HardSwish": _map_unary("hard_swish"),
    # Any alpha / beta reads as hard_sigmoid: the cost is the same and Keras uses alpha 0.2.
    "HardSigmoid": _map_unary("hard_sigmoid"),
    "Sigmoid": _map_unary("sigmoid"),
    "Tanh": _map_unary("tanh"),
    "LeakyRelu": _map_unary("leaky_relu", {"alpha": 0.01}),
    "Elu": _map_unary("elu", {"alpha": 1.0}),
    "Gelu": _map_unary("gelu"),
    "Erf": _map_unary("erf"),
    "BatchNormalization": _map_bn,
    "Concat": _map_concat,
    "Split": _map_split,
    "Pad": _map_pad,
    "ReduceMean": _map_reduce("reduce_mean", 18),
    "ReduceMax": _map_reduce("reduce_max", 18),
    "ReduceSum": _map_reduce("reduce_sum", 13),
    "Reshape": _map_reshape,
    "Flatten": _map_flatten,
    "Squeeze": _map_squeeze(unsqueeze=False),
    "Unsqueeze": _map_squeeze(unsqueeze=True),
    "Transpose": _map_transpose,
    "Softmax": _map_softmax,
    "Resize": _map_resize,
    "Upsample": _map_resize,
}
