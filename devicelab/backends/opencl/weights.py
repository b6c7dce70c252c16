"""Weights in the layouts the OpenCL kernels read, with batch norm folded in (host-side numpy).

The values come from ``devicelab.graph.onnx.operator_weights``, so the OpenCL backend
and the exported ONNX model compute the same function. Folding is done in float64 and rounded
once to the run's precision.
"""

from __future__ import annotations

import numpy as np


def bn_scale_shift(bn: dict[str, np.ndarray], epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    """Inference batch norm as ``y = x * scale + shift`` per channel (float64)."""
    scale = bn["scale"].astype(np.float64) / np.sqrt(bn["var"].astype(np.float64) + epsilon)
    shift = bn["bias"].astype(np.float64) - bn["mean"].astype(np.float64) * scale
    return scale, shift


def fold_batch_norm(
    weight: np.ndarray, bias: np.ndarray | None, bn: dict[str, np.ndarray] | None, epsilon: float
) -> tuple[np.ndarray, np.ndarray]:
    """Weight (output channels first) and bias with a following batch norm folded in (float64);
    a missing bias is zero."""
    w = weight.astype(np.float64)
    b = np.zeros(w.shape[0]) if bias is None else bias.astype(np.float64)
    if bn is None:
        return w, b
    scale, shift = bn_scale_shift(bn, epsilon)
    return w * scale.reshape((-1,) + (1,) * (w.ndim - 1)), b * scale + shift


def conv_blocked(
    weight: np.ndarray, bias: np.ndarray, groups: int, ocb: int, dtype: np.dtype, rows_outer: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """A (cout, cin_g, kh, kw) weight as [group][block][cin_g][kh][kw][ocb] (or, ``rows_outer``,
    [group][block][kh][cin_g][kw][ocb]: the order of the spatial kernels' loops, kernel rows
    outside input channels) and its bias as [group][block * ocb], zero-padded to whole blocks
    of ``ocb`` output channels."""
    cout, cin_g, kh, kw = weight.shape
    cout_g = cout // groups
    nblk = -(-cout_g // ocb)
    w = np.zeros((groups, nblk * ocb, cin_g, kh, kw), dtype=np.float64)
    w[:, :cout_g] = weight.reshape(groups, cout_g, cin_g, kh, kw)
    w = w.reshape(groups, nblk, ocb, cin_g, kh, kw)
    w = w.transpose(0, 1, 4, 3, 5, 2) if rows_outer else w.transpose(0, 1, 3, 4, 5, 2)
    b = np.zeros((groups, nblk * ocb), dtype=np.float64)
    b[:, :cout_g] = bias.reshape(groups, cout_g)
    return np.ascontiguousarray(w, dtype=dtype), np.ascontiguousarray(b, dtype=dtype)


def fc_blocked(
    weight_out_in: np.ndarray, bias: np.ndarray, vector_width: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """An (out, in) weight as [block][in][VW] (blocks of VW output features, the last
    zero-padded) and its bias as [blocks * VW]: the work-item of one block streams its weights
    contiguously."""
    nout, k = weight_out_in.shape
    nblk = -(-nout // vector_width)
    w = np.zeros((nblk * vector_width, k), dtype=np.float64)
    w[:nout] = weight_out_in
    w = w.reshape(nblk, vector_width, k).transpose(0, 2, 1)
    b = np.zeros(nblk * vector_width, dtype=np.float64)
    b[:nout] = bias
    return np.ascontiguousarray(w, dtype=dtype), np.ascontiguousarray(b, dtype=dtype)
