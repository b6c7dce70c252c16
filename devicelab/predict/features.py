"""Predictor features per operator: the latency paper's Table 3, computed in one place.

Every kernel a predictor sees (deduced from a graph, measured by a backend, or read from the
qed data set) gets its features from ``raw_features``: one fixed-length tuple of numbers
computed from the anchor operator's type, input / output shapes and canonical attributes.
``feature_matrix`` then keeps the columns of the kernel's Table 3 row (its *feature group*).
Training and prediction both go through these two functions, so a model never sees features
computed two different ways.

Definitions (paper 001, Table 3; shapes are NCHW with the batch dimension):

* ``input_hw`` / ``output_hw``: height of the first input / output (the paper's networks are
  square; 1 for a rank-2 tensor). It is the height of the operator's input tensor; padding an
  operator applies itself is not included (a TFLite model with an explicit PAD op reports the
  padded height, see ``devicelab.predict.qed``).
* ``input_channels`` / ``output_channels``: axis 1 of a 4-D tensor, the last axis otherwise.
  For a concat, the first input's channels (as the qed data set records them).
* ``stride``, ``kernel_hw``: of the window; for a global mean the window is the input height;
  for concat / split the "kernel" is the number of inputs / outputs (the qed convention).
* ``filters``: output channels of a convolution, the depth multiplier of a depthwise one (the
  qed convention), output features of a fully-connected layer.
* ``input_size`` / ``output_size``: elements of all activation inputs / outputs.
* A ``resize`` (an element-wise kernel by Table 3's rows) gets its output's height, channels and
  size as its input-side features too: it writes every output element from a few input ones,
  so its work follows the output (read from its input, an upsampling looks as many times
  smaller as it enlarges).
* ``kernel_size``: elements of the weight tensor; ``param_size``: weights and bias.
* ``padding_size``: the sum of the pad amounts of a pad operator.
* ``flops``: ``devicelab.graph.ops`` FLOPs (2 x MACs for conv / FC, window work for pooling).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import orjson

from devicelab.graph import ops as ir_ops
from devicelab.graph.ir import QUANTIZATION_TYPES, Graph, Operator
from devicelab.predict.errors import PredictorError

RAW_NAMES: tuple[str, ...] = (
    "input_hw",
    "input_channels",
    "output_hw",
    "output_channels",
    "stride",
    "kernel_hw",
    "filters",
    "groups",
    "input_size",
    "output_size",
    "kernel_size",
    "param_size",
    "padding_size",
    "flops",
)
_COL = {n: i for i, n in enumerate(RAW_NAMES)}

# Table 3, row by row: the features of each category of operations.
_CONV = (
    "input_hw",
    "input_channels",
    "output_hw",
    "stride",
    "kernel_hw",
    "filters",
    "input_size",
    "output_size",
    "kernel_size",
    "flops",
)
FEATURES: dict[str, tuple[str, ...]] = {
    "conv": _CONV,  # Conv2D, Winograd, DepthwiseConv2D
    "grouped_conv": (*_CONV[:-1], "groups", "flops"),  # GroupedConv2D
    "fc": ("input_channels", "filters", "param_size", "flops"),  # FullyConnected
    "mean": ("input_hw", "input_channels", "kernel_hw", "input_size", "flops"),  # Mean
    "concat_split": ("input_hw", "input_channels", "kernel_hw", "output_channels", "input_size", "output_size"),
    "pool": ("input_hw", "input_channels", "output_hw", "stride", "kernel_hw", "input_size", "output_size", "flops"),
    "pad": ("input_hw", "input_channels", "output_hw", "padding_size", "output_size"),
    "elementwise": ("input_hw", "input_channels", "input_size"),
}
FEATURE_COLUMNS: dict[str, np.ndarray] = {g: np.array([_COL[n] for n in names]) for g, names in FEATURES.items()}
# The feature of each group that a kernel's time follows first: its arithmetic, or for the
# kernels that only move data, the elements moved. A kernel type with too few rows for a
# cross-validated model is fitted on it alone (``models.fit``).
WORK: dict[str, str] = {
    "conv": "flops",
    "grouped_conv": "flops",
    "fc": "flops",
    "mean": "flops",
    "pool": "flops",
    "concat_split": "output_size",
    "pad": "output_size",
    "elementwise": "input_size",
}


def work_column(group: str) -> int:
    """The position of ``WORK[group]`` among the group's Table 3 features."""
    return FEATURES[group].index(WORK[group])


# The kernel kinds every deducer speaks, and the Table 3 row whose features each kind uses.
# A backend may refine a kind with a suffix ("conv2d/nchwc"); the group follows the kind.
KIND_GROUP: dict[str, str] = {
    "conv2d": "conv",
    "conv2d_1x1": "conv",
    "winograd": "conv",
    "depthwise_conv2d": "conv",
    "dw_conv_plus_1x1": "conv",
    "grouped_conv2d": "grouped_conv",
    "fully_connected": "fc",
    "matmul": "fc",
    "mean": "mean",
    "concat": "concat_split",
    "split": "concat_split",
    "pooling": "pool",
    "pad": "pad",
    "elementwise": "elementwise",
    "reshape": "elementwise",  # Table 3 has no row for data movement: its size is what costs
    "reorder_input": "elementwise",  # layout changes a runtime inserts (ONNX Runtime NCHWc)
    "reorder_output": "elementwise",
}


def kind_of(kernel_type: str) -> str:
    """The kind of a kernel type: the part before any ``/`` refinement."""
    return kernel_type.split("/", 1)[0]


def feature_group(kernel_type: str) -> str:
    """The Table 3 row (feature group) of a kernel type; ``KeyError`` names an unknown kind."""
    kind = kind_of(kernel_type)
    try:
        return KIND_GROUP[kind]
    except KeyError:
        raise KeyError(f"unknown kernel kind {kind!r} (from kernel type {kernel_type!r})") from None


# A feature group no model of a predictor covers is priced, last of all, by the models of another:
# a grouped convolution by the ordinary convolution's (its FLOPs, weights and sizes count its
# groups), so a predictor trained on networks that happen to run no grouped convolution does not
# refuse every network that runs one; a global mean by average pooling's (it is an average pool
# whose window is the whole map: same input, window and FLOPs). Group -> (the group that stands
# in, its kind preferred).
STAND_IN_GROUP: dict[str, tuple[str, str]] = {"grouped_conv": ("conv", "conv2d"), "mean": ("pool", "pooling")}


def stand_in_types(kernel_type: str, types: Iterable[str]) -> list[str]:
    """The types among ``types`` whose models may price ``kernel_type`` when it has no model of
    its own, the nearest tier only: those of its kind; else of its Table 3 feature group; else of
    the kind, then the group, ``STAND_IN_GROUP`` names for its group (``KeyError`` names an
    unknown kind)."""
    kind, group = kind_of(kernel_type), feature_group(kernel_type)
    others = [t for t in types if t != kernel_type]
    same_kind = [t for t in others if kind_of(t) == kind]
    if same_kind:
        return same_kind
    same_group = [t for t in others if feature_group(t) == group]
    if same_group or group not in STAND_IN_GROUP:
        return same_group
    other_group, other_kind = STAND_IN_GROUP[group]
    in_other = [t for t in others if feature_group(t) == other_group]
    return [t for t in in_other if kind_of(t) == other_kind] or in_other


def refuse_quantized(op_type: str, dtype: str = "float32", name: str = "") -> None:
    """Raise ``PredictorError`` for a quantized operator (a quantization type, or any operator on
    int8 / uint8 values): the predictors model float kernels, and an int8 convolution predicted
    as a float one would be silently wrong."""
    if op_type in QUANTIZATION_TYPES or ir_ops.is_quantized_dtype(dtype):
        what = f"operator {name!r} ({op_type} on {dtype})" if name else f"a {op_type} operator"
        raise PredictorError(
            f"{what} is quantized: the predictors model float kernels and do not predict quantized "
            "models; profile the model itself (precision int8 on a cpu device)"
        )


def op_kind(op_type: str, attrs: dict[str, Any], input_shapes: Sequence[Sequence[int]]) -> str:
    """The kernel kind that runs an IR operator when nothing (fusion, kernel choice) changes it
    (``PredictorError`` for a quantization operator)."""
    refuse_quantized(op_type)
    if op_type == ir_ops.OPAQUE:
        # the deducers leave opaque operators out (no kernel is known for them); a path that does
        # not gets a clear refusal instead of a KeyError
        raise PredictorError("an opaque operator (one outside the graph IR) has no kernel kind to predict")
    if op_type == "conv2d":
        cin = input_shapes[0][1]
        groups = attrs.get("groups", 1)
        if groups > 1 and groups == cin and attrs.get("out_channels") == cin:
            return "depthwise_conv2d"  # a conv with one group per channel is a depthwise one
        return "grouped_conv2d" if groups > 1 else "conv2d"
    category = ir_ops.spec(op_type).category
    return _CATEGORY_KIND[category]


_CATEGORY_KIND = {
    "dwconv": "depthwise_conv2d",
    "fc": "fully_connected",
    "matmul": "matmul",
    "pool": "pooling",
    "mean": "mean",
    "elementwise": "elementwise",
    "concat": "concat",
    "split": "split",
    "pad": "pad",
    "reshape": "reshape",
}


def _hw(shape: Sequence[int]) -> int:
    return int(shape[2]) if len(shape) == 4 else 1


def _ch(shape: Sequence[int]) -> int:
    if len(shape) == 4:
        return int(shape[1])
    return int(shape[-1]) if shape else 1


_OPS = ir_ops.OPS
_prod = math.prod


def raw_features(
    op_type: str,
    input_shapes: Sequence[Sequence[int]],
    output_shapes: Sequence[Sequence[int]],
    attrs: dict[str, Any],
) -> tuple[float, ...]:
    """All ``RAW_NAMES`` values of one operator (canonical attrs, as ``Graph.check`` leaves them)."""
    # Written for speed (it runs for every kernel of every network a batch predicts): shapes are
    # used as given (tuples or lists), FLOPs and parameters come from the operator's own spec.
    s = _OPS.get(op_type) or ir_ops.spec(op_type)
    x = input_shapes[0] if input_shapes else ()
    y = output_shapes[0] if output_shapes else ()
    cin = _ch(x)
    kernel: Any = attrs.get("kernel")
    groups, filters, weights = 1, 0, 0
    if op_type == "conv2d":
        groups, filters = attrs["groups"], attrs["out_channels"]
        weights = filters * (cin // groups) * kernel[0] * kernel[1]
    elif op_type == "depthwise_conv2d":
        groups, filters = cin, attrs["multiplier"]
        weights = cin * filters * kernel[0] * kernel[1]
    elif op_type == "fully_connected":
        filters = attrs["out_features"]
        weights = cin * filters
    elif op_type == "matmul":
        filters = int(y[-1])
        weights = int(input_shapes[1][-2]) * int(input_shapes[1][-1])
    category = s.category
    if category == "mean":
        axes = attrs.get("axes", (2, 3))
        kernel_hw = _hw(x) if (2 in axes or op_type.startswith("global")) else 1
    elif op_type == "concat":
        kernel_hw = len(input_shapes)
    elif op_type == "split":
        kernel_hw = len(output_shapes)
    else:
        kernel_hw = kernel[0] if kernel else 0
    stride = attrs.get("stride")
    in_size = _prod(x) if len(input_shapes) == 1 else sum(_prod(v) for v in input_shapes)
    out_size = _prod(y) if len(output_shapes) == 1 else sum(_prod(v) for v in output_shapes)
    if op_type == "resize":  # its work follows the output it writes (see the module's docs)
        x, cin, in_size = y, _ch(y), out_size
    pads = attrs.get("pads") if op_type == "pad" else None
    return (
        float(_hw(x)),
        float(cin),
        float(_hw(y)),
        float(_ch(y)),
        float(stride[0] if stride else 1),
        float(kernel_hw),
        float(filters),
        float(groups),
        float(in_size),
        float(out_size),
        float(weights),
        float(s.params(input_shapes, output_shapes, attrs)),  # type: ignore[arg-type]  # any sequence works
        float(sum(pads) if pads else 0),
        float(s.flops(input_shapes, output_shapes, attrs)),  # type: ignore[arg-type]
    )


_MEMO: dict[tuple[Any, ...], tuple[float, ...]] = {}
_MEMO_LIMIT = 1 << 16


def op_raw_features(graph: Graph, op: Operator) -> tuple[float, ...]:
    """``raw_features`` of one operator of a checked graph, remembered per (type, attributes,
    shapes): a batch of NAS candidates repeats the same configurations thousands of times."""
    t = graph.tensors
    if op.inputs:
        refuse_quantized(op.type, t[op.inputs[0]].dtype, op.name)
    shapes_in = tuple([t[n].shape for n in op.inputs])
    shapes_out = tuple([t[n].shape for n in op.outputs])
    try:
        key = (op.type, orjson.dumps(op.attrs, option=orjson.OPT_SORT_KEYS), shapes_in, shapes_out)
    except TypeError:  # attributes that are not plain JSON data: no key, compute directly
        return raw_features(op.type, shapes_in, shapes_out, op.attrs)
    hit = _MEMO.get(key)
    if hit is None:
        if len(_MEMO) >= _MEMO_LIMIT:
            _MEMO.clear()
        hit = _MEMO[key] = raw_features(op.type, shapes_in, shapes_out, op.attrs)
    return hit


def feature_matrix(group: str, raws: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """The Table 3 columns of ``group`` for a batch of raw feature tuples: shape (n, features)."""
    a = np.asarray(raws, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != len(RAW_NAMES):
        a = a.reshape(-1, len(RAW_NAMES))
    return a[:, FEATURE_COLUMNS[group]]


def table3(group: str, raw: Sequence[float]) -> dict[str, float]:
    """One kernel's features by name (for reports and tests)."""
    return {n: float(raw[_COL[n]]) for n in FEATURES[group]}


__all__ = [
    "FEATURES",
    "KIND_GROUP",
    "RAW_NAMES",
    "STAND_IN_GROUP",
    "WORK",
    "feature_group",
    "feature_matrix",
    "kind_of",
    "op_kind",
    "op_raw_features",
    "raw_features",
    "stand_in_types",
    "table3",
    "work_column",
]
