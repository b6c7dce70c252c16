"""One emitter per IR operator type: the ONNX nodes and random initializers that compute it.

The naming contract of ``export`` (nodes ``X`` and ``X::<suffix>``) is kept here: the node that
writes an IR operator's output is named exactly after it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from devicelab.graph.ir import Operator


class ExportContext(Protocol):
    """The export in progress, as the emitters see it: shapes, random draws, nodes and initializers."""

    opset: int

    def shape(self, t: str) -> tuple[int, ...]:
        """Shape of an IR tensor."""
        ...

    def dtype(self, t: str) -> str:
        """IR dtype of a tensor."""
        ...

    def float_type(self, op: Operator) -> type:
        """numpy float type for the weights of ``op``: its input's, or float32 for integer graphs."""
        ...

    def const_type(self, op: Operator) -> Any:
        """numpy type of constants combined element-wise with ``op``'s input."""
        ...

    def init(self, name: str, value: np.ndarray) -> str:
        """Add an initializer; return its name."""
        ...

    def ints(self, name: str, values: list[int]) -> str:
        """Add an int64 vector initializer."""
        ...

    def node(self, op_type: str, inputs: list[str], outputs: list[str], name: str, **attrs: Any) -> None:
        """Append a node."""
        ...

    def normal(self, shape: tuple[int, ...] | list[int], std: float, dtype: type) -> np.ndarray:
        """Gaussian values."""
        ...

    def uniform(self, shape: tuple[int, ...] | list[int], lo: float, hi: float, dtype: Any) -> np.ndarray:
        """Uniform values in [lo, hi)."""
        ...


# Writes one IR operator as ONNX nodes through the export context.
Emitter = Callable[[ExportContext, Operator], None]


def _conv_attrs(op: Operator) -> dict[str, Any]:
    a = op.attrs
    return {"kernel_shape": a["kernel"], "strides": a["stride"], "pads": a["pads"], "dilations": a["dilation"]}


def _emit_conv(ex: ExportContext, op: Operator) -> None:
    a, x = op.attrs, op.inputs[0]
    cin = ex.shape(x)[1]
    if op.type == "depthwise_conv2d":
        group, cout = cin, cin * a["multiplier"]
    else:
        group, cout = a["groups"], a["out_channels"]
    kh, kw = a["kernel"]
    fan_in = (cin // group) * kh * kw
    ft = ex.float_type(op)
    inputs = [x, ex.init(f"{op.name}::weight", ex.normal((cout, cin // group, kh, kw), math.sqrt(1.0 / fan_in), ft))]
    if a["bias"]:
        inputs.append(ex.init(f"{op.name}::bias", ex.normal((cout,), 0.01, ft)))
    ex.node("Conv", inputs, list(op.outputs), op.name, group=group, **_conv_attrs(op))


def _emit_fc(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    k, n = ex.shape(x)[-1], op.attrs["out_features"]
    ft = ex.float_type(op)
    std = math.sqrt(1.0 / k)
    if len(ex.shape(x)) == 2:
        inputs = [x, ex.init(f"{op.name}::weight", ex.normal((n, k), std, ft))]
        if op.attrs["bias"]:
            inputs.append(ex.init(f"{op.name}::bias", ex.normal((n,), 0.01, ft)))
        ex.node("Gemm", inputs, list(op.outputs), op.name, transB=1)
        return
    weight = ex.init(f"{op.name}::weight", ex.normal((k, n), std, ft))
    if not op.attrs["bias"]:
        ex.node("MatMul", [x, weight], list(op.outputs), op.name)
        return
    product = f"{op.name}::product"
    ex.node("MatMul", [x, weight], [product], f"{op.name}::matmul")
    ex.node("Add", [product, ex.init(f"{op.name}::bias", ex.normal((n,), 0.01, ft))], list(op.outputs), op.name)


def _emit_pool(ex: ExportContext, op: Operator) -> None:
    a = op.attrs
    attrs: dict[str, Any] = {
        "kernel_shape": a["kernel"],
        "strides": a["stride"],
        "pads": a["pads"],
        "ceil_mode": int(a["ceil_mode"]),
    }
    if op.type == "avg_pool2d":
        attrs["count_include_pad"] = int(a["count_include_pad"])
    ex.node("MaxPool" if op.type == "max_pool2d" else "AveragePool", [op.inputs[0]], list(op.outputs), op.name, **attrs)


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div"}


def _emit_binary(ex: ExportContext, op: Operator) -> None:
    inputs = list(op.inputs)
    if len(inputs) == 1:
        a = op.attrs
        shape, dtype = a["const_shape"], ex.const_type(op)
        if a.get("const_value") is not None:
            value = np.full(shape, a["const_value"], dtype=dtype)
        elif op.type in ("mul", "div"):
            value = ex.uniform(shape, 0.5, 1.5, dtype)  # scales near one; never a zero divisor
        else:
            value = ex.normal(shape, 0.1, dtype) if np.issubdtype(dtype, np.floating) else np.ones(shape, dtype)
        const = ex.init(f"{op.name}::const", value)
        inputs = [const, inputs[0]] if a["const_first"] else [inputs[0], const]
    ex.node(_BINARY[op.type], inputs, list(op.outputs), op.name)


_SIMPLE = {
    "matmul": "MatMul",
    "global_avg_pool": "GlobalAveragePool",
    "global_max_pool": "GlobalMaxPool",
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
}


def _emit_simple(ex: ExportContext, op: Operator) -> None:
    ex.node(_SIMPLE[op.type], list(op.inputs), list(op.outputs), op.name)


def _scalar(ex: ExportContext, op: Operator, suffix: str, value: float) -> str:
    return ex.init(f"{op.name}::{suffix}", np.asarray(value, dtype=ex.const_type(op)))


def _emit_clip(ex: ExportContext, op: Operator) -> None:
    lo, hi = (0.0, 6.0) if op.type == "relu6" else (op.attrs["min"], op.attrs["max"])
    inputs = [
        op.inputs[0],
        "" if lo is None else _scalar(ex, op, "min", lo),
        "" if hi is None else _scalar(ex, op, "max", hi),
    ]
    while inputs[-1] == "":
        inputs.pop()
    ex.node("Clip", inputs, list(op.outputs), op.name)


def _emit_hard_sigmoid(ex: ExportContext, op: Operator) -> None:
    ex.node("HardSigmoid", [op.inputs[0]], list(op.outputs), op.name, alpha=1.0 / 6.0, beta=0.5)


def _emit_hard_swish(ex: ExportContext, op: Operator) -> None:
    x = op.inputs[0]
    if ex.opset >= 14:
        ex.node("HardSwish", [x], list(op.outputs), op.name)
        return
    gate = f"{op.name}::gate"
    ex.node("HardSigmoid", [x], [gate], f"{op.name}::hard_sigmoid", alpha=1.0 / 6.0, beta=0.5)
    ex.node("Mul", [x, gate], list(op.outputs), op.name)


def _emit_swish(ex: ExportContext, op: Operator) -> None:
    x, gate = op.inputs[0], f"{op.name}::gate"
    ex.node("Sigmoid", [x], [gate], f"{op.name}::sigmoid")
    ex.node("Mul", [x, gate], list(op.outputs), op.name)


def _emit_gelu(ex: ExportContext, op: Operator) -> None:
    x, n = op.inputs[0], op.name
    if ex.opset >= 20:
        ex.node("Gelu", [x], list(op.outputs), n)
        return
    # PyTorch's own decomposition below opset 20: x * (1 + erf(x / sqrt(2))) * 0.5.
    ex.node("Div", [x, _scalar(ex, op, "sqrt2", math.sqrt(2.0))], [f"{n}::scaled"], f"{n}::div")
    ex.node("Erf", [f"{n}::scaled"], [f"{n}::erf_out"], f"{n}::erf")
    ex.node("Add", [f"{n}::erf_out", _scalar(ex, op, "one", 1.0)], [f"{n}::gate"], f"{n}::add")
    ex.node("Mul", [x, f"{n}::gate"], [f"{n}::product"], f"{n}::mul")
    ex.node("Mul", [f"{n}::product", _scalar(ex, op, "half", 0.5)], list(op.outputs), n)


def _emit_alpha(onnx_type: str) -> Emitter:
    def emit(ex: ExportContext, op: Operator) -> None:
        ex.node(onnx_type, [op.inputs[0]], list(op.outputs), op.name, alpha=op.attrs["alpha"])

    return emit


def _emit_bn(ex: ExportContext, op: Operator) -> None:
    c = ex.shape(op.inputs[0])[1]
    ft, n = ex.float_type(op), op.name
    params = [
        ex.init(f"{n}::scale", ex.uniform((c,), 0.8, 1.2, ft)),
        ex.init(f"{n}::bias", ex.normal((c,), 0.05, ft)),
        ex.init(f"{n}::mean", ex.normal((c,), 0.05, ft)),
        ex.init(f"{n}::var", ex.uniform((c,), 0.5, 1.5, ft)),  # positive, so the rsqrt is finite
    ]
    ex.node("BatchNormalization", [op.inputs[0], *params], list(op.outputs), n, epsilon=op.attrs["epsilon"])


def _emit_concat(ex: ExportContext, op: Operator) -> None:
    ex.node("Concat", list(op.inputs), list(op.outputs), op.name, axis=op.attrs["axis"])


def _emit_split(ex: ExportContext, op: Operator) -> None:
    a = op.attrs
    if ex.opset >= 13:
        sizes = ex.ints(f"{op.name}::split", a["sizes"])
        ex.node("Split", [op.inputs[0], sizes], list(op.outputs), op.name, axis=a["axis"])
    else:
        ex.node("Split", [op.inputs[0]], list(op.outputs), op.name, axis=a["axis"], split=a["sizes"])


def _emit_pad(ex: ExportContext, op: Operator) -> None:
    a = op.attrs
    inputs = [op.inputs[0], ex.ints(f"{op.name}::pads", a["pads"])]
    if a["value"] != 0.0:
        inputs.append(_scalar(ex, op, "value", a["value"]))
    ex.node("Pad", inputs, list(op.outputs), op.name, mode=a["mode"])


_REDUCE = {"reduce_mean": ("ReduceMean", 18), "reduce_max": ("ReduceMax", 18), "reduce_sum": ("ReduceSum", 13)}


def _emit_reduce(ex: ExportContext, op: Operator) -> None:
    onnx_type, axes_input_from = _REDUCE[op.type]
    a = op.attrs
    keepdims = int(a["keepdims"])
    if ex.opset >= axes_input_from:
        axes = ex.ints(f"{op.name}::axes", a["axes"])
        ex.node(onnx_type, [op.inputs[0], axes], list(op.outputs), op.name, keepdims=keepdims)
    else:
        ex.node(onnx_type, [op.inputs[0]], list(op.outputs), op.name, axes=a["axes"], keepdims=keepdims)


def _emit_reshape(ex: ExportContext, op: Operator) -> None:
    target = ex.ints(f"{op.name}::shape", op.attrs["shape"])
    ex.node("Reshape", [op.inputs[0], target], list(op.outputs), op.name)


def _emit_flatten(ex: ExportContext, op: Operator) -> None:
    ex.node("Flatten", [op.inputs[0]], list(op.outputs), op.name, axis=op.attrs["axis"])


def _emit_transpose(ex: ExportContext, op: Operator) -> None:
    ex.node("Transpose", [op.inputs[0]], list(op.outputs), op.name, perm=op.attrs["perm"])


def _emit_softmax(ex: ExportContext, op: Operator) -> None:
    ex.node("Softmax", [op.inputs[0]], list(op.outputs), op.name, axis=op.attrs["axis"])


def _emit_shuffle(ex: ExportContext, op: Operator) -> None:
    n, x = op.name, op.inputs[0]
    b, c, h, w = ex.shape(x)
    g = op.attrs["groups"]
    ex.node("Reshape", [x, ex.ints(f"{n}::grouped_shape", [b, g, c // g, h, w])], [f"{n}::grouped"], f"{n}::reshape")
    ex.node("Transpose", [f"{n}::grouped"], [f"{n}::transposed"], f"{n}::transpose", perm=[0, 2, 1, 3, 4])
    ex.node("Reshape", [f"{n}::transposed", ex.ints(f"{n}::shape", [b, c, h, w])], list(op.outputs), n)


def _emit_resize(ex: ExportContext, op: Operator) -> None:
    a, x = op.attrs, op.inputs[0]
    b, c = ex.shape(x)[:2]
    sizes = ex.ints(f"{op.name}::sizes", [b, c, *a["size"]])
    if a["align_corners"]:
        ctm = "align_corners"
    else:
        ctm = "half_pixel" if a["mode"] == "linear" else "asymmetric"
    attrs: dict[str, Any] = {"mode": a["mode"], "coordinate_transformation_mode": ctm}
    if a["mode"] == "nearest":
        attrs["nearest_mode"] = "floor"
    if ex.opset >= 13:
        inputs = [x, "", "", sizes]
    else:  # opset 11 and 12 require roi and scales: empty tensors
        empty = np.zeros((0,), dtype=np.float32)
        inputs = [x, ex.init(f"{op.name}::roi", empty), ex.init(f"{op.name}::scales", empty), sizes]
    ex.node("Resize", inputs, list(op.outputs), op.name, **attrs)


# IR operator type -> the emitter that writes it as ONNX nodes.
EMITTERS: dict[str, Emitter] = {
    "conv2d": _emit_conv,
    "depthwise_conv2d": _emit_conv,
    "fully_connected": _emit_fc,
    "matmul": _emit_simple,
    "max_pool2d": _emit_pool,
    "avg_pool2d": _emit_pool,
    "global_avg_pool": _emit_simple,
    "global_max_pool": _emit_simple,
    "add": _emit_binary,
    "sub": _emit_binary,
    "mul": _emit_binary,
    "div": _emit_binary,
    "relu": _emit_simple,
    "relu6": _emit_clip,
    "hard_swish": _emit_hard_swish,
    "hard_sigmoid": _emit_hard_sigmoid,
    "sigmoid": _emit_simple,
    "swish": _emit_swish,
    "tanh": _emit_simple,
    "gelu": _emit_gelu,
    "leaky_relu": _emit_alpha("LeakyRelu"),
    "elu": _emit_alpha("Elu"),
    "clip": _emit_clip,
    "batch_norm": _emit_bn,
    "concat": _emit_concat,
    "split": _emit_split,
    "pad": _emit_pad,
    "reduce_mean": _emit_reduce,
    "reduce_max": _emit_reduce,
    "reduce_sum": _emit_reduce,
    "reshape": _emit_reshape,
    "flatten": _emit_flatten,
    "transpose": _emit_transpose,
    "softmax": _emit_softmax,
    "channel_shuffle": _emit_shuffle,
    "resize": _emit_resize,
}
