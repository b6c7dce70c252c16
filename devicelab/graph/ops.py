"""The closed operator vocabulary of the graph IR: attributes, shape rules and costs.

Every operator type the lab knows is one ``OpSpec`` in ``OPS``. A spec fills in default
attributes (so two graphs that mean the same thing compare equal), infers output shapes from
input shapes, and counts multiply-adds, FLOPs and parameters. The conventions are documented in
``docs/graph-format.md``; in short, shapes are NCHW with the batch dimension, MACs count only
the multiply-adds of conv / fully-connected / matmul, biases and batch norm add parameters but
no MACs (batch norm is treated as folded into the preceding convolution for MACs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from devicelab.graph.errors import GraphError

Shape = tuple[int, ...]
Attrs = dict[str, Any]

DTYPES = ("float32", "float16", "int8", "uint8", "int32", "int64")


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of this shape."""
    return math.prod(shape)


class _Fail(Exception):
    """Raised inside a spec; turned into a ``GraphError`` that names the node."""


def _need(cond: bool, reason: str) -> None:
    if not cond:
        raise _Fail(reason)


def _int_list(value: Any, length: int, what: str) -> list[int]:
    if type(value) is int:
        return [value] * length
    # type() rather than isinstance: bool is an int subclass and is refused.
    if type(value) in (list, tuple) and len(value) == length and all(type(v) is int for v in value):
        return list(value)
    if isinstance(value, int) and not isinstance(value, bool):  # an int subclass (e.g. numpy's)
        return [int(value)] * length
    _need(
        isinstance(value, (list, tuple))
        and len(value) == length
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
        f"attribute {what!r} must be a list of {length} integers, got {value!r}",
    )
    return [int(v) for v in value]


def _axis(axis: Any, rank: int, what: str = "axis") -> int:
    _need(isinstance(axis, int) and not isinstance(axis, bool), f"attribute {what!r} must be an integer")
    _need(-rank <= axis < rank, f"attribute {what!r}={axis} is out of range for rank {rank}")
    return axis % rank


# ---------------------------------------------------------------------------------------------
# Attribute normalizers: take raw attrs and input shapes, return complete canonical attrs.


def _norm_window(attrs: Attrs, with_kernel: bool = True) -> Attrs:
    out: Attrs = {}
    if with_kernel:
        _need("kernel" in attrs, "attribute 'kernel' is required")
        out["kernel"] = _int_list(attrs["kernel"], 2, "kernel")
        _need(all(k >= 1 for k in out["kernel"]), "kernel sizes must be >= 1")
    out["stride"] = _int_list(attrs.get("stride", 1), 2, "stride")
    _need(all(s >= 1 for s in out["stride"]), "strides must be >= 1")
    out["pads"] = _int_list(attrs.get("pads", 0), 4, "pads")
    _need(all(p >= 0 for p in out["pads"]), "pads must be >= 0 (top, left, bottom, right)")
    out["dilation"] = _int_list(attrs.get("dilation", 1), 2, "dilation")
    return out


def _norm_conv(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    x = shapes[0]
    _need(len(x) == 4, f"conv2d needs a 4-D NCHW input, got shape {list(x)}")
    out = _norm_window(attrs)
    _need("out_channels" in attrs, "attribute 'out_channels' is required")
    out["out_channels"] = int(attrs["out_channels"])
    out["groups"] = int(attrs.get("groups", 1))
    out["bias"] = bool(attrs.get("bias", True))
    g, cin, cout = out["groups"], x[1], out["out_channels"]
    _need(g >= 1 and cin % g == 0, f"input channels {cin} are not divisible by groups {g}")
    _need(cout >= 1 and cout % g == 0, f"out_channels {cout} is not divisible by groups {g}")
    return out


def _norm_dwconv(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    x = shapes[0]
    _need(len(x) == 4, f"depthwise_conv2d needs a 4-D NCHW input, got shape {list(x)}")
    out = _norm_window(attrs)
    out["multiplier"] = int(attrs.get("multiplier", 1))
    _need(out["multiplier"] >= 1, "multiplier must be >= 1")
    out["bias"] = bool(attrs.get("bias", True))
    return out


def _norm_pool(attrs: Attrs, shapes: list[Shape], avg: bool) -> Attrs:
    _need(len(shapes[0]) == 4, f"pooling needs a 4-D NCHW input, got shape {list(shapes[0])}")
    out = _norm_window(attrs)
    del out["dilation"]
    out["ceil_mode"] = bool(attrs.get("ceil_mode", False))
    if avg:
        out["count_include_pad"] = bool(attrs.get("count_include_pad", False))
    return out


def _norm_binary(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    out: Attrs = {}
    if len(shapes) == 1:
        _need("const_shape" in attrs, "a binary operator with one input needs 'const_shape'")
        out["const_shape"] = [int(v) for v in attrs["const_shape"]]
        if attrs.get("const_value") is not None:
            out["const_value"] = float(attrs["const_value"])
        out["const_first"] = bool(attrs.get("const_first", False))
    else:
        _need("const_shape" not in attrs, "'const_shape' is only for a binary operator with one input")
    return out


def _norm_none(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    return {}


def _norm_alpha(default: float) -> Callable[[Attrs, list[Shape]], Attrs]:
    def norm(attrs: Attrs, shapes: list[Shape]) -> Attrs:
        return {"alpha": float(attrs.get("alpha", default))}

    return norm


def _norm_clip(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    lo, hi = attrs.get("min"), attrs.get("max")
    return {"min": None if lo is None else float(lo), "max": None if hi is None else float(hi)}


def _norm_bn(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    _need(len(shapes[0]) >= 2, "batch_norm needs an input with a channel axis")
    return {"epsilon": float(attrs.get("epsilon", 1e-5))}


def _norm_concat(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    return {"axis": _axis(attrs.get("axis", 1), len(shapes[0]))}


def _norm_split(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    x = shapes[0]
    axis = _axis(attrs.get("axis", 1), len(x))
    _need("sizes" in attrs, "attribute 'sizes' is required")
    sizes = [int(s) for s in attrs["sizes"]]
    _need(all(s >= 1 for s in sizes), f"split sizes must be >= 1, got {sizes}")
    _need(sum(sizes) == x[axis], f"split sizes {sizes} do not add up to {x[axis]} on axis {axis}")
    return {"axis": axis, "sizes": sizes}


def _norm_pad(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    rank = len(shapes[0])
    pads = _int_list(attrs.get("pads", 0), 2 * rank, "pads")
    mode = attrs.get("mode", "constant")
    _need(mode in ("constant", "reflect", "edge"), f"pad mode {mode!r} is not constant, reflect or edge")
    return {"pads": pads, "mode": mode, "value": float(attrs.get("value", 0.0))}


def _norm_reduce(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    rank = len(shapes[0])
    axes = attrs.get("axes")
    axes = list(range(rank)) if axes is None else [_axis(a, rank, "axes") for a in axes]
    return {"axes": sorted(set(axes)), "keepdims": bool(attrs.get("keepdims", True))}


def _norm_reshape(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    x = shapes[0]
    _need("shape" in attrs, "attribute 'shape' is required")
    target = [int(v) for v in attrs["shape"]]
    # ONNX semantics: 0 copies the input dimension, one -1 is inferred.
    target = [x[i] if v == 0 and i < len(x) else v for i, v in enumerate(target)]
    _need(target.count(-1) <= 1, f"reshape target {target} has more than one -1")
    if -1 in target:
        known = math.prod(v for v in target if v != -1)
        _need(known > 0 and numel(x) % known == 0, f"cannot reshape {list(x)} to {target}")
        target[target.index(-1)] = numel(x) // known
    _need(all(v >= 1 for v in target), f"reshape target {target} has a non-positive dimension")
    _need(numel(target) == numel(x), f"cannot reshape {list(x)} ({numel(x)} elements) to {target}")
    return {"shape": target}


def _norm_flatten(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    rank = len(shapes[0])
    axis = int(attrs.get("axis", 1))
    _need(-rank <= axis <= rank, f"flatten axis {axis} is out of range for rank {rank}")
    return {"axis": axis % (rank + 1) if axis < 0 else axis}


def _norm_transpose(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    rank = len(shapes[0])
    perm = attrs.get("perm")
    perm = list(reversed(range(rank))) if perm is None else [int(p) for p in perm]
    _need(sorted(perm) == list(range(rank)), f"perm {perm} is not a permutation of {rank} axes")
    return {"perm": perm}


def _norm_softmax(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    return {"axis": _axis(attrs.get("axis", -1), len(shapes[0]))}


def _norm_shuffle(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    x = shapes[0]
    _need(len(x) == 4, f"channel_shuffle needs a 4-D NCHW input, got shape {list(x)}")
    groups = int(attrs.get("groups", 0))
    _need(groups >= 1 and x[1] % groups == 0, f"channels {x[1]} are not divisible by groups {groups}")
    return {"groups": groups}


def _norm_resize(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    x = shapes[0]
    _need(len(x) == 4, f"resize needs a 4-D NCHW input, got shape {list(x)}")
    if "size" in attrs:
        size = _int_list(attrs["size"], 2, "size")
    else:
        _need("scales" in attrs, "resize needs 'size' (output H, W) or 'scales'")
        sh, sw = (float(s) for s in attrs["scales"])
        size = [int(math.floor(x[2] * sh)), int(math.floor(x[3] * sw))]
    _need(all(s >= 1 for s in size), f"resize output size {size} must be positive")
    mode = attrs.get("mode", "nearest")
    _need(mode in ("nearest", "linear"), f"resize mode {mode!r} is not nearest or linear")
    align = bool(attrs.get("align_corners", False))
    return {"size": size, "mode": mode, "align_corners": align}


# ---------------------------------------------------------------------------------------------
# Shape rules


def _window_out(size: int, k: int, s: int, p0: int, p1: int, d: int, ceil: bool = False) -> int:
    eff = d * (k - 1) + 1
    span = size + p0 + p1 - eff
    _need(span >= 0, f"window {k} (dilation {d}) does not fit input size {size} with pads {p0},{p1}")
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p0:
        out -= 1  # the last window must start inside the input or its leading pad (ONNX rule)
    return out


def _spatial(x: Shape, a: Attrs) -> tuple[int, int]:
    kh, kw = a["kernel"]
    sh, sw = a["stride"]
    pt, pl, pb, pr = a["pads"]
    dh, dw = a.get("dilation", [1, 1])
    ceil = a.get("ceil_mode", False)
    return (
        _window_out(x[2], kh, sh, pt, pb, dh, ceil),
        _window_out(x[3], kw, sw, pl, pr, dw, ceil),
    )


def _shape_conv(s: list[Shape], a: Attrs) -> list[Shape]:
    ho, wo = _spatial(s[0], a)
    return [(s[0][0], a["out_channels"], ho, wo)]


def _shape_dwconv(s: list[Shape], a: Attrs) -> list[Shape]:
    ho, wo = _spatial(s[0], a)
    return [(s[0][0], s[0][1] * a["multiplier"], ho, wo)]


def _shape_pool(s: list[Shape], a: Attrs) -> list[Shape]:
    ho, wo = _spatial(s[0], a)
    return [(s[0][0], s[0][1], ho, wo)]


def _shape_global_pool(s: list[Shape], a: Attrs) -> list[Shape]:
    _need(len(s[0]) == 4, f"global pooling needs a 4-D NCHW input, got shape {list(s[0])}")
    return [(s[0][0], s[0][1], 1, 1)]


def _shape_fc(s: list[Shape], a: Attrs) -> list[Shape]:
    x = s[0]
    _need(len(x) >= 2, f"fully_connected needs an input of rank >= 2, got shape {list(x)}")
    return [(*x[:-1], a["out_features"])]


def _norm_fc(attrs: Attrs, shapes: list[Shape]) -> Attrs:
    _need("out_features" in attrs, "attribute 'out_features' is required")
    out = int(attrs["out_features"])
    _need(out >= 1, "out_features must be >= 1")
    return {"out_features": out, "bias": bool(attrs.get("bias", True))}


def _broadcast(a: Shape, b: Shape) -> Shape:
    if tuple(a) == tuple(b):
        return tuple(a)
    rank = max(len(a), len(b))
    a1 = (1,) * (rank - len(a)) + tuple(a)
    b1 = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for da, db in zip(a1, b1):
        if not (da == db or da == 1 or db == 1):
            _need(False, f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(da, db))
    return tuple(out)


def _shape_matmul(s: list[Shape], a: Attrs) -> list[Shape]:
    x, y = s
    _need(len(x) >= 2 and len(y) >= 2, "matmul needs two inputs of rank >= 2")
    _need(x[-1] == y[-2], f"matmul inner dimensions differ: {list(x)} x {list(y)}")
    batch = _broadcast(x[:-2], y[:-2])
    return [(*batch, x[-2], y[-1])]


def _shape_binary(s: list[Shape], a: Attrs) -> list[Shape]:
    if len(s) == 1:
        return [_broadcast(s[0], tuple(a["const_shape"]))]
    return [_broadcast(s[0], s[1])]


def _shape_same(s: list[Shape], a: Attrs) -> list[Shape]:
    return [s[0]]


def _shape_concat(s: list[Shape], a: Attrs) -> list[Shape]:
    axis = a["axis"]
    first = s[0]
    for other in s[1:]:
        _need(
            len(other) == len(first) and all(d1 == d2 for i, (d1, d2) in enumerate(zip(first, other)) if i != axis),
            f"concat inputs {list(first)} and {list(other)} differ outside axis {axis}",
        )
    return [tuple(sum(x[axis] for x in s) if i == axis else d for i, d in enumerate(first))]


def _shape_split(s: list[Shape], a: Attrs) -> list[Shape]:
    x, axis = s[0], a["axis"]
    return [tuple(n if i == axis else d for i, d in enumerate(x)) for n in a["sizes"]]


def _shape_pad(s: list[Shape], a: Attrs) -> list[Shape]:
    x, pads, rank = s[0], a["pads"], len(s[0])
    out = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(x))
    _need(all(d >= 1 for d in out), f"pads {pads} leave an empty tensor")
    return [out]


def _shape_reduce(s: list[Shape], a: Attrs) -> list[Shape]:
    x = s[0]
    if a["keepdims"]:
        return [tuple(1 if i in a["axes"] else d for i, d in enumerate(x))]
    return [tuple(d for i, d in enumerate(x) if i not in a["axes"])]


def _shape_reshape(s: list[Shape], a: Attrs) -> list[Shape]:
    return [tuple(a["shape"])]


def _shape_flatten(s: list[Shape], a: Attrs) -> list[Shape]:
    x, axis = s[0], a["axis"]
    return [(numel(x[:axis]), numel(x[axis:]))]


def _shape_transpose(s: list[Shape], a: Attrs) -> list[Shape]:
    return [tuple(s[0][p] for p in a["perm"])]


def _shape_resize(s: list[Shape], a: Attrs) -> list[Shape]:
    x = s[0]
    return [(x[0], x[1], a["size"][0], a["size"][1])]


# ---------------------------------------------------------------------------------------------
# Costs. MACs: multiply-adds of the arithmetic-heavy operators only. FLOPs: the per-operator
# work used as a predictor feature (Table 3 of the latency paper): 2 x MACs for conv, FC and
# matmul (the qed data set's convention), and one operation per window element or element for
# the rest.


def _macs_conv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    kh, kw = a["kernel"]
    return numel(o[0]) * (i[0][1] // a["groups"]) * kh * kw


def _macs_dwconv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    kh, kw = a["kernel"]
    return numel(o[0]) * kh * kw


def _macs_fc(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return numel(o[0]) * i[0][-1]


def _macs_matmul(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return numel(o[0]) * i[0][-1]


def _zero(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return 0


def _params_conv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    kh, kw = a["kernel"]
    cout = a["out_channels"]
    return cout * (i[0][1] // a["groups"]) * kh * kw + (cout if a["bias"] else 0)


def _params_dwconv(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    kh, kw = a["kernel"]
    cout = o[0][1]
    return cout * kh * kw + (cout if a["bias"] else 0)


def _params_fc(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return i[0][-1] * a["out_features"] + (a["out_features"] if a["bias"] else 0)


def _params_bn(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return 2 * i[0][1]  # gamma and beta; running mean and variance are buffers, not parameters


def _params_binary(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    n = numel(a["const_shape"]) if "const_shape" in a else 0
    return n if n > 1 else 0  # a scalar constant is not a parameter


def _flops_window(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    kh, kw = a["kernel"]
    return numel(o[0]) * kh * kw


def _flops_in(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return numel(i[0])


def _flops_out(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return numel(o[0])


def _flops_twice_out(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return 2 * numel(o[0])


def _flops_softmax(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return 3 * numel(o[0])  # exp, sum, divide


def _flops_resize(i: list[Shape], o: list[Shape], a: Attrs) -> int:
    return numel(o[0]) * (4 if a["mode"] == "linear" else 1)


CostFn = Callable[[list[Shape], list[Shape], Attrs], int]


@dataclass(frozen=True)
class OpSpec:
    """What the IR knows of one operator type."""

    name: str
    doc: str
    category: str  # the latency paper's Table 3 category, used to group predictor features
    min_inputs: int
    max_inputs: int | None
    normalize: Callable[[Attrs, list[Shape]], Attrs]
    infer: Callable[[list[Shape], Attrs], list[Shape]]
    macs: CostFn = _zero
    params: CostFn = _zero
    flops: CostFn = _zero
    attr_doc: dict[str, str] = field(default_factory=dict)

    def num_outputs(self, attrs: Attrs) -> int:
        """How many output tensors an operator of this type with these attrs has."""
        return len(attrs["sizes"]) if self.name == "split" else 1


_WINDOW_DOC = {
    "kernel": "[kh, kw]",
    "stride": "[sh, sw], default [1, 1]",
    "pads": "[top, left, bottom, right], default [0, 0, 0, 0]",
    "dilation": "[dh, dw], default [1, 1]",
}

_ACTIVATIONS = {
    "relu": "max(x, 0)",
    "relu6": "min(max(x, 0), 6)",
    "hard_swish": "x * relu6(x + 3) / 6",
    "hard_sigmoid": "relu6(x + 3) / 6 (alpha 1/6, beta 1/2)",
    "sigmoid": "1 / (1 + exp(-x))",
    "swish": "x * sigmoid(x) (SiLU)",
    "tanh": "tanh(x)",
    "gelu": "x * Phi(x)",
}


def _build_specs() -> dict[str, OpSpec]:
    specs = [
        OpSpec(
            "conv2d",
            "2-D convolution, optionally grouped, with optional bias.",
            "conv",
            1,
            1,
            _norm_conv,
            _shape_conv,
            _macs_conv,
            _params_conv,
            lambda i, o, a: 2 * _macs_conv(i, o, a),
            {**_WINDOW_DOC, "out_channels": "int", "groups": "int, default 1", "bias": "bool, default true"},
        ),
        OpSpec(
            "depthwise_conv2d",
            "Depthwise 2-D convolution: one group per input channel.",
            "dwconv",
            1,
            1,
            _norm_dwconv,
            _shape_dwconv,
            _macs_dwconv,
            _params_dwconv,
            lambda i, o, a: 2 * _macs_dwconv(i, o, a),
            {**_WINDOW_DOC, "multiplier": "output channels per input channel, default 1", "bias": "bool, default true"},
        ),
        OpSpec(
            "fully_connected",
            "x @ W + b over the last axis, with weights held by the operator.",
            "fc",
            1,
            1,
            _norm_fc,
            _shape_fc,
            _macs_fc,
            _params_fc,
            lambda i, o, a: 2 * _macs_fc(i, o, a),
            {"out_features": "int", "bias": "bool, default true"},
        ),
        OpSpec(
            "matmul",
            "Matrix product of two activation tensors (numpy broadcasting).",
            "matmul",
            2,
            2,
            _norm_none,
            _shape_matmul,
            _macs_matmul,
            _zero,
            lambda i, o, a: 2 * _macs_matmul(i, o, a),
        ),
        OpSpec(
            "max_pool2d",
            "Max pooling over a window.",
            "pool",
            1,
            1,
            lambda a, s: _norm_pool(a, s, avg=False),
            _shape_pool,
            flops=_flops_window,
            attr_doc={**_WINDOW_DOC, "ceil_mode": "bool, default false"},
        ),
        OpSpec(
            "avg_pool2d",
            "Average pooling over a window.",
            "pool",
            1,
            1,
            lambda a, s: _norm_pool(a, s, avg=True),
            _shape_pool,
            flops=_flops_window,
            attr_doc={**_WINDOW_DOC, "ceil_mode": "bool, default false", "count_include_pad": "bool, default false"},
        ),
        OpSpec(
            "global_avg_pool",
            "Average over H and W, output N x C x 1 x 1.",
            "mean",
            1,
            1,
            _norm_none,
            _shape_global_pool,
            flops=_flops_in,
        ),
        OpSpec(
            "global_max_pool",
            "Max over H and W, output N x C x 1 x 1.",
            "mean",
            1,
            1,
            _norm_none,
            _shape_global_pool,
            flops=_flops_in,
        ),
    ]
    binary_doc = {
        "const_shape": "shape of the constant operand when there is one input",
        "const_value": "its value when it is a scalar (optional)",
        "const_first": "bool: the constant is the left operand (for sub and div)",
    }
    for name, sym in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")):
        specs.append(
            OpSpec(
                name,
                f"Element-wise x {sym} y with broadcasting; y may be a constant.",
                "elementwise",
                1,
                2,
                _norm_binary,
                _shape_binary,
                params=_params_binary,
                flops=_flops_out,
                attr_doc=binary_doc,
            )
        )
    for name, formula in _ACTIVATIONS.items():
        specs.append(
            OpSpec(name, f"Activation {formula}.", "elementwise", 1, 1, _norm_none, _shape_same, flops=_flops_out)
        )
    specs += [
        OpSpec(
            "leaky_relu",
            "Activation x if x > 0 else alpha * x.",
            "elementwise",
            1,
            1,
            _norm_alpha(0.01),
            _shape_same,
            flops=_flops_out,
            attr_doc={"alpha": "float, default 0.01"},
        ),
        OpSpec(
            "elu",
            "Activation x if x > 0 else alpha * (exp(x) - 1).",
            "elementwise",
            1,
            1,
            _norm_alpha(1.0),
            _shape_same,
            flops=_flops_out,
            attr_doc={"alpha": "float, default 1.0"},
        ),
        OpSpec(
            "clip",
            "Clamp to [min, max] (either may be null).",
            "elementwise",
            1,
            1,
            _norm_clip,
            _shape_same,
            flops=_flops_out,
            attr_doc={"min": "float or null", "max": "float or null"},
        ),
        OpSpec(
            "batch_norm",
            "Inference batch norm per channel (axis 1).",
            "elementwise",
            1,
            1,
            _norm_bn,
            _shape_same,
            params=_params_bn,
            flops=_flops_twice_out,
            attr_doc={"epsilon": "float, default 1e-5"},
        ),
        OpSpec(
            "concat",
            "Concatenate inputs along an axis.",
            "concat",
            1,
            None,
            _norm_concat,
            _shape_concat,
            attr_doc={"axis": "int, default 1"},
        ),
        OpSpec(
            "split",
            "Split along an axis into pieces of the given sizes.",
            "split",
            1,
            1,
            _norm_split,
            _shape_split,
            attr_doc={"axis": "int, default 1", "sizes": "list of int"},
        ),
        OpSpec(
            "pad",
            "Pad every axis (ONNX order: all begins, then all ends).",
            "pad",
            1,
            1,
            _norm_pad,
            _shape_pad,
            attr_doc={"pads": "list of 2 x rank ints", "mode": "constant|reflect|edge", "value": "float, default 0"},
        ),
        OpSpec(
            "reduce_mean",
            "Mean over axes.",
            "mean",
            1,
            1,
            _norm_reduce,
            _shape_reduce,
            flops=_flops_in,
            attr_doc={"axes": "list of int, default all", "keepdims": "bool, default true"},
        ),
        OpSpec(
            "reduce_max",
            "Max over axes.",
            "mean",
            1,
            1,
            _norm_reduce,
            _shape_reduce,
            flops=_flops_in,
            attr_doc={"axes": "list of int, default all", "keepdims": "bool, default true"},
        ),
        OpSpec(
            "reduce_sum",
            "Sum over axes.",
            "mean",
            1,
            1,
            _norm_reduce,
            _shape_reduce,
            flops=_flops_in,
            attr_doc={"axes": "list of int, default all", "keepdims": "bool, default true"},
        ),
        OpSpec(
            "reshape",
            "Reshape to a fixed shape (0 copies, one -1 inferred).",
            "reshape",
            1,
            1,
            _norm_reshape,
            _shape_reshape,
            attr_doc={"shape": "list of int"},
        ),
        OpSpec(
            "flatten",
            "Flatten to 2-D around an axis.",
            "reshape",
            1,
            1,
            _norm_flatten,
            _shape_flatten,
            attr_doc={"axis": "int, default 1"},
        ),
        OpSpec(
            "transpose",
            "Permute axes.",
            "reshape",
            1,
            1,
            _norm_transpose,
            _shape_transpose,
            attr_doc={"perm": "list of int"},
        ),
        OpSpec(
            "softmax",
            "Softmax along an axis.",
            "elementwise",
            1,
            1,
            _norm_softmax,
            _shape_same,
            flops=_flops_softmax,
            attr_doc={"axis": "int, default -1"},
        ),
        OpSpec(
            "channel_shuffle",
            "ShuffleNet channel shuffle with a number of groups.",
            "reshape",
            1,
            1,
            _norm_shuffle,
            _shape_same,
            attr_doc={"groups": "int"},
        ),
        OpSpec(
            "resize",
            "Resize H and W (nearest or bilinear).",
            "elementwise",
            1,
            1,
            _norm_resize,
            _shape_resize,
            flops=_flops_resize,
            attr_doc={"size": "[H, W] of the output", "mode": "nearest|linear", "align_corners": "bool, default false"},
        ),
    ]
    return {s.name: s for s in specs}


OPS: dict[str, OpSpec] = _build_specs()


def spec(op_type: str, node: str | None = None) -> OpSpec:
    """The spec of an operator type, or a ``GraphError`` naming the unknown type."""
    try:
        return OPS[op_type]
    except KeyError:
        raise GraphError(
            f"unknown operator type {op_type!r}; the vocabulary is documented in docs/graph-format.md",
            node=node,
            op=op_type,
        ) from None


def normalize_and_infer(
    op_type: str, attrs: Attrs, input_shapes: Sequence[Sequence[int]], node: str | None = None
) -> tuple[Attrs, list[Shape]]:
    """Canonical attributes and output shapes of one operator, or a ``GraphError`` saying why not."""
    s = spec(op_type, node)
    n = len(input_shapes)
    if n < s.min_inputs or (s.max_inputs is not None and n > s.max_inputs):
        most = "any number of" if s.max_inputs is None else str(s.max_inputs)
        raise GraphError(f"takes {s.min_inputs} to {most} inputs, got {n}", node=node, op=op_type)
    try:
        canonical = s.normalize(dict(attrs), [tuple(x) for x in input_shapes])
        return canonical, s.infer([tuple(x) for x in input_shapes], canonical)
    except _Fail as exc:
        raise GraphError(str(exc), node=node, op=op_type) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise GraphError(f"bad attributes {attrs!r}: {exc}", node=node, op=op_type) from None


_MEMO: dict[tuple[str, bytes, tuple[Shape, ...]], tuple[Attrs, list[Shape]]] = {}
_MEMO_LIMIT = 1 << 16


def normalize_and_infer_memo(
    op_type: str, attrs: Attrs, input_shapes: Sequence[Shape], node: str | None = None
) -> tuple[Attrs, list[Shape]]:
    """``normalize_and_infer`` remembered per (type, attributes, input shapes).

    A batch of NAS candidates repeats the same operator configurations thousands of times;
    this answers a repeat with the first answer instead of checking it again (a fresh dict per
    operator; its values, lists included, are shared and must not be changed in place). The key
    is the attributes' JSON bytes (equal bytes, equal attributes); attributes that are not plain
    JSON data, and operators that fail, are not remembered, so errors name every node."""
    try:
        key = (op_type, orjson.dumps(attrs, option=orjson.OPT_SORT_KEYS), tuple(input_shapes))
    except TypeError:  # not JSON data (e.g. numpy scalars): check it directly
        return normalize_and_infer(op_type, attrs, input_shapes, node)
    hit = _MEMO.get(key)
    if hit is None:
        canonical, shapes = normalize_and_infer(op_type, attrs, input_shapes, node)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        hit = _MEMO[key] = (dict(canonical), shapes)
    return dict(hit[0]), hit[1]
