"""Costs. MACs: multiply-adds of the arithmetic-heavy operators only. FLOPs: the per-operator
work used as a predictor feature (Table 3 of the latency paper): 2 x MACs for conv, FC and
matmul (the qed data set's convention), and one operation per window element or element for
the rest. Parameters: weights and biases; batch norm adds parameters but no MACs.
"""

from __future__ import annotations

from devicelab.graph.ops.common import Attrs, CostFn, Shape, numel


def _int(a: Attrs, name: str) -> int:
    """A canonical integer attribute (its spec checked it when the graph was built)."""
    return int(a[name])


def _kernel(a: Attrs) -> tuple[int, int]:
    """The canonical (height, width) of a window attribute ``kernel``."""
    kh, kw = a["kernel"]
    return int(kh), int(kw)


def macs_conv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """conv2d: one multiply-add per output element per weight of its group."""
    kh, kw = _kernel(a)
    return numel(o[0]) * (i[0][1] // _int(a, "groups")) * kh * kw


def macs_dwconv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """depthwise_conv2d: one multiply-add per output element per kernel position."""
    kh, kw = _kernel(a)
    return numel(o[0]) * kh * kw


def macs_fc(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """fully_connected: one multiply-add per output element per input feature."""
    return numel(o[0]) * i[0][-1]


def macs_matmul(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """matmul: one multiply-add per output element per inner-dimension step."""
    return numel(o[0]) * i[0][-1]


def params_matmul_integer(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """matmul_integer: its constant weight, when it has one (one input)."""
    return i[0][-1] * _int(a, "out_features") if len(i) == 1 else 0


def zero(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """No cost of this kind."""
    return 0


def params_conv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """conv2d: the weights and the bias."""
    kh, kw = _kernel(a)
    cout = _int(a, "out_channels")
    return cout * (i[0][1] // _int(a, "groups")) * kh * kw + (cout if a["bias"] else 0)


def params_dwconv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """depthwise_conv2d: the weights and the bias."""
    kh, kw = _kernel(a)
    cout = o[0][1]
    return cout * kh * kw + (cout if a["bias"] else 0)


def params_fc(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """fully_connected: the weights and the bias."""
    out = _int(a, "out_features")
    return i[0][-1] * out + (out if a["bias"] else 0)


def params_bn(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """batch_norm: scale and shift per channel."""
    return 2 * i[0][1]  # gamma and beta; running mean and variance are buffers, not parameters


def params_binary(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """Element-wise binary: the constant operand, unless it is a scalar."""
    n = numel(a["const_shape"]) if "const_shape" in a else 0
    return n if n > 1 else 0  # a scalar constant is not a parameter


def flops_window(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """Pooling: one operation per window element per output element."""
    kh, kw = _kernel(a)
    return numel(o[0]) * kh * kw


def flops_in(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """One operation per input element (reductions, global pooling)."""
    return numel(i[0])


def flops_out(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """One operation per output element."""
    return numel(o[0])


def flops_twice_out(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """Two operations per output element (batch norm's scale and shift)."""
    return 2 * numel(o[0])


def flops_softmax(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """Three operations per element: exp, sum, divide."""
    return 3 * numel(o[0])  # exp, sum, divide


def flops_resize(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    """One operation per output element, four for bilinear interpolation."""
    return numel(o[0]) * (4 if a["mode"] == "linear" else 1)


def twice(macs: CostFn) -> CostFn:
    """FLOPs as 2 x the MACs (multiply and add), the convention for conv, FC and matmul."""

    def flops(i: list[Shape], o: list[Shape], a: Attrs) -> int:
        return 2 * macs(i, o, a)

    return flops
