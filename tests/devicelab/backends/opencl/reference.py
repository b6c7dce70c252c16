"""numpy references for the OpenCL kernels (float64, written for clarity, not speed)."""

from __future__ import annotations

import math

import numpy as np

ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "hard_swish": lambda x: x * np.clip(x + 3, 0, 6) / 6,
    "hard_sigmoid": lambda x: np.clip(x / 6 + 0.5, 0, 1),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "swish": lambda x: x / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "gelu": lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2))),
}


def activation(kind: str, x: np.ndarray, **attrs: float | None) -> np.ndarray:
    """An IR activation."""
    if kind == "leaky_relu":
        return np.where(x > 0, x, attrs.get("alpha", 0.01) * x)
    if kind == "elu":
        return np.where(x > 0, x, attrs.get("alpha", 1.0) * (np.exp(x) - 1))
    if kind == "clip":
        lo, hi = attrs.get("min"), attrs.get("max")
        return np.clip(x, -np.inf if lo is None else lo, np.inf if hi is None else hi)
    return ACTIVATIONS[kind](x)


def conv2d(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None,
    stride: list[int],
    pads: list[int],
    dilation: list[int],
    groups: int,
) -> np.ndarray:
    """NCHW convolution; w is (cout, cin / groups, kh, kw), pads [top, left, bottom, right]."""
    x = x.astype(np.float64)
    n, cin, h, wd = x.shape
    cout, cin_g, kh, kw = w.shape
    sh, sw = stride
    dh, dw = dilation
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    y = np.zeros((n, cout, oh, ow))
    cout_g = cout // groups
    for g in range(groups):
        xs = xp[:, g * cin_g : (g + 1) * cin_g]
        wg = w[g * cout_g : (g + 1) * cout_g].astype(np.float64)
        for ky in range(kh):
            for kx in range(kw):
                patch = xs[:, :, ky * dh : ky * dh + sh * (oh - 1) + 1 : sh, kx * dw : kx * dw + sw * (ow - 1) + 1 : sw]
                y[:, g * cout_g : (g + 1) * cout_g] += np.einsum("nchw,oc->nohw", patch, wg[:, :, ky, kx])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def batch_norm(x: np.ndarray, p: dict[str, np.ndarray], eps: float) -> np.ndarray:
    """Inference batch norm over axis 1."""
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - p["mean"].reshape(shape)) / np.sqrt(p["var"].reshape(shape) + eps) * p["scale"].reshape(shape) + p[
        "bias"
    ].reshape(shape)


def pool2d(
    x: np.ndarray,
    kind: str,
    kernel: list[int],
    stride: list[int],
    pads: list[int],
    out_hw: tuple[int, int],
    count_include_pad: bool = False,
) -> np.ndarray:
    """Max or average pooling with ONNX's padding rules (output size given)."""
    n, c, h, w = x.shape
    oh, ow = out_hw
    y = np.zeros((n, c, oh, ow))
    for oy in range(oh):
        for ox in range(ow):
            ys, xs = oy * stride[0] - pads[0], ox * stride[1] - pads[1]
            y0, y1 = max(ys, 0), min(ys + kernel[0], h)
            x0, x1 = max(xs, 0), min(xs + kernel[1], w)
            win = x[:, :, y0:y1, x0:x1].astype(np.float64)
            if kind == "max":
                y[:, :, oy, ox] = win.max(axis=(2, 3))
            else:
                count = (y1 - y0) * (x1 - x0)
                if count_include_pad:
                    count = (min(ys + kernel[0], h + pads[2]) - ys) * (min(xs + kernel[1], w + pads[3]) - xs)
                y[:, :, oy, ox] = win.sum(axis=(2, 3)) / count
    return y


def resize(x: np.ndarray, size: list[int], mode: str, align_corners: bool) -> np.ndarray:
    """ONNX Runtime's Resize for the exporter's settings (floor nearest; half_pixel bilinear)."""
    n, c, ih, iw = x.shape
    oh, ow = size

    def coords(out: int, inp: int) -> np.ndarray:
        o = np.arange(out, dtype=np.float32)
        scale = np.float32(out) / np.float32(inp)
        if align_corners:
            return np.zeros(out, np.float32) if out == 1 else o * np.float32(inp - 1) / np.float32(out - 1)
        if mode == "linear":
            return (o + np.float32(0.5)) / scale - np.float32(0.5)
        return o / scale

    fy, fx = coords(oh, ih), coords(ow, iw)
    if mode == "nearest":
        iy = np.clip(np.floor(fy).astype(int), 0, ih - 1)
        ix = np.clip(np.floor(fx).astype(int), 0, iw - 1)
        return x[:, :, iy][:, :, :, ix].astype(np.float64)
    fy = np.clip(fy, 0, ih - 1).astype(np.float64)
    fx = np.clip(fx, 0, iw - 1).astype(np.float64)
    y0 = np.minimum(fy.astype(int), ih - 1)
    x0 = np.minimum(fx.astype(int), iw - 1)
    y1, x1 = np.minimum(y0 + 1, ih - 1), np.minimum(x0 + 1, iw - 1)
    wy, wx = fy - y0, fx - x0
    xd = x.astype(np.float64)
    top = xd[:, :, y0][:, :, :, x0] * (1 - wx) + xd[:, :, y0][:, :, :, x1] * wx
    bottom = xd[:, :, y1][:, :, :, x0] * (1 - wx) + xd[:, :, y1][:, :, :, x1] * wx
    return top * (1 - wy)[:, None] + bottom * wy[:, None]


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    """Softmax along an axis."""
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def channel_shuffle(x: np.ndarray, groups: int) -> np.ndarray:
    """ShuffleNet's channel shuffle."""
    n, c, h, w = x.shape
    return x.reshape(n, groups, c // groups, h, w).transpose(0, 2, 1, 3, 4).reshape(n, c, h, w)
