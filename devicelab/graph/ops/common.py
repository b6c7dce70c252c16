"""Names every part of the operator vocabulary shares: shape and attribute types, and the checks."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

Shape = tuple[int, ...]
Attrs = dict[str, Any]
# (input shapes, output shapes, canonical attributes) -> a count (MACs, parameters or FLOPs).
CostFn = Callable[[list[Shape], list[Shape], Attrs], int]

DTYPES = ("float32", "float16", "int8", "uint8", "int32", "int64")


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of this shape."""
    return math.prod(shape)


class Fail(Exception):
    """Raised inside a spec; turned into a ``GraphError`` that names the node."""


def need(cond: bool, reason: str) -> None:
    """Raise ``Fail`` with ``reason`` unless ``cond`` holds."""
    if not cond:
        raise Fail(reason)


def int_list(value: Any, length: int, what: str) -> list[int]:
    """An attribute as a list of ``length`` ints (one int stands for all of them)."""
    if type(value) is int:
        return [value] * length
    # type() rather than isinstance: bool is an int subclass and is refused.
    if type(value) in (list, tuple) and len(value) == length and all(type(v) is int for v in value):
        return list(value)
    if isinstance(value, int) and not isinstance(value, bool):  # an int subclass (e.g. numpy's)
        return [int(value)] * length
    need(
        isinstance(value, (list, tuple))
        and len(value) == length
        and all(isinstance(v, int) and not isinstance(v, bool) for v in value),
        f"attribute {what!r} must be a list of {length} integers, got {value!r}",
    )
    return [int(v) for v in value]


def check_axis(axis: Any, rank: int, what: str = "axis") -> int:
    """An axis attribute checked against ``rank``, as a non-negative index."""
    need(isinstance(axis, int) and not isinstance(axis, bool), f"attribute {what!r} must be an integer")
    need(-rank <= axis < rank, f"attribute {what!r}={axis} is out of range for rank {rank}")
    return int(axis) % rank
