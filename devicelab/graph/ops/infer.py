"""Check one operator against the vocabulary: canonical attributes and output shapes, or why not."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from devicelab.graph.errors import GraphError
from devicelab.graph.ops.common import Attrs, Fail, Shape, numel
from devicelab.graph.ops.costs import zero
from devicelab.graph.ops.vocabulary import OPAQUE, spec


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
    except Fail as exc:
        raise GraphError(str(exc), node=node, op=op_type) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise GraphError(f"bad attributes {attrs!r}: {exc}", node=node, op=op_type) from None


def output_dtype(op_type: str, attrs: Attrs, input_dtypes: Sequence[str], node: str | None = None) -> str:
    """The dtype an operator with canonical ``attrs`` writes, or a ``GraphError`` when its inputs'
    dtypes do not fit it (a dequantize_linear of float32)."""
    try:
        return spec(op_type, node).out_dtype(list(input_dtypes), attrs)
    except Fail as exc:
        raise GraphError(str(exc), node=node, op=op_type) from None


def output_dtypes(op_type: str, attrs: Attrs, input_dtypes: Sequence[str], node: str | None = None) -> list[str]:
    """The dtype of each output of an operator with canonical ``attrs``: an opaque operator declares
    one per output, every other operator writes one dtype to all its outputs."""
    if op_type == OPAQUE:
        return list(attrs["output_dtypes"])
    return [output_dtype(op_type, attrs, input_dtypes, node)] * spec(op_type, node).num_outputs(attrs)


_MEMO: dict[tuple[str, bytes, tuple[Shape, ...]], tuple[Attrs, list[Shape], int]] = {}
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
    canonical, shapes, _ = normalize_infer_and_size_memo(op_type, attrs, input_shapes, node)
    return canonical, shapes


def normalize_infer_and_size_memo(
    op_type: str, attrs: Attrs, input_shapes: Sequence[Shape], node: str | None = None
) -> tuple[Attrs, list[Shape], int]:
    """``normalize_and_infer_memo`` and the most elements of any of the operator's outputs or of its
    weights (what the readers' import limits bound), remembered with it."""
    try:
        key = (op_type, orjson.dumps(attrs, option=orjson.OPT_SORT_KEYS), tuple(input_shapes))
    except TypeError:  # not JSON data (e.g. numpy scalars): check it directly
        canonical, shapes = normalize_and_infer(op_type, attrs, input_shapes, node)
        return canonical, shapes, _largest(op_type, input_shapes, shapes, canonical)
    hit = _MEMO.get(key)
    if hit is None:
        canonical, shapes = normalize_and_infer(op_type, attrs, input_shapes, node)
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        largest = _largest(op_type, input_shapes, shapes, canonical)
        hit = _MEMO[key] = (dict(canonical), shapes, largest)
    return dict(hit[0]), hit[1], hit[2]


def _largest(op_type: str, input_shapes: Sequence[Shape], shapes: list[Shape], canonical: Attrs) -> int:
    cost = spec(op_type).params
    weights = 0 if cost is zero else cost([tuple(x) for x in input_shapes], shapes, canonical)
    return max([weights, *(numel(s) for s in shapes)])
