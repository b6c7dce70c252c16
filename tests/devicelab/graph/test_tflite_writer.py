"""The TFLite writer: the file it writes (header, layouts, names, fusion, padding, fp16), what it
refuses, and that the reader gives back, and LiteRT computes, what every IR operator type means."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from devicelab.graph import OPS, Graph, GraphBuilder, GraphError, nas, zoo
from devicelab.graph.ir import QUANTIZATION_TYPES
from devicelab.graph.onnx import graph_from_onnx_bytes, graph_to_onnx_bytes, operator_weights
from devicelab.graph.tflite import TfliteExport, graph_from_tflite_bytes, graph_to_tflite, graph_to_tflite_bytes
from devicelab.graph.tflite.emit import to_nhwc
from devicelab.graph.tflite.emit_layers import FLOAT32_LOWEST
from devicelab.graph.tflite.wire import RawModel, decode
from tests.devicelab.graph.test_onnx_import import torch_style
from tests.devicelab.graph.tflite_roundtrip import assert_reads_back, nhwc, random_feeds, run_litert
from tests.devicelab.graph.tflite_writer import TFLiteWriter

Build = Callable[[], Graph]
X = (1, 8, 8, 8)
NP_TYPES = {0: np.float32, 1: np.float16, 2: np.int32}


def single(op_type: str, in_shape: tuple[int, ...] = X, **attrs: Any) -> Build:
    """A graph of one operator on the input."""

    def build() -> Graph:
        b = GraphBuilder(op_type, in_shape)
        return b.build(b.op(op_type, [b.input], **attrs))

    return build


def chain(*steps: tuple[str, dict[str, Any]], in_shape: tuple[int, ...] = X) -> Build:
    """A graph of operators applied one after the other."""

    def build() -> Graph:
        b = GraphBuilder("chain", in_shape)
        x = b.input
        for op_type, attrs in steps:
            x = b.op(op_type, [x], **attrs)
        return b.build(x)

    return build


def pair(op_type: str, other: str) -> Build:
    """``op_type`` of the input and ``other(input)``."""

    def build() -> Graph:
        b = GraphBuilder(f"{op_type}_pair", X)
        return b.build(b.op(op_type, [b.input, b.op(other, [b.input])]))

    return build


def squeeze_excite(op_type: str) -> Build:
    """``op_type`` of the input and its pooled [1, C, 1, 1] gate."""

    def build() -> Graph:
        b = GraphBuilder(f"{op_type}_gate", X)
        return b.build(b.op(op_type, [b.input, b.sigmoid(b.global_avg_pool(b.input))]))

    return build


def lower_rank_operand() -> Graph:
    """An add of the input and a [C, 1, 1] activation (made 4-D for TFLite)."""
    b = GraphBuilder("lower_rank", X)
    gate = b.reshape(b.sigmoid(b.global_avg_pool(b.input)), [8, 1, 1])
    return b.build(b.add(b.input, gate))


def matmul_inputs(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Build:
    """A matmul of two graph inputs."""

    def build() -> Graph:
        b = GraphBuilder("matmul", shape_a)
        return b.build(b.op("matmul", [b.input, b.add_input("other", shape_b)]))

    return build


def split_case(axis: int, sizes: list[int]) -> Build:
    """A split whose pieces are all graph outputs."""

    def build() -> Graph:
        b = GraphBuilder("split", X)
        return b.build(b.split(b.input, sizes, axis=axis))

    return build


def concat_case(axis: int) -> Build:
    """A concat of the input with its ReLU."""

    def build() -> Graph:
        b = GraphBuilder("concat", X)
        return b.build(b.concat([b.input, b.relu(b.input), b.input], axis=axis))

    return build


def pooled(op_type: str, **attrs: Any) -> Build:
    """``op_type`` of the pooled [1, C, 1, 1] input (reshapes that keep the element order)."""
    return chain(("global_avg_pool", {}), (op_type, attrs))


WINDOW = {"kernel": [3, 3], "stride": [2, 2], "pads": [1, 1, 1, 1]}

# Cases whose output LiteRT and onnxruntime compute alike; SHAPE_ONLY ones reshape a 4-D tensor,
# which keeps the element count but (by design, as the reader) not NCHW's element order.
CASES: dict[str, list[tuple[str, Build]]] = {
    "conv2d": [
        ("same", single("conv2d", out_channels=16, kernel=[3, 3], pads=[1, 1, 1, 1], bias=True)),
        ("torch_stride2", single("conv2d", out_channels=4, bias=False, **WINDOW)),
        ("tf_stride2", single("conv2d", out_channels=4, kernel=[3, 3], stride=[2, 2], pads=[0, 0, 1, 1])),
        (
            "grouped_dilated",
            single("conv2d", out_channels=12, kernel=[3, 1], pads=[2, 0, 1, 0], dilation=[2, 1], groups=2),
        ),
        ("one_group_per_channel", single("conv2d", out_channels=16, kernel=[1, 1], groups=8, bias=False)),
    ],
    "depthwise_conv2d": [
        ("torch_stride2", single("depthwise_conv2d", bias=True, **WINDOW)),
        ("multiplier", single("depthwise_conv2d", kernel=[5, 5], pads=[2, 2, 2, 2], multiplier=2, bias=False)),
        ("dilated", single("depthwise_conv2d", kernel=[3, 3], pads=[2, 2, 2, 2], dilation=[2, 2])),
    ],
    "fully_connected": [
        ("2d_bias", single("fully_connected", (2, 32), out_features=6)),
        ("2d", single("fully_connected", (2, 32), out_features=6, bias=False)),
        ("3d", single("fully_connected", (1, 5, 32), out_features=6)),
    ],
    "matmul": [("3d", matmul_inputs((1, 3, 5), (1, 5, 2))), ("2d", matmul_inputs((3, 5), (5, 4)))],
    "max_pool2d": [
        ("torch_stride2", single("max_pool2d", **WINDOW)),
        ("ceil", single("max_pool2d", (1, 3, 5, 5), kernel=[2, 2], stride=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True)),
        ("tf_same", single("max_pool2d", kernel=[3, 3], stride=[2, 2], pads=[0, 0, 1, 1])),
        ("valid", single("max_pool2d", kernel=[2, 2], stride=[2, 2])),
    ],
    "avg_pool2d": [
        ("excluding_pads", single("avg_pool2d", **WINDOW)),
        ("including_pads", single("avg_pool2d", kernel=[3, 3], pads=[1, 1, 1, 1], count_include_pad=True)),
        ("same", single("avg_pool2d", kernel=[3, 3], pads=[1, 1, 1, 1])),
        ("ceil", single("avg_pool2d", kernel=[3, 3], stride=[2, 2], pads=[0, 0, 1, 1], ceil_mode=True)),
    ],
    "global_avg_pool": [("plain", single("global_avg_pool"))],
    "global_max_pool": [("plain", single("global_max_pool"))],
    "leaky_relu": [("alpha", single("leaky_relu", alpha=0.2))],
    "elu": [("plain", single("elu"))],
    "clip": [
        ("both", single("clip", min=-1.5, max=1.0)),
        ("max_only", single("clip", max=3.5)),
        ("min_only", single("clip", min=-2.0)),
        ("n1_to_1", single("clip", min=-1.0, max=1.0)),
        ("0_to_1", single("clip", min=0.0, max=1.0)),
    ],
    "batch_norm": [
        ("4d", single("batch_norm", epsilon=1e-3)),
        ("2d", single("batch_norm", (2, 16))),
        ("3d", single("batch_norm", (1, 4, 6))),
    ],
    "concat": [("channels", concat_case(1)), ("height", concat_case(2))],
    "split": [("unequal", split_case(1, [3, 5])), ("equal", split_case(1, [4, 4])), ("width", split_case(3, [2, 6]))],
    "pad": [
        ("value", single("pad", pads=[0, 0, 1, 2, 0, 0, 2, 1], value=0.5)),
        ("zeros", single("pad", pads=[0, 1, 0, 0, 0, 0, 3, 1])),
        ("reflect", single("pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect")),
    ],
    "reduce_mean": [
        ("spatial", single("reduce_mean", axes=[2, 3])),
        ("height", single("reduce_mean", axes=[2], keepdims=False)),
    ],
    "reduce_max": [("channels", single("reduce_max", axes=[1], keepdims=False))],
    "reduce_sum": [("all", single("reduce_sum")), ("two", single("reduce_sum", axes=[1, 3], keepdims=False))],
    "reshape": [("classifier", pooled("reshape", shape=[1, 8])), ("3d", single("reshape", shape=[1, 64, 8]))],
    "flatten": [("classifier", pooled("flatten")), ("spatial", single("flatten"))],
    "transpose": [
        ("4d", single("transpose", perm=[0, 2, 3, 1])),
        ("3d", single("transpose", (2, 3, 4), perm=[1, 0, 2])),
    ],
    "softmax": [("channels", single("softmax", axis=1)), ("2d", single("softmax", (2, 10)))],
    "channel_shuffle": [("g2", single("channel_shuffle", groups=2)), ("g4", single("channel_shuffle", groups=4))],
    "resize": [
        ("nearest", single("resize", size=[16, 16], mode="nearest")),
        ("linear", single("resize", size=[12, 10], mode="linear")),
        ("linear_align", single("resize", size=[12, 10], mode="linear", align_corners=True)),
    ],
}
for _name in ("relu", "relu6", "hard_swish", "hard_sigmoid", "sigmoid", "swish", "tanh", "gelu"):
    CASES[_name] = [("plain", single(_name))]
for _name, _other in (("add", "relu"), ("sub", "tanh"), ("mul", "tanh"), ("div", "sigmoid")):
    CASES[_name] = [
        ("two_inputs", pair(_name, _other)),
        ("gate", squeeze_excite(_name)),
        ("channel_const", single(_name, const_shape=[1, 8, 1, 1])),
        ("scalar", single(_name, const_shape=[1], const_value=2.5)),
        ("const_first", single(_name, const_shape=[8, 1, 1], const_first=True)),
    ]
CASES["add"].append(("lower_rank", lower_rank_operand))
SHAPE_ONLY = {("reshape", "3d"), ("flatten", "spatial")}

ALL_CASES = [pytest.param(t, name, build, id=f"{t}-{name}") for t, cases in CASES.items() for name, build in cases]


def test_every_op_type_has_a_case() -> None:
    # the quantization operators write int8 / int32 tensors, which the writer refuses (below); an
    # opaque operator has nothing to write (test_tflite_opaque)
    assert set(CASES) == set(OPS) - QUANTIZATION_TYPES - {"opaque"}


@pytest.mark.parametrize("op_type", sorted(QUANTIZATION_TYPES - {"dequantize_linear"}))
def test_quantization_operators_are_refused_naming_their_tensor(op_type: str) -> None:
    b = GraphBuilder("q", (1, 8, 8, 8))
    x = b.op("quantize_linear", [b.input], dtype="int8", name="q")
    if op_type != "quantize_linear":
        x = b.op(
            op_type, [x], **({"kernel": 1, "out_channels": 8} if op_type == "conv_integer" else {"out_features": 8})
        )
    graph = b.build(b.op("dequantize_linear", [x], name="dq"))
    with pytest.raises(GraphError, match="float32 activations only") as err:
        graph_to_tflite(graph)
    assert err.value.node == "q"  # the first int8 tensor


def onnxruntime_outputs(graph: Graph, feeds: dict[str, np.ndarray], seed: int = 0) -> list[np.ndarray]:
    """What the ONNX export (same seed, so the same weights) computes, NHWC for 4-D outputs."""
    session = ort.InferenceSession(graph_to_onnx_bytes(graph, seed=seed), providers=["CPUExecutionProvider"])
    return [nhwc(o) for o in session.run(None, feeds)]


def assert_runs_like_onnxruntime(graph: Graph, export: TfliteExport, exact: bool = True) -> None:
    """LiteRT (with XNNPACK and with TFLite's own kernels) gives the IR's shapes and ONNX's values."""
    feeds = random_feeds(graph)
    expected = onnxruntime_outputs(graph, feeds)
    tol = 1e-5 if export.precision == "fp32" else 5e-3  # float16 weights round at about 1e-3
    for builtin_kernels in (False, True):
        outs = run_litert(export.data, feeds, builtin_kernels)
        assert [o.shape for o in outs] == [tuple(to_nhwc(graph.tensors[t].shape)) for t in graph.outputs]
        if exact:
            for got, want in zip(outs, expected):
                np.testing.assert_allclose(got, want, rtol=0, atol=tol * max(1.0, float(np.abs(want).max())))


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize(("op_type", "case", "build"), ALL_CASES)
def test_every_op_type_reads_back_and_runs_like_onnxruntime(
    op_type: str, case: str, build: Build, precision: str
) -> None:
    graph = build()
    export = graph_to_tflite(graph, precision=precision)
    assert_reads_back(graph, export, graph_from_tflite_bytes(export.data))
    assert_runs_like_onnxruntime(graph, export, exact=(op_type, case) not in SHAPE_ONLY)


# -- the file -----------------------------------------------------------------------------------


def schema(module: str) -> Any:
    """A class of the generated ``tflite`` reader."""
    return getattr(importlib.import_module(f"tflite.{module}"), module)


def constants(data: bytes) -> dict[str, np.ndarray]:
    """Every constant tensor's value, by tensor name (the reader keeps only small buffers)."""
    model = schema("Model").GetRootAs(data, 0)
    sg = model.Subgraphs(0)
    out = {}
    for i in range(sg.TensorsLength()):
        t = sg.Tensors(i)
        buf = model.Buffers(t.Buffer())
        if buf.DataLength():
            raw = buf.DataAsNumpy().tobytes()
            out[t.Name().decode()] = np.frombuffer(raw, NP_TYPES[t.Type()]).reshape(t.ShapeAsNumpy())
    return out


def options_of(raw: RawModel, index: int) -> dict[str, Any]:
    """The decoded builtin options of operator ``index``."""
    return raw.ops[index].options


def conv_bn_relu() -> Graph:
    """conv -> batch norm -> relu, then gelu (an operator code above 127)."""
    b = GraphBuilder("cbr", X)
    return b.build(b.act(b.relu(b.bn(b.conv(b.input, 16, 3))), "gelu"))


def test_header_schema_identifier_and_operator_codes() -> None:
    data = graph_to_tflite_bytes(conv_bn_relu())
    assert data[4:8] == b"TFL3"
    model = schema("Model").GetRootAs(data, 0)
    assert model.Version() == 3
    codes = {}
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        codes[oc.BuiltinCode()] = oc.DeprecatedBuiltinCode()
    builtin = schema("BuiltinOperator")
    assert codes == {builtin.CONV_2D: builtin.CONV_2D, builtin.GELU: 127}  # GELU is 150
    assert model.Buffers(0).DataLength() == 0  # the empty sentinel
    for i in range(1, model.BuffersLength()):
        start = model.Buffers(i)._tab.Vector(4)  # where the data starts in the file
        assert start % 16 == 0


def test_weights_are_the_onnx_draws_in_tflite_layouts() -> None:
    b = GraphBuilder("layouts", (1, 4, 8, 8))
    x = b.dwconv(b.conv(b.input, 6, 3, bias=True, name="conv"), 3, multiplier=2, bias=True, name="dw")
    x = b.fc(b.flatten(b.global_avg_pool(x), name="flat"), 5, name="fc")
    graph = b.build(x)
    drawn = operator_weights(graph, seed=3)
    values = constants(graph_to_tflite_bytes(graph, seed=3))
    np.testing.assert_array_equal(values["conv::weight"], drawn["conv"]["weight"].transpose(0, 2, 3, 1))  # OHWI
    assert values["dw::weight"].shape == (1, 3, 3, 12)
    np.testing.assert_array_equal(values["dw::weight"], drawn["dw"]["weight"].transpose(1, 2, 3, 0))
    np.testing.assert_array_equal(values["fc::weight"], drawn["fc"]["weight"])  # [out, in]
    np.testing.assert_array_equal(values["fc::bias"], drawn["fc"]["bias"])


def test_every_tensor_is_named_and_operators_map_back_by_index_and_name() -> None:
    graph = zoo.build("mobilenet_v3_small")
    export = graph_to_tflite(graph, precision="fp16")
    raw = decode(export.data)
    names = [t.name for t in raw.tensors]
    assert all(names) and len(set(names)) == len(names)
    assert [names[i] for i in raw.inputs] == graph.inputs
    builtin_names = {v: k for k, v in vars(schema("BuiltinOperator")).items() if not k.startswith("_")}
    assert [e.index for e in export.ops] == list(range(len(raw.ops)))
    for e, op in zip(export.ops, raw.ops):
        assert builtin_names[op.code] == e.builtin
        assert names[op.outputs[0]] == e.name
    ir_names = {o.name for o in graph.operators}
    assert {n for e in export.ops for n in e.ir_ops} == ir_names
    for e in export.ops:
        assert e.name.split("::")[0] in ir_names


def test_the_callers_graph_is_untouched_and_the_seed_decides_the_weights() -> None:
    graph = zoo.build("mnasnet0_5")
    before = copy.deepcopy(graph)
    first = graph_to_tflite_bytes(graph, seed=1)
    assert graph == before
    assert graph_to_tflite_bytes(graph, seed=1) == first
    assert graph_to_tflite_bytes(graph, seed=2) != first


# -- fusion ---------------------------------------------------------------------------------------


def fused(op_type: str, act: str, **act_attrs: Any) -> Build:
    """``op_type`` (conv, dwconv, fc, add, mul, batch_norm, or conv -> bn) followed by ``act``."""

    def build() -> Graph:
        b = GraphBuilder(f"{op_type}_{act}", (1, 16) if op_type.startswith("fc") else X)
        x = {
            "conv": lambda: b.conv(b.input, 8, 3),
            "conv_bn": lambda: b.bn(b.conv(b.input, 8, 3)),
            "dw_bn": lambda: b.bn(b.dwconv(b.input, 3)),
            "fc_bn": lambda: b.bn(b.fc(b.input, 8)),
            "add": lambda: b.add(b.input, b.sigmoid(b.input)),
            "mul": lambda: b.op("mul", [b.input], const_shape=[1, 8, 1, 1]),
            "batch_norm": lambda: b.bn(b.input),
        }[op_type]()
        return b.build(b.act(x, act, **act_attrs))

    return build


@pytest.mark.parametrize(
    ("build", "builtins", "code"),
    [
        (fused("conv_bn", "relu"), [("CONV_2D", ("conv2d_0", "batch_norm_0", "relu_0"))], 1),
        (fused("dw_bn", "relu6"), [("DEPTHWISE_CONV_2D", ("depthwise_conv2d_0", "batch_norm_0", "relu6_0"))], 3),
        (fused("fc_bn", "relu"), [("FULLY_CONNECTED", ("fully_connected_0", "batch_norm_0", "relu_0"))], 1),
        (fused("conv", "clip", min=-1.0, max=1.0), [("CONV_2D", ("conv2d_0", "clip_0"))], 2),
        (fused("add", "relu6"), [("LOGISTIC", ("sigmoid_0",)), ("ADD", ("add_0", "relu6_0"))], 3),
        (fused("mul", "relu"), [("MUL", ("mul_0", "relu_0"))], 1),
        (fused("batch_norm", "relu"), [("MUL", ("batch_norm_0",)), ("ADD", ("batch_norm_0", "relu_0"))], 1),
        # LiteRT's kernels do not apply a fused TANH, so it stays an operator.
        (fused("conv", "tanh"), [("CONV_2D", ("conv2d_0",)), ("TANH", ("tanh_0",))], 0),
        (fused("conv", "sigmoid"), [("CONV_2D", ("conv2d_0",)), ("LOGISTIC", ("sigmoid_0",))], 0),
    ],
)
def test_batch_norms_and_activations_fold_as_the_converter_folds_them(
    build: Build, builtins: list[tuple[str, tuple[str, ...]]], code: int
) -> None:
    graph = build()
    export = graph_to_tflite(graph)
    assert [(e.builtin, e.ir_ops) for e in export.ops] == builtins
    carrier = next(e for e in export.ops if len(e.ir_ops) > 1) if code else export.ops[0]
    assert options_of(decode(export.data), carrier.index).get("FusedActivationFunction", 0) == code
    assert_reads_back(graph, export, graph_from_tflite_bytes(export.data))
    assert_runs_like_onnxruntime(graph, export)


def test_nothing_is_fused_across_a_second_reader_or_a_graph_output() -> None:
    b = GraphBuilder("readers", X)
    conv = b.conv(b.input, 8, 3)
    shared = b.add(b.relu(conv), conv)  # the conv's output has two readers
    out = b.bn(b.conv(shared, 8, 1))  # the conv's output is a graph output too
    graph = b.build([b.relu(out), out])
    export = graph_to_tflite(graph)
    assert [(e.builtin, e.ir_ops) for e in export.ops] == [
        ("CONV_2D", ("conv2d_0",)),
        ("RELU", ("relu_0",)),
        ("ADD", ("add_0",)),
        ("CONV_2D", ("conv2d_1", "batch_norm_0")),
        ("RELU", ("relu_1",)),
    ]
    assert_reads_back(graph, export, graph_from_tflite_bytes(export.data))
    assert_runs_like_onnxruntime(graph, export)


def test_a_batch_norm_over_a_3d_fc_is_not_folded() -> None:
    # Its channel axis (IR axis 1) is the fc's rows, not its features (a 2-D fc's: folded, above).
    b = GraphBuilder("fc3d", (1, 4, 16))
    graph = b.build(b.relu(b.bn(b.fc(b.input, 8))))
    export = graph_to_tflite(graph)
    assert [e.builtin for e in export.ops] == ["FULLY_CONNECTED", "MUL", "ADD"]
    assert_runs_like_onnxruntime(graph, export)


# -- padding --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "builtins", "padding", "paddings"),
    [
        (single("conv2d", out_channels=4, kernel=[3, 3], pads=[1, 1, 1, 1]), ["CONV_2D"], 0, None),
        (single("conv2d", out_channels=4, kernel=[3, 3], stride=[2, 2], pads=[0, 0, 1, 1]), ["CONV_2D"], 0, None),
        (single("conv2d", out_channels=4, kernel=[3, 3]), ["CONV_2D"], 1, None),
        (single("conv2d", out_channels=4, **WINDOW), ["PAD", "CONV_2D"], 1, [0, 0, 1, 1, 1, 1, 0, 0]),
        (single("max_pool2d", **WINDOW), ["PADV2", "MAX_POOL_2D"], 1, [0, 0, 1, 1, 1, 1, 0, 0]),
        (single("avg_pool2d", **WINDOW), ["PAD", "AVERAGE_POOL_2D", "MUL"], 1, [0, 0, 1, 1, 1, 1, 0, 0]),
        (single("avg_pool2d", kernel=[3, 3], pads=[1, 1, 1, 1]), ["AVERAGE_POOL_2D"], 0, None),
        (
            single("avg_pool2d", kernel=[3, 3], pads=[1, 1, 1, 1], count_include_pad=True),
            ["PAD", "AVERAGE_POOL_2D"],
            1,
            [0, 0, 1, 1, 1, 1, 0, 0],
        ),
        # ceil_mode's last window runs one past the end: one more row and column of padding.
        (
            single("max_pool2d", (1, 3, 6, 6), kernel=[3, 3], stride=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True),
            ["PADV2", "MAX_POOL_2D"],
            1,
            [0, 0, 1, 2, 1, 2, 0, 0],
        ),
    ],
)
def test_padding_is_same_valid_or_an_explicit_pad(
    build: Build, builtins: list[str], padding: int, paddings: list[int] | None
) -> None:
    graph = build()
    export = graph_to_tflite(graph)
    raw = decode(export.data)
    assert [e.builtin for e in export.ops] == builtins
    window = next(i for i, e in enumerate(export.ops) if e.builtin not in ("PAD", "PADV2", "MUL"))
    assert options_of(raw, window)["Padding"] == padding
    if paddings is not None:
        pad = raw.ops[0]
        assert raw.buffers[raw.tensors[pad.inputs[1]].buffer] == np.asarray(paddings, np.int32).tobytes()
        if export.ops[0].builtin == "PADV2":
            fill = raw.buffers[raw.tensors[pad.inputs[2]].buffer]
            assert np.frombuffer(fill, np.float32)[0] == FLOAT32_LOWEST
    assert_runs_like_onnxruntime(graph, export)


# -- float16 --------------------------------------------------------------------------------------


def test_fp16_stores_every_weight_as_float16_followed_by_a_dequantize() -> None:
    graph = zoo.build("mobilenet_v3_small")
    fp32, fp16 = graph_to_tflite(graph), graph_to_tflite(graph, precision="fp16")
    raw = decode(fp16.data)
    weights32 = constants(fp32.data)
    weights16 = constants(fp16.data)
    dequantized = [e for e in fp16.ops if e.builtin == "DEQUANTIZE"]
    # Scalars that come from attributes (hard_sigmoid's 3 and 1/6 here) are no weights.
    kept = {n for n, v in weights16.items() if v.dtype == np.float32}
    assert kept and all(n.endswith(("::three", "::sixth")) and weights16[n].shape == () for n in kept)
    float_weights = {n for n, v in weights32.items() if v.dtype == np.float32} - kept
    assert {e.name for e in dequantized} == float_weights
    for e in dequantized:
        op = raw.ops[e.index]
        assert raw.tensors[op.inputs[0]].type == 1 and raw.tensors[op.outputs[0]].type == 0
        np.testing.assert_array_equal(weights16[f"{e.name}_fp16"], weights32[e.name].astype(np.float16))
        # It comes right before (the other DEQUANTIZEs of) the operator that reads it.
        reader = next(o for o in fp16.ops[e.index :] if o.builtin != "DEQUANTIZE")
        assert op.outputs[0] in raw.ops[reader.index].inputs
        assert e.ir_ops == ()
    assert all(t.type == 0 for t in raw.tensors if t.buffer == 0)  # activations stay float32
    plain = [(e.builtin, e.name, e.ir_ops) for e in fp32.ops]
    assert [(e.builtin, e.name, e.ir_ops) for e in fp16.ops if e.builtin != "DEQUANTIZE"] == plain
    back32, back16 = graph_from_tflite_bytes(fp32.data), graph_from_tflite_bytes(fp16.data)
    assert [(o.name, o.type) for o in back16.operators] == [(o.name, o.type) for o in back32.operators]
    model = schema("Model").GetRootAs(fp16.data, 0)
    versions = {
        model.OperatorCodes(i).BuiltinCode(): model.OperatorCodes(i).Version()
        for i in range(model.OperatorCodesLength())
    }
    assert versions[schema("BuiltinOperator").DEQUANTIZE] == 3


# -- refusals -------------------------------------------------------------------------------------


def typed_input(dtype: str) -> Graph:
    """A relu of an input of ``dtype``."""
    b = GraphBuilder("typed", X, dtype=dtype)
    return b.build(b.relu(b.input))


@pytest.mark.parametrize(
    ("build", "node", "op", "reason"),
    [
        (single("softmax", axis=3), "softmax_0", "softmax", "last axis"),
        (single("fully_connected", (1, 2, 3, 32), out_features=4), "fully_connected_0", "fully_connected", "4-D"),
        (matmul_inputs((1, 2, 3, 4), (1, 2, 4, 3)), "matmul_0", "matmul", "4-D"),
        (single("pad", pads=[0, 0, 0, 3, 0, 0, 2, 0], mode="edge"), "pad_0", "pad", "edge"),
        (single("elu", alpha=0.5), "elu_0", "elu", "alpha"),
        (single("clip"), "clip_0", "clip", "without bounds"),
        (lambda: typed_input("int8"), "input", None, "float32 activations only"),
    ],
)
def test_what_tflite_cannot_express_is_a_graph_error_naming_the_operator(
    build: Build, node: str, op: str | None, reason: str
) -> None:
    with pytest.raises(GraphError) as err:
        graph_to_tflite(build())
    assert (err.value.node, err.value.op) == (node, op)
    assert reason in err.value.reason


def test_an_unknown_precision_is_refused() -> None:
    with pytest.raises(GraphError, match="precision 'int8'"):
        graph_to_tflite(single("relu")(), precision="int8")


# -- graphs from elsewhere ----------------------------------------------------------------------


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("space", nas.SPACES)
def test_nas_samples_read_back_and_run_like_onnxruntime(space: str, precision: str) -> None:
    for graph in nas.sample(space, 3, seed=11):
        export = graph_to_tflite(graph, precision=precision)
        assert_reads_back(graph, export, graph_from_tflite_bytes(export.data))
        assert_runs_like_onnxruntime(graph, export)


def onnx_imports() -> list[Graph]:
    """Graphs read from ONNX: a PyTorch-style export, and zoo models exported and read back."""
    graphs = [graph_from_onnx_bytes(torch_style(17).SerializeToString())]
    return graphs + [
        graph_from_onnx_bytes(graph_to_onnx_bytes(zoo.build(n))) for n in ("shufflenet_v2_x0_5", "squeezenet_1_1")
    ]


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
def test_onnx_imported_graphs_read_back_and_run_like_onnxruntime(precision: str) -> None:
    for graph in onnx_imports():
        export = graph_to_tflite(graph, precision=precision)
        assert_reads_back(graph, export, graph_from_tflite_bytes(export.data))
        assert_runs_like_onnxruntime(graph, export)


# -- what the reader learnt for the writer --------------------------------------------------------


def test_reader_refuses_an_extremum_of_two_computed_tensors() -> None:
    w = TFLiteWriter()
    x = w.input("x", [1, 4, 4, 2])
    y = w.tensor("y", [1, 4, 4, 2])
    w.op("MAXIMUM", [x, w.unary("RELU", x)], [y])
    w.outputs = [y]
    with pytest.raises(GraphError, match="extremum of two computed tensors"):
        graph_from_tflite_bytes(w.to_bytes())


def test_reader_refuses_a_batch_matmul_with_a_transposed_operand() -> None:
    w = TFLiteWriter()
    a, b = w.input("a", [1, 3, 5]), w.input("b", [1, 2, 5])
    y = w.tensor("y", [1, 3, 2])
    w.op("BATCH_MATMUL", [a, b], [y], ("BatchMatMulOptions", {"AdjX": False, "AdjY": True}))
    w.outputs = [y]
    with pytest.raises(GraphError, match="adj_x / adj_y"):
        graph_from_tflite_bytes(w.to_bytes())
