"""ONNX export and import: every IR operator type survives export -> import and runs in onnxruntime."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from devicelab.graph import OPS, Graph, GraphBuilder, GraphError
from devicelab.graph.onnx import graph_from_onnx_bytes, graph_to_onnx_bytes, graph_to_onnx_model

Build = Callable[[], Graph]
X = (1, 8, 8, 8)


def single(op_type: str, in_shape: tuple[int, ...] = X, **attrs: object) -> Build:
    """A graph of one operator on the input."""

    def build() -> Graph:
        b = GraphBuilder(op_type, in_shape)
        return b.build(b.op(op_type, [b.input], **attrs))

    return build


def binary_pair(op_type: str, other: str) -> Build:
    """``op_type`` of the input and ``other(input)`` (two activations)."""

    def build() -> Graph:
        b = GraphBuilder(f"{op_type}_pair", X)
        y = b.op(other, [b.input])
        return b.build(b.op(op_type, [b.input, y]))

    return build


def binary_broadcast(op_type: str) -> Build:
    """``op_type`` of the input and its pooled [1, C, 1, 1] summary."""

    def build() -> Graph:
        b = GraphBuilder(f"{op_type}_broadcast", X)
        pooled = b.op("sigmoid", [b.global_avg_pool(b.input)])
        return b.build(b.op(op_type, [b.input, pooled]))

    return build


def fc_case(shape: tuple[int, ...], bias: bool) -> Build:
    """A fully connected layer on an input of any rank."""

    def build() -> Graph:
        b = GraphBuilder("fc", shape)
        return b.build(b.fc(b.input, 6, bias=bias))

    return build


def matmul_self() -> Graph:
    """x @ x^T after a reshape to [1, 4, 16]."""
    b = GraphBuilder("matmul_self", (1, 4, 4, 4))
    a = b.reshape(b.input, [1, 4, 16])
    t = b.op("transpose", [a], perm=[0, 2, 1])
    return b.build(b.op("matmul", [a, t]))


def matmul_two_inputs() -> Graph:
    """A matmul of two graph inputs."""
    b = GraphBuilder("matmul_inputs", (1, 3, 5))
    other = b.add_input("other", (1, 5, 2))
    return b.build(b.op("matmul", [b.input, other]))


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


# One entry per operator type; test_every_op_type_has_a_case fails when a new type is added to
# OPS without a case here, and the export / import tests then fail until the new type works.
CASES: dict[str, list[tuple[str, Build]]] = {
    "conv2d": [
        ("plain", single("conv2d", out_channels=16, kernel=[3, 3], pads=[1, 1, 1, 1], bias=False)),
        (
            "grouped",
            single(
                "conv2d",
                out_channels=12,
                kernel=[3, 1],
                stride=[2, 1],
                pads=[2, 0, 1, 0],
                dilation=[2, 1],
                groups=2,
                bias=True,
            ),
        ),
        ("1x1", single("conv2d", out_channels=4, kernel=1, groups=4, bias=False)),
    ],
    "depthwise_conv2d": [
        ("stride2", single("depthwise_conv2d", kernel=[3, 3], stride=[2, 2], pads=[1, 1, 1, 1], bias=True)),
        ("multiplier", single("depthwise_conv2d", kernel=[5, 5], pads=[2, 2, 2, 2], multiplier=2, bias=False)),
    ],
    "fully_connected": [
        ("2d_bias", fc_case((2, 32), True)),
        ("2d", fc_case((2, 32), False)),
        ("3d_bias", fc_case((1, 5, 32), True)),
        ("4d", fc_case((1, 2, 3, 32), False)),
    ],
    "matmul": [("self", matmul_self), ("inputs", matmul_two_inputs)],
    "max_pool2d": [
        ("ceil", single("max_pool2d", kernel=[3, 3], stride=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True)),
        (
            "ceil_last_window",
            single("max_pool2d", (1, 3, 5, 5), kernel=[2, 2], stride=[2, 2], pads=[1, 1, 1, 1], ceil_mode=True),
        ),
        ("plain", single("max_pool2d", kernel=[2, 2], stride=[2, 2])),
    ],
    "avg_pool2d": [
        ("include_pad", single("avg_pool2d", kernel=[3, 3], pads=[1, 1, 1, 1], count_include_pad=True)),
        ("ceil", single("avg_pool2d", kernel=[3, 3], stride=[2, 2], pads=[0, 0, 1, 1], ceil_mode=True)),
    ],
    "global_avg_pool": [("plain", single("global_avg_pool"))],
    "global_max_pool": [("plain", single("global_max_pool"))],
    "clip": [
        ("both", single("clip", min=-1.5, max=1.0)),
        ("max_only", single("clip", max=3.5)),
        ("min_only", single("clip", min=-2.0)),
    ],
    "leaky_relu": [("alpha", single("leaky_relu", alpha=0.2)), ("default", single("leaky_relu"))],
    "elu": [("alpha", single("elu", alpha=0.5))],
    "batch_norm": [("4d", single("batch_norm", epsilon=1e-3)), ("2d", single("batch_norm", (2, 16)))],
    "concat": [("channels", concat_case(1)), ("height", concat_case(2))],
    "split": [("channels", split_case(1, [3, 5])), ("width", split_case(3, [2, 2, 4]))],
    "pad": [
        ("constant", single("pad", pads=[0, 0, 1, 2, 0, 0, 2, 1], value=0.5)),
        ("reflect", single("pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect")),
        ("edge", single("pad", pads=[0, 0, 0, 3, 0, 0, 2, 0], mode="edge")),
    ],
    "reduce_mean": [("spatial", single("reduce_mean", axes=[2, 3]))],
    "reduce_max": [("channels", single("reduce_max", axes=[1], keepdims=False))],
    "reduce_sum": [("all", single("reduce_sum")), ("two", single("reduce_sum", axes=[1, 3], keepdims=False))],
    "reshape": [("3d", single("reshape", shape=[1, 64, 8])), ("infer", single("reshape", shape=[2, -1, 4]))],
    "flatten": [("axis1", single("flatten")), ("axis2", single("flatten", axis=2))],
    "transpose": [("nhwc", single("transpose", perm=[0, 2, 3, 1]))],
    "softmax": [("last", single("softmax")), ("channels", single("softmax", axis=1))],
    "channel_shuffle": [("g2", single("channel_shuffle", groups=2)), ("g4", single("channel_shuffle", groups=4))],
    "resize": [
        ("nearest", single("resize", size=[16, 16], mode="nearest")),
        ("linear_align", single("resize", size=[12, 10], mode="linear", align_corners=True)),
        ("linear_scales", single("resize", scales=[0.5, 2.0], mode="linear")),
    ],
}
for _name in ("relu", "relu6", "hard_swish", "hard_sigmoid", "sigmoid", "swish", "tanh", "gelu"):
    CASES[_name] = [("plain", single(_name))]
for _name, _other in (("add", "relu"), ("sub", "tanh"), ("mul", "tanh"), ("div", "sigmoid")):
    CASES[_name] = [
        ("two_inputs", binary_pair(_name, _other)),
        ("broadcast", binary_broadcast(_name)),
        ("channel_const", single(_name, const_shape=[1, 8, 1, 1])),
        ("scalar", single(_name, const_shape=[1], const_value=2.5)),
        ("const_first", single(_name, const_shape=[8, 1, 1], const_first=True)),
    ]


def quantized(q_dtype: str, op_type: str, **attrs: object) -> Build:
    """``op_type`` between a quantize_linear to ``q_dtype`` and a dequantize_linear back to float."""

    def build() -> Graph:
        b = GraphBuilder(f"{op_type}_{q_dtype}", X)
        q = b.op("quantize_linear", [b.input], dtype=q_dtype, name="q")
        return b.build(b.op("dequantize_linear", [b.op(op_type, [q], **attrs)], name="dq"))

    return build


def integer_matmul_pair() -> Build:
    def build() -> Graph:
        b = GraphBuilder("matmul_integer_pair", X)
        q = b.op("quantize_linear", [b.input], dtype="int8", name="q")
        return b.build(b.op("dequantize_linear", [b.op("matmul_integer", [q, q])], name="dq"))

    return build


CASES["quantize_linear"] = [
    ("int8", single("quantize_linear", dtype="int8")),
    ("uint8", single("quantize_linear")),
]
CASES["dequantize_linear"] = [("int8", quantized("int8", "transpose")), ("uint8", quantized("uint8", "flatten"))]
CASES["conv_integer"] = [
    ("uint8", quantized("uint8", "conv_integer", kernel=3, out_channels=4, pads=1)),
    ("grouped_int8", quantized("int8", "conv_integer", kernel=3, out_channels=8, groups=8, stride=2)),
]
CASES["matmul_integer"] = [
    ("weight", quantized("uint8", "matmul_integer", out_features=5)),
    ("two_activations", integer_matmul_pair()),
]


def quantized_net(dtype: str) -> Build:
    """A quantized network in the QOperator form: every quantized emitter but those that need
    opset 12 (MaxPool and Clip)."""

    def build() -> Graph:
        b = GraphBuilder(f"quantized_{dtype}", (1, 3, 16, 16))
        x = b.op("quantize_linear", [b.input], dtype=dtype, name="quantize_in")
        x = b.conv(x, 8, 3, stride=2)
        x = b.add(x, b.dwconv(x, 3))
        x = b.op("mul", [x], const_shape=[1, 8, 1, 1])
        x = b.concat([x, b.op("sigmoid", [x])])
        x = b.op("leaky_relu", [x], alpha=0.1)
        x = b.op("avg_pool2d", [x], kernel=[2, 2], stride=[2, 2])
        x = b.flatten(b.global_avg_pool(x))
        x = b.fc(x, 10)
        return b.build(b.op("dequantize_linear", [x], name="dequantize_out"))

    return build


def mobilenet_like() -> Graph:
    """Inverted residual blocks with hard-swish, squeeze-excite and a classifier."""
    b = GraphBuilder("mobilenet_like", (1, 3, 32, 32))
    x = b.act(b.bn(b.conv(b.input, 16, 3, stride=2)), "hard_swish")
    for i, (c, s) in enumerate([(16, 1), (24, 2), (24, 1)]):
        with b.scope(f"block{i}"):
            y = b.relu6(b.bn(b.conv(x, 4 * b.channels(x), 1)))
            y = b.relu6(b.bn(b.dwconv(y, 3, stride=s)))
            se = b.op("sigmoid", [b.fc(b.flatten(b.global_avg_pool(y)), b.channels(y))])
            y = b.mul(y, b.reshape(se, [1, b.channels(y), 1, 1]))
            y = b.bn(b.conv(y, c, 1))
            x = b.add(x, y) if s == 1 and c == b.channels(x) else y
    return b.build(b.classifier(x, 10, softmax=True))


def resnet_like() -> Graph:
    """A stem with max pooling and two basic residual blocks."""
    b = GraphBuilder("resnet_like", (1, 3, 32, 32))
    x = b.max_pool(b.relu(b.bn(b.conv(b.input, 8, 7, stride=2))), 3, 2, pad=1)
    for i in range(2):
        y = b.relu(b.bn(b.conv(x, 8, 3)))
        y = b.bn(b.conv(y, 8, 3))
        x = b.relu(b.add(x, y, name=f"residual{i}"))
    return b.build(b.classifier(x, 5))


def shufflenet_like() -> Graph:
    """A ShuffleNetV2 unit: split, branch, concat, shuffle."""
    b = GraphBuilder("shufflenet_like", (1, 16, 8, 8))
    left, right = b.split(b.input, [8, 8])
    right = b.relu(b.bn(b.conv(right, 8, 1)))
    right = b.bn(b.dwconv(right, 3))
    right = b.act(b.bn(b.conv(right, 8, 1)), "swish")
    x = b.shuffle(b.concat([left, right]), 2)
    return b.build(b.op("avg_pool2d", [x], kernel=[2, 2], stride=[2, 2]))


def transformer_like() -> Graph:
    """Patch embedding, one attention block with a hand-made layer norm, GELU MLP."""
    b = GraphBuilder("transformer_like", (1, 3, 16, 16))
    x = b.conv(b.input, 32, 4, stride=4, pad="valid", bias=True)
    x = b.op("transpose", [b.reshape(x, [1, 32, 16])], perm=[0, 2, 1])
    mean = b.op("reduce_mean", [x], axes=[2])
    centred = b.op("sub", [x, mean])
    var = b.op("reduce_mean", [b.op("mul", [centred, centred])], axes=[2])
    normed = b.op("div", [centred, b.op("add", [var], const_shape=[1], const_value=1e-5)])
    q, k, v = (b.fc(normed, 32, name=n) for n in ("q", "k", "v"))
    scores = b.softmax(
        b.op("mul", [b.op("matmul", [q, b.op("transpose", [k], perm=[0, 2, 1])])], const_shape=[1], const_value=0.125)
    )
    x = b.add(x, b.fc(b.op("matmul", [scores, v]), 32))
    h = b.act(b.fc(x, 64), "gelu")
    x = b.add(x, b.fc(h, 32))
    return b.build(b.fc(b.op("reduce_mean", [x], axes=[1], keepdims=False), 10))


def unet_like() -> Graph:
    """Down, up with resize, skip concat, pad and leaky ReLU."""
    b = GraphBuilder("unet_like", (1, 4, 16, 16))
    skip = b.act(b.conv(b.input, 8, 3), "leaky_relu", alpha=0.1)
    down = b.act(b.conv(skip, 16, 3, stride=2), "elu")
    up = b.resize(b.conv(down, 8, 1), [16, 16], mode="nearest")
    x = b.concat([skip, up])
    x = b.op("pad", [x], pads=[0, 0, 1, 1, 0, 0, 1, 1], mode="reflect")
    return b.build(b.conv(x, 2, 3, pad="valid"))


quantized_int8, quantized_uint8 = quantized_net("int8"), quantized_net("uint8")
quantized_int8.__name__, quantized_uint8.__name__ = "quantized_int8", "quantized_uint8"
NETWORKS: list[Build] = [
    mobilenet_like,
    resnet_like,
    shufflenet_like,
    transformer_like,
    unet_like,
    quantized_int8,
    quantized_uint8,
]
ALL_CASES = [(f"{op}/{label}", build) for op, cases in sorted(CASES.items()) for label, build in cases]
ALL_CASES += [(build.__name__, build) for build in NETWORKS]


def test_every_op_type_has_a_case() -> None:
    missing = sorted(set(OPS) - set(CASES) - {"opaque"})  # no export: test_tflite_opaque
    assert not missing, f"operator types without an ONNX round-trip case: {missing} (add them to CASES)"


@pytest.mark.parametrize("op_type", sorted(set(OPS) - {"opaque"}))
def test_every_op_type_round_trips(op_type: str) -> None:
    cases = CASES.get(op_type)
    assert cases, f"operator type {op_type!r} has no ONNX round-trip case: add one to CASES"
    for label, build in cases:
        graph = build()
        assert op_type in {o.type for o in graph.operators}, label
        for opset in (11, 13, 14, 17, 20, 21):
            back = graph_from_onnx_bytes(graph_to_onnx_bytes(graph, opset=opset))
            assert back == graph, f"{op_type}/{label} at opset {opset}:\n{back.operators}\n!=\n{graph.operators}"


@pytest.mark.parametrize("build", NETWORKS, ids=lambda f: f.__name__)
def test_builder_networks_round_trip(build: Build) -> None:
    graph = build()
    for opset in (11, 17, 21):
        assert graph_from_onnx_bytes(graph_to_onnx_bytes(graph, opset=opset)) == graph


def _run(data: bytes, graph: Graph) -> list[np.ndarray]:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(1)
    feeds = {t: rng.standard_normal(graph.tensors[t].shape).astype(np.float32) for t in graph.inputs}
    return session.run(list(graph.outputs), feeds)


@pytest.mark.parametrize("opset", [11, 17, 21])
def test_exported_graphs_run_in_onnxruntime(opset: int) -> None:
    for label, build in ALL_CASES:
        graph = build()
        outputs = _run(graph_to_onnx_bytes(graph, opset=opset), graph)
        for t, value in zip(graph.outputs, outputs, strict=False):
            assert value.shape == graph.tensors[t].shape, f"{label}: {t} is {value.shape}"
            assert np.all(np.isfinite(value)), f"{label}: {t} has non-finite values"


@pytest.mark.parametrize("label,build", ALL_CASES, ids=[label for label, _ in ALL_CASES])
def test_export_naming_contract(label: str, build: Build) -> None:
    graph = build()
    model = graph_to_onnx_model(graph)
    # onnx's shape inference lets a ceil_mode window start in the end padding; onnxruntime and
    # the IR do not, so the declared output of that one case differs from onnx's own inference.
    onnx.checker.check_model(model, full_check="ceil_last_window" not in label)
    op_names = {o.name for o in graph.operators}
    writer = {t: n.name for n in model.graph.node for t in n.output}
    for n in model.graph.node:
        owner = n.name.split("::")[0]
        assert owner in op_names, f"node {n.name!r} names no IR operator"
        assert n.name == owner or n.name.startswith(owner + "::")
    for o in graph.operators:
        for t in o.outputs:
            assert writer[t] == o.name, f"{t} is written by {writer[t]!r}, not by a node named {o.name!r}"
    values = set(writer) | {i.name for i in model.graph.input}
    assert set(graph.tensors) <= values
    assert [i.name for i in model.graph.input] == graph.inputs
    assert [o.name for o in model.graph.output] == graph.outputs
    assert model.graph.name == graph.name


def test_export_is_deterministic_by_seed() -> None:
    graph = mobilenet_like()
    assert graph_to_onnx_bytes(graph, seed=3) == graph_to_onnx_bytes(graph, seed=3)
    assert graph_to_onnx_bytes(graph, seed=3) != graph_to_onnx_bytes(graph, seed=4)
    a = _run(graph_to_onnx_bytes(graph, seed=3), graph)[0]
    b = _run(graph_to_onnx_bytes(graph, seed=3), graph)[0]
    np.testing.assert_array_equal(a, b)


def test_export_leaves_the_graph_untouched() -> None:
    graph = resnet_like()
    before = repr(graph)
    graph_to_onnx_model(graph)
    assert repr(graph) == before


def test_float16_graph_round_trips() -> None:
    b = GraphBuilder("half", (1, 4, 8, 8), dtype="float16")
    x = b.relu6(b.bn(b.conv(b.input, 8, 3)))
    x = b.op("mul", [x], const_shape=[1], const_value=0.1)
    graph = b.build(b.op("clip", [x], min=-0.5, max=0.25))
    data = graph_to_onnx_bytes(graph)
    assert onnx.load_from_string(data).graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    assert graph_from_onnx_bytes(data) == graph


@pytest.mark.parametrize("opset", [10, 22])
def test_export_refuses_unsupported_opsets(opset: int) -> None:
    with pytest.raises(GraphError, match="opset"):
        graph_to_onnx_model(resnet_like(), opset=opset)


def test_documented_round_trip_caveats() -> None:
    # These IR graphs mean the same as what comes back, which is spelled the ONNX way.
    b = GraphBuilder("caveats", X)
    x = b.op("clip", [b.input], min=0.0, max=6.0)
    x = b.conv(x, 16, 3, groups=8)  # groups == input channels: ONNX reads a depthwise conv
    x = b.op("add", [x], const_shape=[1])  # one-element constant without a value: gets one
    graph = b.build(x)
    back = graph_from_onnx_bytes(graph_to_onnx_bytes(graph))
    assert [o.type for o in back.operators] == ["relu6", "depthwise_conv2d", "add"]
    assert back.operators[1].attrs["multiplier"] == 2
    assert isinstance(back.operators[2].attrs["const_value"], float)
    assert back.tensors == graph.tensors and back.macs == graph.macs and back.params == graph.params


@pytest.mark.parametrize("op_type", ["max_pool2d", "relu", "relu6"])
def test_quantized_max_pool_and_clips_need_opset_12(op_type: str) -> None:
    attrs: dict[str, object] = {"kernel": 2, "stride": 2} if op_type == "max_pool2d" else {}
    graph = quantized("uint8", op_type, **attrs)()
    data = graph_to_onnx_bytes(graph, opset=17)
    assert graph_from_onnx_bytes(data) == graph
    assert np.all(np.isfinite(_run(data, graph)[0]))
    with pytest.raises(GraphError, match=f"{op_type} of int8 / uint8 needs opset 12"):
        graph_to_onnx_bytes(graph, opset=11)


def test_an_operator_without_a_quantized_form_is_refused_naming_it() -> None:
    graph = quantized("int8", "tanh")()
    with pytest.raises(GraphError, match="'tanh' on int8 tensors has no quantized ONNX export") as err:
        graph_to_onnx_bytes(graph)
    assert err.value.node == "tanh_0"


def test_quantized_networks_count_their_macs_as_int8() -> None:
    graph = quantized_net("int8")()
    assert graph.macs_by_dtype() == {"int8": graph.macs} and graph.macs > 0
    rows = {r["name"]: r["dtype"] for r in graph.op_table()}
    assert rows["conv2d_0"] == "int8" and rows["quantize_in"] == "float32" and rows["dequantize_out"] == "int8"


def test_a_requantize_runs_and_reads_back_through_float() -> None:
    """A quantize_linear of int8 values (TFLite's requantizing QUANTIZE) is written as a
    DequantizeLinear + QuantizeLinear, and reads back as those two operators."""
    graph = quantized("int8", "quantize_linear", dtype="uint8")()
    data = graph_to_onnx_bytes(graph)
    assert _run(data, graph)[0].shape == X
    back = graph_from_onnx_bytes(data)
    assert [o.type for o in back.operators] == [
        "quantize_linear",
        "dequantize_linear",
        "quantize_linear",
        "dequantize_linear",
    ]
    assert back.tensors["quantize_linear_1"].dtype == "uint8"
