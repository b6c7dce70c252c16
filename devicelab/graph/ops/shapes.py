"""Shape rules: output shapes from input shapes and canonical attributes (NCHW, batch included)."""

from __future__ import annotations

from collections.abc import Callable

from devicelab.graph.ops.common import Attrs, Shape, need, numel

# (input shapes, canonical attributes) -> output shapes.
ShapeRule = Callable[[list[Shape], Attrs], list[Shape]]


def _window_out(size: int, k: int, s: int, p0: int, p1: int, d: int, ceil: bool = False) -> int:
    """Output size of a window sliding over one spatial axis (ONNX's ceil_mode rule included)."""
    eff = d * (k - 1) + 1
    span = size + p0 + p1 - eff
    need(span >= 0, f"window {k} (dilation {d}) does not fit input size {size} with pads {p0},{p1}")
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p0:
        out -= 1  # the last window must start inside the input or its leading pad (ONNX rule)
    return out


def _spatial(x: Shape, a: Attrs) -> tuple[int, int]:
    """Output H and W of a windowed operator."""
    kh, kw = a["kernel"]
    sh, sw = a["stride"]
    pt, pl, pb, pr = a["pads"]
    dh, dw = a.get("dilation", [1, 1])
    ceil = a.get("ceil_mode", False)
    return (
        _window_out(x[2], kh, sh, pt, pb, dh, ceil),
        _window_out(x[3], kw, sw, pl, pr, dw, ceil),
    )


def _broadcast(a: Shape, b: Shape) -> Shape:
    """The numpy broadcast of two shapes."""
    if tuple(a) == tuple(b):
        return tuple(a)
    rank = max(len(a), len(b))
    a1 = (1,) * (rank - len(a)) + tuple(a)
    b1 = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for da, db in zip(a1, b1):
        if not (da == db or da == 1 or db == 1):
            need(False, f"shapes {list(a)} and {list(b)} do not broadcast")
        out.append(max(da, db))
    return tuple(out)


def conv(s: list[Shape], a: Attrs) -> list[Shape]:
    """conv2d: N x out_channels x H' x W'."""
    ho, wo = _spatial(s[0], a)
    return [(s[0][0], a["out_channels"], ho, wo)]


def dwconv(s: list[Shape], a: Attrs) -> list[Shape]:
    """depthwise_conv2d: N x C*multiplier x H' x W'."""
    ho, wo = _spatial(s[0], a)
    return [(s[0][0], s[0][1] * a["multiplier"], ho, wo)]


def pool(s: list[Shape], a: Attrs) -> list[Shape]:
    """Windowed pooling: N x C x H' x W'."""
    ho, wo = _spatial(s[0], a)
    return [(s[0][0], s[0][1], ho, wo)]


def global_pool(s: list[Shape], a: Attrs) -> list[Shape]:
    """Global pooling: N x C x 1 x 1."""
    need(len(s[0]) == 4, f"global pooling needs a 4-D NCHW input, got shape {list(s[0])}")
    return [(s[0][0], s[0][1], 1, 1)]


def fully_connected(s: list[Shape], a: Attrs) -> list[Shape]:
    """fully_connected: the last axis becomes out_features."""
    x = s[0]
    need(len(x) >= 2, f"fully_connected needs an input of rank >= 2, got shape {list(x)}")
    return [(*x[:-1], a["out_features"])]


def matmul(s: list[Shape], a: Attrs) -> list[Shape]:
    """matmul: numpy's batched matrix product."""
    x, y = s
    need(len(x) >= 2 and len(y) >= 2, "matmul needs two inputs of rank >= 2")
    need(x[-1] == y[-2], f"matmul inner dimensions differ: {list(x)} x {list(y)}")
    batch = _broadcast(x[:-2], y[:-2])
    return [(*batch, x[-2], y[-1])]


def matmul_integer(s: list[Shape], a: Attrs) -> list[Shape]:
    """matmul_integer: like matmul with two inputs, like fully_connected with one."""
    return matmul(s, a) if len(s) == 2 else fully_connected(s, a)


def binary(s: list[Shape], a: Attrs) -> list[Shape]:
    """Element-wise binary: the broadcast of the operands (or of the input and the constant)."""
    if len(s) == 1:
        return [_broadcast(s[0], tuple(a["const_shape"]))]
    return [_broadcast(s[0], s[1])]


def same(s: list[Shape], a: Attrs) -> list[Shape]:
    """The input's shape."""
    return [s[0]]


def concat(s: list[Shape], a: Attrs) -> list[Shape]:
    """concat: the sizes on the axis add up; every other axis must agree."""
    axis = a["axis"]
    first = s[0]
    for other in s[1:]:
        need(
            len(other) == len(first) and all(d1 == d2 for i, (d1, d2) in enumerate(zip(first, other)) if i != axis),
            f"concat inputs {list(first)} and {list(other)} differ outside axis {axis}",
        )
    return [tuple(sum(x[axis] for x in s) if i == axis else d for i, d in enumerate(first))]


def split(s: list[Shape], a: Attrs) -> list[Shape]:
    """split: one output per size, on the axis."""
    x, axis = s[0], a["axis"]
    return [tuple(n if i == axis else d for i, d in enumerate(x)) for n in a["sizes"]]


def pad(s: list[Shape], a: Attrs) -> list[Shape]:
    """pad: each axis grows by its begin and end pads."""
    x, pads, rank = s[0], a["pads"], len(s[0])
    out = tuple(d + pads[i] + pads[i + rank] for i, d in enumerate(x))
    need(all(d >= 1 for d in out), f"pads {pads} leave an empty tensor")
    return [out]


def reduce(s: list[Shape], a: Attrs) -> list[Shape]:
    """reduce_*: the axes become 1 (keepdims) or go."""
    x = s[0]
    if a["keepdims"]:
        return [tuple(1 if i in a["axes"] else d for i, d in enumerate(x))]
    return [tuple(d for i, d in enumerate(x) if i not in a["axes"])]


def reshape(s: list[Shape], a: Attrs) -> list[Shape]:
    """reshape: the target shape."""
    return [tuple(a["shape"])]


def flatten(s: list[Shape], a: Attrs) -> list[Shape]:
    """flatten: 2-D, split at the axis."""
    x, axis = s[0], a["axis"]
    return [(numel(x[:axis]), numel(x[axis:]))]


def transpose(s: list[Shape], a: Attrs) -> list[Shape]:
    """transpose: the axes permuted."""
    return [tuple(s[0][p] for p in a["perm"])]


def resize(s: list[Shape], a: Attrs) -> list[Shape]:
    """resize: N x C x the target size."""
    x = s[0]
    return [(x[0], x[1], a["size"][0], a["size"][1])]


def declared(s: list[Shape], a: Attrs) -> list[Shape]:
    """opaque: the output shapes its ``output_shapes`` attribute declares."""
    return [tuple(x) for x in a["output_shapes"]]
