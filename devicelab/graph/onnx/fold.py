"""Constant folding: numpy versions of the ONNX ops that compute shapes and constants.

A node whose inputs are all constants (``Shape`` of an activation included, since its shape is
static once the inputs are fixed) is evaluated here and never becomes an IR operator: this folds
the Shape->Gather->Unsqueeze->Concat subgraphs PyTorch emits for ``x.view(x.size(0), -1)``.

``FOLD_BOUNDS`` gives, for every folder, how many elements its result will hold, computed from the
inputs' shapes and the few values that set a size (Range's start, limit and delta, the shape
operand of ConstantOfShape and Expand) without computing the result: the importer checks that
count against the import's budget (``devicelab.graph.limits``) before it folds anything.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from devicelab.graph.errors import GraphError
from devicelab.graph.limits import DEFAULT_LIMITS, ImportLimits, check_elements


def _np_axes(vals: list[np.ndarray | None], attrs: dict[str, Any], index: int = 1) -> list[int] | None:
    if len(vals) > index and vals[index] is not None:
        return [int(a) for a in np.asarray(vals[index]).reshape(-1)]
    return attrs.get("axes")


def _fold_unsqueeze(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, axes = v[0], _np_axes(v, a)
    rank = x.ndim + len(axes or [])
    for ax in sorted(ax % rank for ax in axes or []):
        x = np.expand_dims(x, ax)
    out: np.ndarray = x
    return out


def _fold_squeeze(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, axes = v[0], _np_axes(v, a)
    if axes is None:
        out: np.ndarray = np.squeeze(x)
        return out
    out = np.squeeze(x, axis=tuple(ax % x.ndim for ax in axes))
    return out


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
    out: np.ndarray = x[tuple(index)]
    return out


def _fold_div(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, y = v
    if np.issubdtype(x.dtype, np.integer) and np.issubdtype(y.dtype, np.integer):
        out: np.ndarray = np.trunc(x / y).astype(np.result_type(x, y))  # ONNX integer division truncates
        return out
    out = (x / y).astype(np.result_type(x, y))
    return out


def _fold_reshape(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    x, target = v[0], [int(t) for t in v[1].reshape(-1)]
    if not a.get("allowzero", 0):
        target = [x.shape[i] if t == 0 else t for i, t in enumerate(target)]
    out: np.ndarray = x.reshape(target)
    return out


def _fold_reduce_prod(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    axes = _np_axes(v, a)
    out: np.ndarray = np.prod(v[0], axis=None if axes is None else tuple(axes), keepdims=bool(a.get("keepdims", 1)))
    return out


def _fold_constant_of_shape(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    fill = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return np.full([int(d) for d in v[0].reshape(-1)], fill.reshape(-1)[0], dtype=fill.dtype)


def _fold_cast(v: list[Any], a: dict[str, Any]) -> np.ndarray:
    dtype = onnx.helper.tensor_dtype_to_np_dtype(a["to"])
    if dtype.kind not in "biuf":
        # a Cast to STRING would make one Python object per element
        raise ValueError(f"a Cast to {dtype} cannot be folded; only numbers and booleans are")
    out: np.ndarray = v[0].astype(dtype)
    return out


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
    "Min": lambda v, a: functools.reduce(np.minimum, v),  # broadcasting, as ONNX's Min and Max do
    "Max": lambda v, a: functools.reduce(np.maximum, v),
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

# -- how large a folded constant will be, before it is computed ------------------------------

MAX_RANK = 64  # numpy's most dimensions


def _shape_operand(value: Any, what: str) -> tuple[int, ...]:
    """A shape given as a tensor's values (ConstantOfShape's input, Expand's target)."""
    flat = np.asarray(value).reshape(-1)
    if flat.size > MAX_RANK:
        raise ValueError(f"the {what} has {flat.size} dimensions; at most {MAX_RANK} are supported")
    dims = tuple(int(d) for d in flat)
    if any(d < 0 for d in dims):
        raise ValueError(f"the {what} {list(dims)} has a negative dimension")
    return dims


def _range_length(v: list[Any], a: dict[str, Any]) -> int:
    """Range's length from its start, limit and delta: ceil((limit - start) / delta), at least 0."""
    start, limit, delta = (np.asarray(x).reshape(-1)[0].item() for x in v[:3])
    if delta == 0:
        raise ValueError("Range's delta is 0")
    if all(isinstance(x, int) for x in (start, limit, delta)):
        return max(0, -int((start - limit) // delta))  # exact for any integers
    steps = (limit - start) / delta
    if not math.isfinite(steps):
        raise ValueError(f"Range({start}, {limit}, {delta}) has no finite length")
    return max(0, int(math.ceil(steps)))


def _broadcast_size(v: list[Any], a: dict[str, Any]) -> int:
    return math.prod(np.broadcast_shapes(*(np.shape(x) for x in v if x is not None)))


def _expand_size(v: list[Any], a: dict[str, Any]) -> int:
    return math.prod(np.broadcast_shapes(np.shape(v[0]), _shape_operand(v[1], "target shape")))


def _gather_size(v: list[Any], a: dict[str, Any]) -> int:
    data, indices = np.asarray(v[0]), np.asarray(v[1])
    if data.ndim == 0:
        return int(indices.size)
    along = data.shape[a.get("axis", 0) % data.ndim]
    return int(indices.size) * (int(data.size) // along if along else 0)


def _first_size(v: list[Any], a: dict[str, Any]) -> int:
    """Ops whose result holds at most as many elements as their first input."""
    return int(np.asarray(v[0]).size)


FOLD_BOUNDS: dict[str, Callable[[list[Any], dict[str, Any]], int]] = {
    **{op: _first_size for op in FOLDERS},
    **{op: _broadcast_size for op in ("Add", "Sub", "Mul", "Div", "Min", "Max", "Equal", "Less", "Greater", "Where")},
    "Concat": lambda v, a: sum(int(np.asarray(x).size) for x in v),
    "Gather": _gather_size,
    "Expand": _expand_size,
    "Range": _range_length,
    "ConstantOfShape": lambda v, a: math.prod(_shape_operand(v[0], "shape")),
}


def fold_quantization(
    op: str, x: np.ndarray, scale: np.ndarray, zero: np.ndarray | None, attrs: dict[str, Any]
) -> np.ndarray:
    """QuantizeLinear or DequantizeLinear of a constant, per tensor or per axis (ONNX semantics:
    round half to even, saturate to the zero point's type, uint8 without one)."""
    if attrs.get("block_size", 0):
        raise ValueError("blocked quantization (block_size) is not supported")
    scale = np.asarray(scale, dtype=np.float32)
    zp = np.zeros((), np.uint8 if op == "QuantizeLinear" else x.dtype) if zero is None else np.asarray(zero)
    if scale.ndim == 1 and x.ndim > 0:
        axis = int(attrs.get("axis", 1)) % x.ndim
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    if op == "DequantizeLinear":
        out: np.ndarray = ((x.astype(np.float32) - zp.astype(np.float32)) * scale).astype(np.float32)
        return out
    info = np.iinfo(zp.dtype)
    q = np.rint(x.astype(np.float32) / scale) + zp.astype(np.float32)
    out = np.clip(q, info.min, info.max).astype(zp.dtype)
    return out


# Op types that never become IR operators (aliased, folded or read as constants by the importer).
DROPPED = frozenset({"Identity", "Dropout", "Cast", "Constant", "Shape", "Size"})


def constant_value(attrs: dict[str, Any], name: str, limits: ImportLimits = DEFAULT_LIMITS) -> np.ndarray:
    """The value of a ``Constant`` node from its attributes (its declared size checked first)."""
    if "value" in attrs:
        tensor = attrs["value"]
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            # numpy_helper would read a file of the server named by the model
            raise GraphError("the constant keeps its data in an external file", node=name, op="Constant")
        check_elements(tensor.dims, limits, node=name, op="Constant", what="its value")
        return numpy_helper.to_array(tensor)
    for key, dtype in (
        ("value_float", np.float32),
        ("value_floats", np.float32),
        ("value_int", np.int64),
        ("value_ints", np.int64),
    ):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    raise GraphError(f"Constant with attributes {sorted(attrs)} is not supported", node=name, op="Constant")
