"""Emitters of quantized operators: the ONNX nodes of an IR operator whose input is int8 / uint8.

The IR keeps no scales or zero points, so every quantized tensor is written with the same fixed
ones (``SCALE``, and ``zero_point``: 0 for int8, 128 for uint8) and weights are seeded int8 values:
the model runs and has a quantized model's kernels, which is what latency needs. The operators
onnxruntime runs in the QOperator form use ``QLinearConv`` / ``QLinearMatMul`` (ONNX) and
``QLinearAdd``, ``QLinearMul``, ``QLinearGlobalAveragePool``, ``QLinearAveragePool``,
``QLinearSigmoid``, ``QLinearLeakyRelu`` (onnxruntime's ``com.microsoft`` domain); data movement
(reshape, concat, pooling by max, ...) runs on int8 as it is; a ``relu`` is a Clip at the zero
point. The naming contract of ``export`` holds: the node writing ``X``'s output is named ``X``.
"""

from __future__ import annotations

import math

import numpy as np

from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Operator
from devicelab.graph.onnx.emitters import EMITTERS, Emitter, ExportContext

SCALE = 1.0 / 16.0  # every quantized tensor's scale: inputs drawn from N(0, 1) fit int8 within 8 sigma
MICROSOFT = "com.microsoft"
_NUMPY = {"int8": np.int8, "uint8": np.uint8}


def zero_point(dtype: str) -> int:
    """The fixed zero point of a quantized tensor of ``dtype``."""
    return 128 if dtype == "uint8" else 0


def _qparams(ex: ExportContext, op: Operator, dtype: str, suffix: str) -> list[str]:
    """[scale, zero point] initializers of a ``dtype`` tensor, named ``X::<suffix>_scale`` / ``_zero_point``."""
    scale = ex.init(f"{op.name}::{suffix}_scale", np.asarray(SCALE, dtype=np.float32))
    zp = ex.init(f"{op.name}::{suffix}_zero_point", np.asarray(zero_point(dtype), dtype=_NUMPY[dtype]))
    return [scale, zp]


def _int8_weight(ex: ExportContext, op: Operator, shape: tuple[int, ...], fan_in: int) -> list[str]:
    """A seeded int8 weight (scaled by fan-in, as the float exporter's) with its scale and zero point."""
    w_scale = math.sqrt(1.0 / fan_in) / 32.0
    values = np.clip(np.rint(ex.normal(shape, 32.0, np.float32)), -127, 127).astype(np.int8)
    return [
        ex.init(f"{op.name}::weight", values),
        ex.init(f"{op.name}::weight_scale", np.asarray(w_scale, dtype=np.float32)),
        ex.init(f"{op.name}::weight_zero_point", np.asarray(0, dtype=np.int8)),
    ]


def _emit_quantize(ex: ExportContext, op: Operator) -> None:
    x, dtype = op.inputs[0], op.attrs["dtype"]
    source = ex.dtype(x)
    if source in _NUMPY:  # requantizing (TFLite's QUANTIZE of an int8 tensor): back to float first
        real = f"{op.name}::dequantized"
        ex.node("DequantizeLinear", [x, *_qparams(ex, op, source, "input")], [real], f"{op.name}::dequantize")
        x = real
    ex.node("QuantizeLinear", [x, *_qparams(ex, op, dtype, "output")], list(op.outputs), op.name)


def _emit_dequantize(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    dtype = ex.dtype(x)
    if dtype == "int32":  # int32 is dequantized with a zero point of 0, which ONNX lets one leave out
        scale = ex.init(f"{op.name}::input_scale", np.asarray(SCALE * SCALE, dtype=np.float32))
        ex.node("DequantizeLinear", [x, scale], list(op.outputs), op.name)
        return
    ex.node("DequantizeLinear", [x, *_qparams(ex, op, dtype, "input")], list(op.outputs), op.name)


def _conv_shape(ex: ExportContext, op: Operator) -> tuple[int, int, int, int, int]:
    a, cin = op.attrs, ex.shape(op.inputs[0])[1]
    if op.type == "depthwise_conv2d":
        group, cout = cin, cin * a["multiplier"]
    else:
        group, cout = a["groups"], a["out_channels"]
    kh, kw = a["kernel"]
    return cin, cout, group, kh, kw


def _conv_attrs(op: Operator, group: int) -> dict[str, object]:
    a = op.attrs
    return {
        "kernel_shape": a["kernel"],
        "strides": a["stride"],
        "pads": a["pads"],
        "dilations": a["dilation"],
        "group": group,
    }


def _emit_qlinear_conv(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    dtype = ex.dtype(x)
    cin, cout, group, kh, kw = _conv_shape(ex, op)
    q = _qparams(ex, op, dtype, "input")
    inputs = [x, *q, *_int8_weight(ex, op, (cout, cin // group, kh, kw), (cin // group) * kh * kw), *q]
    if op.attrs["bias"]:
        inputs.append(ex.init(f"{op.name}::bias", np.zeros((cout,), dtype=np.int32)))
    ex.node("QLinearConv", inputs, list(op.outputs), op.name, **_conv_attrs(op, group))


def _emit_conv_integer(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    cin, cout, group, kh, kw = _conv_shape(ex, op)
    weight = _int8_weight(ex, op, (cout, cin // group, kh, kw), (cin // group) * kh * kw)[0]
    zp = _qparams(ex, op, ex.dtype(x), "input")[1]
    ex.node("ConvInteger", [x, weight, zp], list(op.outputs), op.name, **_conv_attrs(op, group))


def _emit_matmul_integer(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    zp = _qparams(ex, op, ex.dtype(x), "input")[1]
    if len(op.inputs) == 2:
        y = op.inputs[1]
        ex.node("MatMulInteger", [x, y, zp, _qparams(ex, op, ex.dtype(y), "other")[1]], list(op.outputs), op.name)
        return
    k = ex.shape(x)[-1]
    weight = _int8_weight(ex, op, (k, op.attrs["out_features"]), k)[0]
    ex.node("MatMulInteger", [x, weight, zp], list(op.outputs), op.name)


def _emit_qlinear_fc(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    dtype = ex.dtype(x)
    k, n = ex.shape(x)[-1], op.attrs["out_features"]
    q = _qparams(ex, op, dtype, "input")
    inputs = [x, *q, *_int8_weight(ex, op, (k, n), k), *q]
    if not op.attrs["bias"]:
        ex.node("QLinearMatMul", inputs, list(op.outputs), op.name)
        return
    product = f"{op.name}::product"
    ex.node("QLinearMatMul", inputs, [product], f"{op.name}::matmul")
    bias = ex.init(f"{op.name}::bias", np.full((n,), zero_point(dtype), dtype=_NUMPY[dtype]))
    ex.node("QLinearAdd", [product, *q, bias, *q, *q], list(op.outputs), op.name, domain=MICROSOFT)


def _emit_qlinear_matmul(ex: ExportContext, op: Operator) -> None:
    x, y = op.inputs
    qx, qy = _qparams(ex, op, ex.dtype(x), "input"), _qparams(ex, op, ex.dtype(y), "other")
    ex.node("QLinearMatMul", [x, *qx, y, *qy, *qx], list(op.outputs), op.name)


_QLINEAR_BINARY = {"add": "QLinearAdd", "mul": "QLinearMul"}


def _emit_qlinear_binary(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    dtype = ex.dtype(x)
    q = _qparams(ex, op, dtype, "input")
    if len(op.inputs) == 2:
        left, right = op.inputs
    else:
        # a constant of the quantized dtype: 1.0 at the fixed scale (a neutral scale for mul)
        value = np.full(op.attrs["const_shape"], zero_point(dtype) + round(1.0 / SCALE), dtype=_NUMPY[dtype])
        const = ex.init(f"{op.name}::const", value)
        left, right = (const, x) if op.attrs["const_first"] else (x, const)
    ex.node(_QLINEAR_BINARY[op.type], [left, *q, right, *q, *q], list(op.outputs), op.name, domain=MICROSOFT)


def _emit_qlinear_unary(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    q = _qparams(ex, op, ex.dtype(x), "input")
    attrs: dict[str, object] = {}
    if op.type == "global_avg_pool":
        onnx_type, attrs = "QLinearGlobalAveragePool", {"channels_last": 0}
    elif op.type == "avg_pool2d":
        a = op.attrs
        onnx_type = "QLinearAveragePool"
        attrs = {
            "kernel_shape": a["kernel"],
            "strides": a["stride"],
            "pads": a["pads"],
            "ceil_mode": int(a["ceil_mode"]),
            "count_include_pad": int(a["count_include_pad"]),
        }
    elif op.type == "sigmoid":
        onnx_type = "QLinearSigmoid"
    else:
        onnx_type, attrs = "QLinearLeakyRelu", {"alpha": op.attrs["alpha"]}
    ex.node(onnx_type, [x, *q, *q], list(op.outputs), op.name, domain=MICROSOFT, **attrs)


def _emit_quantized_clip(ex: ExportContext, op: Operator) -> None:
    """relu, relu6 and clip on quantized values: a Clip at the bounds' quantized values."""
    x = op.inputs[0]
    dtype = ex.dtype(x)
    info = np.iinfo(_NUMPY[dtype])
    if op.type == "relu":
        lo, hi = 0.0, None
    elif op.type == "relu6":
        lo, hi = 0.0, 6.0
    else:
        lo, hi = op.attrs["min"], op.attrs["max"]

    def bound(value: float | None, suffix: str) -> str:
        if value is None:
            return ""
        q = int(np.clip(round(value / SCALE) + zero_point(dtype), info.min, info.max))
        return ex.init(f"{op.name}::{suffix}", np.asarray(q, dtype=_NUMPY[dtype]))

    inputs = [x, bound(lo, "min"), bound(hi, "max")]
    while inputs[-1] == "":
        inputs.pop()
    ex.node("Clip", inputs, list(op.outputs), op.name)


# Operators whose ONNX form moves or picks values and so runs on int8 / uint8 as it is.
_AS_IS = ("max_pool2d", "concat", "split", "pad", "reshape", "flatten", "transpose", "channel_shuffle", "resize")
MIN_INT_OPSET = 12  # MaxPool and Clip read int8 / uint8 from opset 12 on
_NEED_MIN_INT_OPSET = ("max_pool2d", "relu", "relu6", "clip")

# IR operator type -> its emitter when its input is quantized.
QUANT_EMITTERS: dict[str, Emitter] = {
    "quantize_linear": _emit_quantize,
    "dequantize_linear": _emit_dequantize,
    "conv2d": _emit_qlinear_conv,
    "depthwise_conv2d": _emit_qlinear_conv,
    "conv_integer": _emit_conv_integer,
    "matmul_integer": _emit_matmul_integer,
    "fully_connected": _emit_qlinear_fc,
    "matmul": _emit_qlinear_matmul,
    "add": _emit_qlinear_binary,
    "mul": _emit_qlinear_binary,
    "global_avg_pool": _emit_qlinear_unary,
    "avg_pool2d": _emit_qlinear_unary,
    "sigmoid": _emit_qlinear_unary,
    "leaky_relu": _emit_qlinear_unary,
    "relu": _emit_quantized_clip,
    "relu6": _emit_quantized_clip,
    "clip": _emit_quantized_clip,
    **{t: EMITTERS[t] for t in _AS_IS},
}


def quantized_emitter(ex: ExportContext, op: Operator) -> Emitter:
    """The emitter of an operator on quantized values, or a ``GraphError`` saying it has none."""
    emit = QUANT_EMITTERS.get(op.type)
    if emit is None:
        raise GraphError(
            f"operator type {op.type!r} on {ex.dtype(op.inputs[0])} tensors has no quantized ONNX export "
            f"(quantized types: {', '.join(sorted(QUANT_EMITTERS))}); dequantize_linear before it",
            node=op.name,
            op=op.type,
        )
    if op.type in _NEED_MIN_INT_OPSET and ex.opset < MIN_INT_OPSET:
        raise GraphError(
            f"{op.type} of int8 / uint8 needs opset {MIN_INT_OPSET} or later, not {ex.opset}",
            node=op.name,
            op=op.type,
        )
    return emit
