"""The vocabulary table: one ``OpSpec`` per operator type the lab knows."""

from __future__ import annotations

from dataclasses import dataclass, field

from devicelab.graph.errors import GraphError
from devicelab.graph.ops import attributes, costs, dtypes, shapes
from devicelab.graph.ops.attributes import Normalizer
from devicelab.graph.ops.common import Attrs, CostFn
from devicelab.graph.ops.dtypes import DtypeRule
from devicelab.graph.ops.shapes import ShapeRule

# The type of an operator the IR keeps without knowing what it computes.
OPAQUE = "opaque"


@dataclass(frozen=True)
class OpSpec:
    """What the IR knows of one operator type."""

    name: str
    doc: str
    category: str  # the latency paper's Table 3 category, used to group predictor features
    min_inputs: int
    max_inputs: int | None
    normalize: Normalizer
    infer: ShapeRule
    macs: CostFn = costs.zero
    params: CostFn = costs.zero
    flops: CostFn = costs.zero
    attr_doc: dict[str, str] = field(default_factory=dict)
    # the dtype of its outputs; most operators keep their input's (an int8 conv2d is a quantized one)
    out_dtype: DtypeRule = dtypes.same

    def num_outputs(self, attrs: Attrs) -> int:
        """How many output tensors an operator of this type with these attrs has."""
        if self.name == "opaque":
            return len(attrs["output_shapes"])
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
            name="conv2d",
            doc="2-D convolution, optionally grouped, with optional bias.",
            category="conv",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.conv,
            infer=shapes.conv,
            macs=costs.macs_conv,
            params=costs.params_conv,
            flops=costs.twice(costs.macs_conv),
            attr_doc={**_WINDOW_DOC, "out_channels": "int", "groups": "int, default 1", "bias": "bool, default true"},
        ),
        OpSpec(
            name="depthwise_conv2d",
            doc="Depthwise 2-D convolution: one group per input channel.",
            category="dwconv",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.dwconv,
            infer=shapes.dwconv,
            macs=costs.macs_dwconv,
            params=costs.params_dwconv,
            flops=costs.twice(costs.macs_dwconv),
            attr_doc={
                **_WINDOW_DOC,
                "multiplier": "output channels per input channel, default 1",
                "bias": "bool, default true",
            },
        ),
        OpSpec(
            name="fully_connected",
            doc="x @ W + b over the last axis, with weights held by the operator.",
            category="fc",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.fully_connected,
            infer=shapes.fully_connected,
            macs=costs.macs_fc,
            params=costs.params_fc,
            flops=costs.twice(costs.macs_fc),
            attr_doc={"out_features": "int", "bias": "bool, default true"},
        ),
        OpSpec(
            name="matmul",
            doc="Matrix product of two activation tensors (numpy broadcasting).",
            category="matmul",
            min_inputs=2,
            max_inputs=2,
            normalize=attributes.no_attributes,
            infer=shapes.matmul,
            macs=costs.macs_matmul,
            params=costs.zero,
            flops=costs.twice(costs.macs_matmul),
        ),
        OpSpec(
            name="max_pool2d",
            doc="Max pooling over a window.",
            category="pool",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.pool(avg=False),
            infer=shapes.pool,
            flops=costs.flops_window,
            attr_doc={**_WINDOW_DOC, "ceil_mode": "bool, default false"},
        ),
        OpSpec(
            name="avg_pool2d",
            doc="Average pooling over a window.",
            category="pool",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.pool(avg=True),
            infer=shapes.pool,
            flops=costs.flops_window,
            attr_doc={**_WINDOW_DOC, "ceil_mode": "bool, default false", "count_include_pad": "bool, default false"},
        ),
        OpSpec(
            name="global_avg_pool",
            doc="Average over H and W, output N x C x 1 x 1.",
            category="mean",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.no_attributes,
            infer=shapes.global_pool,
            flops=costs.flops_in,
        ),
        OpSpec(
            name="global_max_pool",
            doc="Max over H and W, output N x C x 1 x 1.",
            category="mean",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.no_attributes,
            infer=shapes.global_pool,
            flops=costs.flops_in,
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
                name=name,
                doc=f"Element-wise x {sym} y with broadcasting; y may be a constant.",
                category="elementwise",
                min_inputs=1,
                max_inputs=2,
                normalize=attributes.binary,
                infer=shapes.binary,
                params=costs.params_binary,
                flops=costs.flops_out,
                attr_doc=binary_doc,
            )
        )
    for name, formula in _ACTIVATIONS.items():
        specs.append(
            OpSpec(
                name=name,
                doc=f"Activation {formula}.",
                category="elementwise",
                min_inputs=1,
                max_inputs=1,
                normalize=attributes.no_attributes,
                infer=shapes.same,
                flops=costs.flops_out,
            )
        )
    specs += [
        OpSpec(
            name="leaky_relu",
            doc="Activation x if x > 0 else alpha * x.",
            category="elementwise",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.alpha(0.01),
            infer=shapes.same,
            flops=costs.flops_out,
            attr_doc={"alpha": "float, default 0.01"},
        ),
        OpSpec(
            name="elu",
            doc="Activation x if x > 0 else alpha * (exp(x) - 1).",
            category="elementwise",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.alpha(1.0),
            infer=shapes.same,
            flops=costs.flops_out,
            attr_doc={"alpha": "float, default 1.0"},
        ),
        OpSpec(
            name="clip",
            doc="Clamp to [min, max] (either may be null).",
            category="elementwise",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.clip,
            infer=shapes.same,
            flops=costs.flops_out,
            attr_doc={"min": "float or null", "max": "float or null"},
        ),
        OpSpec(
            name="batch_norm",
            doc="Inference batch norm per channel (axis 1).",
            category="elementwise",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.batch_norm,
            infer=shapes.same,
            params=costs.params_bn,
            flops=costs.flops_twice_out,
            attr_doc={"epsilon": "float, default 1e-5"},
        ),
        OpSpec(
            name="concat",
            doc="Concatenate inputs along an axis.",
            category="concat",
            min_inputs=1,
            max_inputs=None,
            normalize=attributes.concat,
            infer=shapes.concat,
            attr_doc={"axis": "int, default 1"},
        ),
        OpSpec(
            name="split",
            doc="Split along an axis into pieces of the given sizes.",
            category="split",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.split,
            infer=shapes.split,
            attr_doc={"axis": "int, default 1", "sizes": "list of int"},
        ),
        OpSpec(
            name="pad",
            doc="Pad every axis (ONNX order: all begins, then all ends).",
            category="pad",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.pad,
            infer=shapes.pad,
            attr_doc={"pads": "list of 2 x rank ints", "mode": "constant|reflect|edge", "value": "float, default 0"},
        ),
        OpSpec(
            name="reduce_mean",
            doc="Mean over axes.",
            category="mean",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.reduce,
            infer=shapes.reduce,
            flops=costs.flops_in,
            attr_doc={"axes": "list of int, default all", "keepdims": "bool, default true"},
        ),
        OpSpec(
            name="reduce_max",
            doc="Max over axes.",
            category="mean",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.reduce,
            infer=shapes.reduce,
            flops=costs.flops_in,
            attr_doc={"axes": "list of int, default all", "keepdims": "bool, default true"},
        ),
        OpSpec(
            name="reduce_sum",
            doc="Sum over axes.",
            category="mean",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.reduce,
            infer=shapes.reduce,
            flops=costs.flops_in,
            attr_doc={"axes": "list of int, default all", "keepdims": "bool, default true"},
        ),
        OpSpec(
            name="reshape",
            doc="Reshape to a fixed shape (0 copies, one -1 inferred).",
            category="reshape",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.reshape,
            infer=shapes.reshape,
            attr_doc={"shape": "list of int"},
        ),
        OpSpec(
            name="flatten",
            doc="Flatten to 2-D around an axis.",
            category="reshape",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.flatten,
            infer=shapes.flatten,
            attr_doc={"axis": "int, default 1"},
        ),
        OpSpec(
            name="transpose",
            doc="Permute axes.",
            category="reshape",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.transpose,
            infer=shapes.transpose,
            attr_doc={"perm": "list of int"},
        ),
        OpSpec(
            name="softmax",
            doc="Softmax along an axis.",
            category="elementwise",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.softmax,
            infer=shapes.same,
            flops=costs.flops_softmax,
            attr_doc={"axis": "int, default -1"},
        ),
        OpSpec(
            name="channel_shuffle",
            doc="ShuffleNet channel shuffle with a number of groups.",
            category="reshape",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.channel_shuffle,
            infer=shapes.same,
            attr_doc={"groups": "int"},
        ),
        OpSpec(
            name="resize",
            doc="Resize H and W (nearest or bilinear).",
            category="elementwise",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.resize,
            infer=shapes.resize,
            flops=costs.flops_resize,
            attr_doc={"size": "[H, W] of the output", "mode": "nearest|linear", "align_corners": "bool, default false"},
        ),
    ]
    specs += _quantization_specs()
    specs.append(
        OpSpec(
            name=OPAQUE,
            doc="An operator of an imported model that has no equivalent in the IR (a TFLite ARG_MAX, a "
            "custom operator): kept by name with its tensors and declared output shapes so the model "
            "runs as uploaded on runtimes that read the file itself; no MACs, no FLOPs, no kernel.",
            category=OPAQUE,
            min_inputs=0,
            max_inputs=None,
            normalize=attributes.opaque,
            infer=shapes.declared,
            attr_doc={
                "op": "str, the source operator (TFLite builtin name or custom code)",
                "custom": "bool, default false: a TFLite custom operator",
                "output_shapes": "list of shapes, one per output",
                "output_dtypes": "list of dtypes, one per output, default float32",
            },
            out_dtype=dtypes.declared,
        )
    )
    return {s.name: s for s in specs}


def _quantization_specs() -> list[OpSpec]:
    """The operators that change the number format. The quantized forms of the others are the
    same types on int8 / uint8 tensors (``dtypes``): ONNX QLinearConv reads as a ``conv2d`` on
    uint8 tensors, a TFLite int8 CONV_2D as a ``conv2d`` on int8 tensors."""
    return [
        OpSpec(
            name="quantize_linear",
            doc="Quantize to int8 or uint8: saturate(round(x / scale) + zero_point) (ONNX QuantizeLinear, "
            "TFLite QUANTIZE). Scales and zero points are not kept.",
            category="quantize",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.quantize,
            infer=shapes.same,
            flops=costs.flops_out,
            attr_doc={"dtype": "int8|uint8, default uint8"},
            out_dtype=dtypes.quantize,
        ),
        OpSpec(
            name="dequantize_linear",
            doc="Back to float32: (x - zero_point) * scale (ONNX DequantizeLinear, TFLite DEQUANTIZE).",
            category="quantize",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.no_attributes,
            infer=shapes.same,
            flops=costs.flops_out,
            out_dtype=dtypes.dequantize,
        ),
        OpSpec(
            name="conv_integer",
            doc="2-D convolution of int8 / uint8 values into int32 sums, without bias (ONNX ConvInteger).",
            category="conv",
            min_inputs=1,
            max_inputs=1,
            normalize=attributes.conv_integer,
            infer=shapes.conv,
            macs=costs.macs_conv,
            params=costs.params_conv,
            flops=costs.twice(costs.macs_conv),
            attr_doc={**_WINDOW_DOC, "out_channels": "int", "groups": "int, default 1"},
            out_dtype=dtypes.integer_accumulator,
        ),
        OpSpec(
            name="matmul_integer",
            doc="Matrix product of int8 / uint8 values into int32 sums (ONNX MatMulInteger): of two "
            "activations, or of one and a constant weight of out_features columns.",
            category="matmul",
            min_inputs=1,
            max_inputs=2,
            normalize=attributes.matmul_integer,
            infer=shapes.matmul_integer,
            macs=costs.macs_matmul,
            params=costs.params_matmul_integer,
            flops=costs.twice(costs.macs_matmul),
            attr_doc={"out_features": "int, with one input only"},
            out_dtype=dtypes.integer_accumulator,
        ),
    ]


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
