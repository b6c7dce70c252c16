"""Constant folding: numpy versions of the ONNX ops that compute shapes and constants.

A node whose inputs are all constants (``Shape`` of an activation included, since its shape is
static once the inputs are fixed) is evaluated here and never becomes an IR operator: this folds
the Shape->Gather->Unsqueeze->Concat subgraphs PyTorch emits for ``x.view(x.size(0), -1)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from devicelab.graph.errors import GraphError


def _np_axes(vals: list[np.ndarray | None], attrs: dict[str, Any], index: int = 1) -> list[int] | None:
    if len(vals) > index and vals[index] is not None:
        return [int(a) for a in np.asarray(vals[index]).reshape(-1)]
    return attrs.get("axes")


def _fold_unsqueeze(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, axes = v[0], _np_axes(v, a)
    rank = x.ndim + len(axes or [])
    for ax in sorted(ax % rank for ax in axes or []):
        x = np.expand_dims(x, ax)
    return x


def _fold_squeeze(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, axes = v[0], _np_axes(v, a)
    if axes is None:
        return np.squeeze(x)
    return np.squeeze(x, axis=tuple(ax % x.ndim for ax in axes))


def _fold_slice(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x = v[0]
    if len(v) > 1:
        starts, ends = list(v[1].reshape(-1)), list(v[2].reshape(-1))
        axes = list(v[3].reshape(-1)) if len(v) > 3 and v[3] is not None else list(range(len(starts)))
        steps = list(v[4].reshape(-1)) if len(v) > 4 and v[4] is not None else [1] * len(starts)
    else:
        starts, ends = a["starts"], a["ends"]
        axes, steps = a.get("axes", list(range(len(starts)))), [1] * len(starts)
    index = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=False):
        index[int(ax) % x.ndim] = slice(int(s), int(e), int(st))
    return x[tuple(index)]


def _fold_div(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, y = v
    if np.issubdtype(x.dtype, np.integer) and np.issubdtype(y.dtype, np.integer):
        return np.trunc(x / y).astype(np.result_type(x, y))  # ONNX integer division truncates
    return (x / y).astype(np.result_type(x, y))


def _fold_reshape(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, target = v[0], [int(t) for t in v[1].reshape(-1)]
    if not a.get("allowzero", 0):
        target = [x.shape[i] if t == 0 else t for i, t in enumerate(target)]
    return x.reshape(target)


def _fold_reduce_prod(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    axes = _np_axes(v, a)
    return np.prod(v[0], axis=None if axes is None else tuple(axes), keepdims=bool(a.get("keepdims", 1)))


def _fold_constant_of_shape(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    fill = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return np.full([int(d) for d in v[0].reshape(-1)], fill.reshape(-1)[0], dtype=fill.dtype)


def _fold_cast(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    return v[0].astype(onnx.helper.tensor_dtype_to_np_dtype(a["to"]))


FOLDERS: dict[str, Callable[[list[Any], dict[str, Any]], np.ndarray]] = {
    "Gather": lambda v, a: np.take(v[0], v[1].astype(np.int64), axis=a.get("axis", 0)),
    "Unsqueeze": _fold_unsqueeze,
    "Squeeze": _fold_squeeze,
    "Concat": lambda v, a: np.concatenate([np.atleast_1d(x) for x in v], axis=a["axis"]),
    "Cast": _fold_cast,
    "Slice": _fold_slice,
    "Add": lambda v, a: np.add(v[0], v[1]),
    "Sub": lambda v, a: np.subtract(v[0], v[1]),
    "Mul": lambda v, a: np.multiply(v[0], v[1]),
    "Div": _fold_div,
    "Neg": lambda v, a: np.negative(v[0]),
    "Abs": lambda v, a: np.abs(v[0]),
    "Sqrt": lambda v, a: np.sqrt(v[0]),
    "Floor": lambda v, a: np.floor(v[0]),
    "Ceil": lambda v, a: np.ceil(v[0]),
    "Min": lambda v, a: np.minimum.reduce(v),
    "Max": lambda v, a: np.maximum.reduce(v),
    "Equal": lambda v, a: np.equal(v[0], v[1]),
    "Less": lambda v, a: np.less(v[0], v[1]),
    "Greater": lambda v, a: np.greater(v[0], v[1]),
    "Not": lambda v, a: np.logical_not(v[0]),
    "Where": lambda v, a: np.where(v[0], v[1], v[2]),
    "Expand": lambda v, a: np.array(np.broadcast_to(v[0], np.broadcast_shapes(v[0].shape, tuple(v[1].reshape(-1))))),
    "Range": lambda v, a: np.arange(v[0].item(), v[1].item(), v[2].item()).astype(v[0].dtype),
    "Reshape": _fold_reshape,
    "Flatten": lambda v, a: v[0].reshape(int(np.prod(v[0].shape[: a.get("axis", 1)])), -1),
    "Transpose": lambda v, a: np.transpose(v[0], a.get("perm")),
    "ReduceProd": _fold_reduce_prod,
    "ConstantOfShape": _fold_constant_of_shape,
    "Identity": lambda v, a: v[0],
}

# Op types that never become IR operators (aliased, folded or read as constants by the importer).
DROPPED = frozenset({"Identity", "Dropout", "Cast", "Constant", "Shape", "Size"})


def constant_value(attrs: dict[str, Any], name: str) -> np.ndarray:
    """The value of a ``Constant`` node from its attributes."""
    if "value" in attrs:
        return numpy_helper.to_array(attrs["value"])
    for key, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    raise GraphError(f"Constant with attributes {sorted(attrs)} is not supported", node=name, op="Constant")
