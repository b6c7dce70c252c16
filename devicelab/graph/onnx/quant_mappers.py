"""Node mappers of quantized ONNX models: QDQ's QuantizeLinear / DequantizeLinear, the QOperator
form's QLinear* operators (ONNX's and onnxruntime's ``com.microsoft`` ones) and the
integer-accumulator ConvInteger / MatMulInteger.

The IR keeps no scales or zero points (as it keeps no weights): a ``QLinearConv`` becomes a
``conv2d`` on uint8 (or int8) tensors, its output in the input's dtype; a QuantizeLinear of an
activation a ``quantize_linear`` that records the dtype it writes. A QuantizeLinear or
DequantizeLinear of a constant (a quantized weight in QDQ form) never becomes an operator: the
importer folds it, lazily (``importer``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from devicelab.graph.errors import GraphError
from devicelab.graph.onnx.context import ImportContext, Mapper
from devicelab.graph.onnx.mappers import conv_operator

# Operators of onnxruntime's ``com.microsoft`` domain the reader knows (its quantization tool writes
# them in the QOperator format); every other custom-domain operator is refused.
MICROSOFT_OPS = frozenset(
    {
        "QLinearAdd",
        "QLinearMul",
        "QLinearGlobalAveragePool",
        "QLinearAveragePool",
        "QLinearConcat",
        "QLinearSigmoid",
        "QLinearLeakyRelu",
        "QGemm",
    }
)
_QUANTIZED = {np.dtype(np.int8): "int8", np.dtype(np.uint8): "uint8"}


def zero_point_dtype(imp: ImportContext, ins: list[str], index: int, name: str, op: str, default: str) -> str:
    """The IR dtype of a zero point operand (int8 or uint8; ``default`` when it is absent)."""
    if len(ins) <= index or not ins[index]:
        return default
    if not imp.is_const(ins[index]):
        raise GraphError(f"the zero point {ins[index]!r} must be a constant", node=name, op=op)
    dtype = np.asarray(imp.const(ins[index], name, op, max_values=1 << 16)).dtype
    if dtype not in _QUANTIZED:
        raise GraphError(f"quantization to {dtype} is not in the vocabulary (int8 and uint8 are)", node=name, op=op)
    return _QUANTIZED[dtype]


def _quantized_input(imp: ImportContext, t: str, name: str, op: str, what: str = "input") -> str:
    x = imp.act(t, name, op, what)
    if x.dtype not in ("int8", "uint8"):
        raise GraphError(f"the {what} {t!r} is {x.dtype}, expected int8 or uint8", node=name, op=op)
    return x.dtype


def _same_dtype_out(imp: ImportContext, x: str, ins: list[str], zp_index: int, name: str, op: str) -> None:
    """A QLinear operator writes its input's dtype in the IR; refuse one that changes it."""
    x_dtype = _quantized_input(imp, x, name, op)
    out = zero_point_dtype(imp, ins, zp_index, name, op, x_dtype)
    if out != x_dtype:
        raise GraphError(
            f"reads {x_dtype} and writes {out}; the vocabulary's quantized operators keep their input's dtype",
            node=name,
            op=op,
        )


def _map_quantize(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    if x.dtype not in ("float32", "float16", "int8", "uint8"):
        raise GraphError(f"quantizes a {x.dtype} tensor; float inputs are quantized", node=name, op=op)
    if a.get("block_size", 0):
        raise GraphError("blocked quantization (block_size) is not in the vocabulary", node=name, op=op)
    default = {onnx.TensorProto.INT8: "int8", onnx.TensorProto.UINT8: "uint8"}.get(a.get("output_dtype", 0), "uint8")
    if a.get("output_dtype", 0) not in (0, onnx.TensorProto.INT8, onnx.TensorProto.UINT8):
        raise GraphError("quantization to types other than int8 and uint8 is not in the vocabulary", node=name, op=op)
    dtype = zero_point_dtype(imp, ins, 2, name, op, default)
    imp.emit(node, name, "quantize_linear", [ins[0]], {"dtype": dtype}, [node.output[0]])


def _map_dequantize(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    op = node.op_type
    x = imp.act(ins[0], name, op)
    if x.dtype not in ("int8", "uint8", "int32"):
        raise GraphError(f"dequantizes a {x.dtype} tensor; int8, uint8 and int32 are", node=name, op=op)
    if a.get("block_size", 0):
        raise GraphError("blocked quantization (block_size) is not in the vocabulary", node=name, op=op)
    imp.emit(node, name, "dequantize_linear", [ins[0]], {}, [node.output[0]])


def _map_qlinear_conv(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point[, B]
    op = node.op_type
    if len(ins) < 8:
        raise GraphError(f"QLinearConv takes 8 or 9 inputs, got {len(ins)}", node=name, op=op)
    _same_dtype_out(imp, ins[0], ins, 7, name, op)
    bias = ins[8] if len(ins) > 8 and ins[8] else None
    ir_type, attrs = conv_operator(imp, name, op, a, ins[0], ins[3], bias)
    imp.emit(node, name, ir_type, [ins[0]], attrs)


def _map_conv_integer(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # x, w[, x_zero_point, w_zero_point]
    op = node.op_type
    _quantized_input(imp, ins[0], name, op)
    ir_type, attrs = conv_operator(imp, name, op, a, ins[0], ins[1] if len(ins) > 1 else None, None)
    if ir_type == "depthwise_conv2d":  # conv_integer has groups, not a multiplier
        cin = imp.act(ins[0], name, op).shape[1]
        multiplier = attrs.pop("multiplier")
        attrs.update(out_channels=cin * multiplier, groups=cin)
    imp.emit(node, name, "conv_integer", [ins[0]], attrs)


def _matmul_like(
    imp: ImportContext, node: onnx.NodeProto, name: str, a_name: str, b_name: str, float_type: str, int_type: str
) -> tuple[str, list[str], dict[str, Any]]:
    """A product of ``a_name`` by an activation (``float_type`` on two inputs) or by a constant 2-D
    weight (``int_type`` with its columns)."""
    op = node.op_type
    if b_name in imp.tensors:
        return float_type, [a_name, b_name], {}
    w = imp.const_shape(b_name)
    if len(w) != 2:
        raise GraphError(f"a constant right operand must be a 2-D weight, got shape {list(w)}", node=name, op=op)
    if int_type == "fully_connected":
        return int_type, [a_name], {"out_features": w[1], "bias": False}
    return int_type, [a_name], {"out_features": w[1]}


def _map_qlinear_matmul(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point
    op = node.op_type
    if len(ins) != 8:
        raise GraphError(f"QLinearMatMul takes 8 inputs, got {len(ins)}", node=name, op=op)
    _same_dtype_out(imp, ins[0], ins, 7, name, op)
    ir_type, inputs, attrs = _matmul_like(imp, node, name, ins[0], ins[3], "matmul", "fully_connected")
    imp.emit(node, name, ir_type, inputs, attrs)


def _map_matmul_integer(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # A, B[, a_zero_point, b_zero_point]
    op = node.op_type
    _quantized_input(imp, ins[0], name, op, "left operand")
    ir_type, inputs, attrs = _matmul_like(imp, node, name, ins[0], ins[1], "matmul_integer", "matmul_integer")
    imp.emit(node, name, ir_type, inputs, attrs)


def _map_qgemm(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # A, a_scale, a_zero_point, B, b_scale, b_zero_point, C, y_scale, y_zero_point
    op = node.op_type
    if len(ins) < 8 or not ins[7]:
        raise GraphError("QGemm without y_scale writes float32; only its quantized form is read", node=name, op=op)
    if a.get("transA", 0):
        raise GraphError("QGemm with transA=1 is not supported", node=name, op=op)
    _same_dtype_out(imp, ins[0], ins, 8, name, op)
    if not imp.is_const(ins[3]):
        raise GraphError("QGemm's B must be a constant weight", node=name, op=op)
    w = imp.const_shape(ins[3])
    if len(w) != 2:
        raise GraphError(f"the weight must be 2-D, got shape {list(w)}", node=name, op=op)
    has_c = len(ins) > 6 and bool(ins[6])
    if has_c and not imp.is_const(ins[6]):
        raise GraphError("C must be a constant (a bias)", node=name, op=op)
    n = w[0] if a.get("transB", 0) else w[1]
    imp.emit(node, name, "fully_connected", [ins[0]], {"out_features": n, "bias": has_c})


def _map_qlinear_binary(ir_type: str) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        # A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point
        op = node.op_type
        if len(ins) < 7:
            raise GraphError(f"{op} takes 7 or 8 inputs, got {len(ins)}", node=name, op=op)
        left, right = ins[0], ins[3]
        first = left if left in imp.tensors else right
        _same_dtype_out(imp, first, ins, 7, name, op)
        if left in imp.tensors and right in imp.tensors:
            imp.emit(node, name, ir_type, [left, right], {})
            return
        k = 0 if right in imp.tensors else 3  # the constant operand: quantized, so its value is not kept
        attrs = {"const_shape": [int(d) for d in imp.const_shape(ins[k])], "const_first": k == 0}
        imp.emit(node, name, ir_type, [right if k == 0 else left], attrs)

    return mapper


def _no_channels_last(a: dict[str, Any], name: str, op: str) -> None:
    if a.get("channels_last", 0):
        raise GraphError("channels_last (NHWC) is not supported; the IR is NCHW", node=name, op=op)


def _map_qlinear_global_pool(
    imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]
) -> None:
    # X, x_scale, x_zero_point, y_scale, y_zero_point
    _no_channels_last(a, name, node.op_type)
    _same_dtype_out(imp, ins[0], ins, 4, name, node.op_type)
    imp.emit(node, name, "global_avg_pool", [ins[0]], {})


def _map_qlinear_avg_pool(
    imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]
) -> None:
    from devicelab.graph.onnx.mappers import MAPPERS

    _no_channels_last(a, name, node.op_type)
    _same_dtype_out(imp, ins[0], ins, 4, name, node.op_type)
    MAPPERS["AveragePool"](imp, node, name, [ins[0]], a)


def _map_qlinear_concat(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
    # Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input
    op = node.op_type
    xs = ins[2::3]
    if not xs or (len(ins) - 2) % 3:
        raise GraphError("QLinearConcat takes Y_scale, Y_zero_point, then triples of X, scale, zero point", node=name)
    _same_dtype_out(imp, xs[0], ins, 1, name, op)
    for t in xs:
        imp.act(t, name, op, "concatenated input")
    imp.emit(node, name, "concat", list(xs), {"axis": a.get("axis", 1)})


def _map_qlinear_unary(ir_type: str, defaults: dict[str, Any] | None = None) -> Mapper:
    def mapper(imp: ImportContext, node: onnx.NodeProto, name: str, ins: list[str], a: dict[str, Any]) -> None:
        # X, X_scale, X_zero_point, Y_scale, Y_zero_point
        _same_dtype_out(imp, ins[0], ins, 4, name, node.op_type)
        attrs = {k: a.get(k, v) for k, v in (defaults or {}).items()}
        imp.emit(node, name, ir_type, [ins[0]], attrs, [node.output[0]])

    return mapper


# ONNX (and com.microsoft) op type -> the mapper of its node.
QUANT_MAPPERS: dict[str, Mapper] = {
    "QuantizeLinear": _map_quantize,
    "DequantizeLinear": _map_dequantize,
    "QLinearConv": _map_qlinear_conv,
    "QLinearMatMul": _map_qlinear_matmul,
    "ConvInteger": _map_conv_integer,
    "MatMulInteger": _map_matmul_integer,
    "QGemm": _map_qgemm,
    "QLinearAdd": _map_qlinear_binary("add"),
    "QLinearMul": _map_qlinear_binary("mul"),
    "QLinearGlobalAveragePool": _map_qlinear_global_pool,
    "QLinearAveragePool": _map_qlinear_avg_pool,
    "QLinearConcat": _map_qlinear_concat,
    "QLinearSigmoid": _map_qlinear_unary("sigmoid"),
    "QLinearLeakyRelu": _map_qlinear_unary("leaky_relu", {"alpha": 0.01}),
}
