"""ONNX import: hand-written ONNX graphs, as PyTorch and other exporters write them, map onto the IR."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from devicelab.graph import Graph, GraphError, Operator, Tensor
from devicelab.graph.onnx import graph_from_onnx_bytes, graph_from_onnx_model, import_onnx_model

FLOAT = TensorProto.FLOAT


def vi(name: str, shape: Sequence[int | str] | None, elem: int = FLOAT) -> onnx.ValueInfoProto:
    """A value info."""
    return helper.make_tensor_value_info(name, elem, shape)


def init(name: str, value: Any, dtype: Any = np.float32) -> onnx.TensorProto:
    """An initializer."""
    return numpy_helper.from_array(np.asarray(value, dtype=dtype), name)


def weight(name: str, shape: Sequence[int]) -> onnx.TensorProto:
    """A random float initializer."""
    return init(name, np.random.default_rng(0).standard_normal(shape) * 0.1)


def const_node(name: str, value: Any, dtype: Any = np.int64) -> onnx.NodeProto:
    """A Constant node writing ``<name>_output_0``, the way PyTorch names it."""
    return helper.make_node(
        "Constant", [], [f"{name}_output_0"], name=name, value=numpy_helper.from_array(np.asarray(value, dtype=dtype))
    )


def model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: Sequence[onnx.TensorProto] = (),
    opset: int = 17,
    name: str = "m",
) -> onnx.ModelProto:
    """A model at one opset of the default domain."""
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    opsets = [helper.make_opsetid("", opset)]
    m = helper.make_model(graph, opset_imports=opsets, producer_name="test")
    m.ir_version = helper.find_min_ir_version_for(opsets)
    return m


def read(m: onnx.ModelProto) -> Graph:
    """Import through the bytes path, as uploads do."""
    return graph_from_onnx_bytes(m.SerializeToString())


def one_op(
    op_type: str,
    shape: Sequence[int],
    opset: int = 17,
    extra_inputs: Sequence[str] = (),
    inits: Sequence[onnx.TensorProto] = (),
    n_out: int = 1,
    **attrs: Any,
) -> Graph:
    """Import a model of one node ``op_type`` named ``node`` on input ``x``."""
    outs = ["y"] if n_out == 1 else [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op_type, ["x", *extra_inputs], outs, name="node", **attrs)
    return read(model([node], [vi("x", shape)], [vi(o, None) for o in outs], inits, opset))


# ---------------------------------------------------------------------------------------------
# A PyTorch-style export


def torch_style(opset: int) -> onnx.ModelProto:
    """What torch.onnx.export writes for conv-bn-relu, relu6, swish, avg pool and x.view(n, -1)."""
    unsqueeze_axes: dict[str, Any] = {"axes": [0]} if opset < 13 else {}
    unsqueeze_inputs = ["/Gather_output_0"] + ([] if opset < 13 else ["/Constant_1_output_0"])
    nodes = [
        helper.make_node(
            "Conv",
            ["input", "conv1.weight", "conv1.bias"],
            ["/conv1/Conv_output_0"],
            name="/conv1/Conv",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            strides=[1, 1],
        ),
        helper.make_node(
            "BatchNormalization",
            ["/conv1/Conv_output_0", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var"],
            ["/bn1/BatchNormalization_output_0"],
            name="/bn1/BatchNormalization",
            epsilon=1e-5,
            momentum=0.9,
        ),
        helper.make_node("Relu", ["/bn1/BatchNormalization_output_0"], ["/relu/Relu_output_0"], name="/relu/Relu"),
        const_node("/act/Constant", 0.0, np.float32),
        const_node("/act/Constant_1", 6.0, np.float32),
        helper.make_node(
            "Clip",
            ["/relu/Relu_output_0", "/act/Constant_output_0", "/act/Constant_1_output_0"],
            ["/act/Clip_output_0"],
            name="/act/Clip",
        ),
        helper.make_node(
            "Conv",
            ["/act/Clip_output_0", "conv2.weight"],
            ["/conv2/Conv_output_0"],
            name="/conv2/Conv",
            kernel_shape=[3, 3],
            pads=[1, 1, 1, 1],
            strides=[2, 2],
            group=8,
        ),
        helper.make_node("Sigmoid", ["/conv2/Conv_output_0"], ["/act2/Sigmoid_output_0"], name="/act2/Sigmoid"),
        helper.make_node(
            "Mul", ["/conv2/Conv_output_0", "/act2/Sigmoid_output_0"], ["/act2/Mul_output_0"], name="/act2/Mul"
        ),
        helper.make_node(
            "GlobalAveragePool",
            ["/act2/Mul_output_0"],
            ["/pool/GlobalAveragePool_output_0"],
            name="/pool/GlobalAveragePool",
        ),
        helper.make_node("Shape", ["/pool/GlobalAveragePool_output_0"], ["/Shape_output_0"], name="/Shape"),
        const_node("/Constant", 0),
        helper.make_node(
            "Gather", ["/Shape_output_0", "/Constant_output_0"], ["/Gather_output_0"], name="/Gather", axis=0
        ),
        const_node("/Constant_1", [0]),
        helper.make_node("Unsqueeze", unsqueeze_inputs, ["/Unsqueeze_output_0"], name="/Unsqueeze", **unsqueeze_axes),
        const_node("/Constant_2", [-1]),
        helper.make_node(
            "Concat", ["/Unsqueeze_output_0", "/Constant_2_output_0"], ["/Concat_output_0"], name="/Concat", axis=0
        ),
        helper.make_node(
            "Reshape", ["/pool/GlobalAveragePool_output_0", "/Concat_output_0"], ["/Reshape_output_0"], name="/Reshape"
        ),
        helper.make_node("Dropout", ["/Reshape_output_0"], ["/dropout/Dropout_output_0"], name="/dropout/Dropout"),
        helper.make_node(
            "Gemm",
            ["/dropout/Dropout_output_0", "fc.weight", "fc.bias"],
            ["output"],
            name="/fc/Gemm",
            alpha=1.0,
            beta=1.0,
            transB=1,
        ),
    ]
    inits = [
        weight("conv1.weight", (8, 3, 3, 3)),
        weight("conv1.bias", (8,)),
        init("bn1.weight", np.ones(8)),
        weight("bn1.bias", (8,)),
        weight("bn1.running_mean", (8,)),
        init("bn1.running_var", np.ones(8)),
        weight("conv2.weight", (8, 1, 3, 3)),
        weight("fc.weight", (10, 8)),
        weight("fc.bias", (10,)),
    ]
    return model(
        nodes, [vi("input", ["batch", 3, 16, 16])], [vi("output", ["batch", 10])], inits, opset, name="main_graph"
    )


def torch_style_expected() -> Graph:
    """The IR that ``torch_style`` must read as."""
    shapes = {
        "input": (1, 3, 16, 16),
        "/conv1/Conv_output_0": (1, 8, 16, 16),
        "/bn1/BatchNormalization_output_0": (1, 8, 16, 16),
        "/relu/Relu_output_0": (1, 8, 16, 16),
        "/act/Clip_output_0": (1, 8, 16, 16),
        "/conv2/Conv_output_0": (1, 8, 8, 8),
        "/act2/Mul_output_0": (1, 8, 8, 8),
        "/pool/GlobalAveragePool_output_0": (1, 8, 1, 1),
        "/Reshape_output_0": (1, 8),
        "output": (1, 10),
    }
    window = {"kernel": [3, 3], "pads": [1, 1, 1, 1]}
    operators = [
        Operator(
            "/conv1/Conv", "conv2d", ["input"], ["/conv1/Conv_output_0"], {**window, "out_channels": 8, "bias": True}
        ),
        Operator(
            "/bn1/BatchNormalization",
            "batch_norm",
            ["/conv1/Conv_output_0"],
            ["/bn1/BatchNormalization_output_0"],
            {"epsilon": 1e-5},
        ),
        Operator("/relu/Relu", "relu", ["/bn1/BatchNormalization_output_0"], ["/relu/Relu_output_0"]),
        Operator("/act/Clip", "relu6", ["/relu/Relu_output_0"], ["/act/Clip_output_0"]),
        Operator(
            "/conv2/Conv",
            "depthwise_conv2d",
            ["/act/Clip_output_0"],
            ["/conv2/Conv_output_0"],
            {**window, "stride": [2, 2], "bias": False},
        ),
        Operator("/act2/Mul", "swish", ["/conv2/Conv_output_0"], ["/act2/Mul_output_0"]),
        Operator(
            "/pool/GlobalAveragePool", "global_avg_pool", ["/act2/Mul_output_0"], ["/pool/GlobalAveragePool_output_0"]
        ),
        Operator("/Reshape", "reshape", ["/pool/GlobalAveragePool_output_0"], ["/Reshape_output_0"], {"shape": [1, 8]}),
        Operator("/fc/Gemm", "fully_connected", ["/Reshape_output_0"], ["output"], {"out_features": 10}),
    ]
    tensors = {name: Tensor(name, shape) for name, shape in shapes.items()}
    return Graph("main_graph", tensors, ["input"], ["output"], operators).check()


@pytest.mark.parametrize("opset", [11, 21])
def test_pytorch_style_export_reads_as_the_expected_ir(opset: int) -> None:
    m = torch_style(opset)
    onnx.checker.check_model(m, full_check=True)
    graph = read(m)
    assert graph == torch_style_expected()
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {"input": np.zeros((1, 3, 16, 16), np.float32)})
    assert out.shape == graph.tensors["output"].shape


def test_node_map_says_where_each_onnx_node_went() -> None:
    result = import_onnx_model(torch_style(13))
    node_map = result.node_map
    assert node_map["/act2/Sigmoid"] == node_map["/act2/Mul"] == "/act2/Mul"
    for folded in ("/Shape", "/Gather", "/Unsqueeze", "/Concat", "/Constant", "/act/Constant", "/dropout/Dropout"):
        assert node_map[folded] is None, folded
    assert {v for v in node_map.values() if v} == {o.name for o in result.graph.operators}


def test_import_does_not_change_the_callers_model() -> None:
    m = torch_style(13)
    before = m.SerializeToString()
    graph = graph_from_onnx_model(m, name="renamed")
    assert graph.name == "renamed"
    assert m.SerializeToString() == before
    assert m.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"


@pytest.mark.parametrize("batch", ["N", "batch", "batch_size", None])
def test_a_symbolic_batch_dimension_reads_as_one(batch: str | None) -> None:
    x = helper.make_tensor_value_info("x", FLOAT, [batch, 4, 5, 5])
    m = model([helper.make_node("Relu", ["x"], ["y"], name="r")], [x], [vi("y", [batch, 4, 5, 5])])
    assert read(m).tensors["y"].shape == (1, 4, 5, 5)


# ---------------------------------------------------------------------------------------------
# Convolution, fully connected, matmul


@pytest.mark.parametrize(
    "auto_pad,pads", [("SAME_UPPER", [1, 1, 2, 2]), ("SAME_LOWER", [2, 2, 1, 1]), ("VALID", [0, 0, 0, 0])]
)
def test_conv_auto_pad_becomes_explicit_pads(auto_pad: str, pads: list[int]) -> None:
    g = one_op(
        "Conv", [1, 2, 7, 7], extra_inputs=["w"], inits=[weight("w", (4, 2, 4, 4))], auto_pad=auto_pad, strides=[2, 2]
    )
    op = g.operators[0]
    assert (op.type, op.attrs["pads"], op.attrs["bias"]) == ("conv2d", pads, False)
    expected_hw = 2 if auto_pad == "VALID" else 4
    assert g.tensors["y"].shape == (1, 4, expected_hw, expected_hw)


@pytest.mark.parametrize(
    "group,cout,cin,expected",
    [
        (6, 12, 6, ("depthwise_conv2d", {"multiplier": 2})),
        (6, 6, 6, ("depthwise_conv2d", {"multiplier": 1})),
        (2, 4, 6, ("conv2d", {"groups": 2, "out_channels": 4})),
        (1, 4, 1, ("conv2d", {"groups": 1, "out_channels": 4})),  # one input channel: an ordinary conv
    ],
)
def test_conv_groups_decide_depthwise(group: int, cout: int, cin: int, expected: tuple[str, dict[str, int]]) -> None:
    g = one_op(
        "Conv",
        [1, cin, 6, 6],
        extra_inputs=["w", "b"],
        inits=[weight("w", (cout, cin // group, 3, 3)), weight("b", (cout,))],
        group=group,
        pads=[1, 1, 1, 1],
    )
    op = g.operators[0]
    assert op.type == expected[0]
    assert {k: op.attrs[k] for k in expected[1]} == expected[1]
    assert op.attrs["bias"] is True
    assert g.tensors["y"].shape == (1, cout, 6, 6)


def test_conv_weight_that_does_not_fit_the_input_names_the_node() -> None:
    with pytest.raises(GraphError, match="does not fit 3 input channels") as err:
        one_op("Conv", [1, 3, 6, 6], extra_inputs=["w"], inits=[weight("w", (4, 2, 3, 3))])
    assert err.value.node == "node" and err.value.op == "Conv"


def test_gemm_then_add_folds_the_bias() -> None:
    nodes = [
        helper.make_node("Gemm", ["x", "w"], ["h"], name="/fc/Gemm", transB=1),
        helper.make_node("Add", ["h", "b"], ["y"], name="/fc/Add"),
    ]
    g = read(model(nodes, [vi("x", [1, 16])], [vi("y", None)], [weight("w", (5, 16)), weight("b", (5,))]))
    assert [(o.name, o.type, o.attrs) for o in g.operators] == [
        ("/fc/Add", "fully_connected", {"out_features": 5, "bias": True})
    ]
    assert list(g.tensors) == ["x", "y"]


def test_matmul_with_a_constant_weight_and_bias_is_fully_connected() -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Add", ["b", "h"], ["y"], name="bias"),
    ]
    g = read(model(nodes, [vi("x", [1, 7, 16])], [vi("y", None)], [weight("w", (16, 5)), weight("b", (5,))]))
    assert [(o.name, o.type, o.attrs["bias"]) for o in g.operators] == [("bias", "fully_connected", True)]
    assert g.tensors["y"].shape == (1, 7, 5)


def test_matmul_bias_is_not_folded_when_the_product_is_used_twice() -> None:
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
        helper.make_node("Add", ["h", "b"], ["y"], name="bias"),
    ]
    g = read(
        model(nodes, [vi("x", [1, 16])], [vi("y", None), vi("h", None)], [weight("w", (16, 5)), weight("b", (5,))])
    )
    assert [o.type for o in g.operators] == ["fully_connected", "add"]
    assert g.operators[1].attrs["const_shape"] == [5]


def test_matmul_of_two_activations_is_matmul() -> None:
    nodes = [helper.make_node("MatMul", ["a", "b"], ["y"], name="attn")]
    g = read(model(nodes, [vi("a", [1, 4, 6]), vi("b", [1, 6, 3])], [vi("y", None)]))
    assert [(o.type, o.inputs) for o in g.operators] == [("matmul", ["a", "b"])]
    assert g.tensors["y"].shape == (1, 4, 3)


# ---------------------------------------------------------------------------------------------
# Element-wise operators and activations


def test_binary_operator_with_a_constant_operand() -> None:
    nodes = [
        helper.make_node("Sub", ["c", "x"], ["s"], name="rsub"),
        helper.make_node("Mul", ["s", "k"], ["y"], name="scale"),
    ]
    g = read(model(nodes, [vi("x", [1, 3, 4, 4])], [vi("y", None)], [weight("c", (1, 3, 1, 1)), init("k", 0.1)]))
    rsub, scale = g.operators
    assert rsub.attrs == {"const_shape": [1, 3, 1, 1], "const_first": True}
    assert scale.attrs == {"const_shape": [], "const_value": 0.1, "const_first": False}


@pytest.mark.parametrize(
    "opset,bounds,expected",
    [
        (11, (0.0, 6.0), ("relu6", {})),
        (11, (None, 3.0), ("clip", {"min": None, "max": 3.0})),
        (13, (-1.0, 1.0), ("clip", {"min": -1.0, "max": 1.0})),
        (21, (0.0, None), ("clip", {"min": 0.0, "max": None})),
    ],
)
def test_clip_reads_min_and_max_inputs(
    opset: int, bounds: tuple[float | None, float | None], expected: tuple[str, dict[str, Any]]
) -> None:
    inputs, inits = [], []
    for value, label in zip(bounds, ("lo", "hi"), strict=False):
        inputs.append("" if value is None else label)
        if value is not None:
            inits.append(init(label, value))
    g = one_op("Clip", [1, 4], opset, extra_inputs=inputs, inits=inits)
    assert (g.operators[0].type, g.operators[0].attrs) == expected


def test_clip_attributes_before_opset_11() -> None:
    assert one_op("Clip", [1, 4], 10, min=0.0, max=6.0).operators[0].type == "relu6"
    assert one_op("Clip", [1, 4], 10, max=2.5).operators[0].attrs == {"min": None, "max": 2.5}


@pytest.mark.parametrize(
    "op_type,attrs,expected",
    [
        ("Relu", {}, ("relu", {})),
        ("Sigmoid", {}, ("sigmoid", {})),
        ("Tanh", {}, ("tanh", {})),
        ("HardSwish", {}, ("hard_swish", {})),
        ("HardSigmoid", {"alpha": 0.2}, ("hard_sigmoid", {})),
        ("LeakyRelu", {}, ("leaky_relu", {"alpha": 0.01})),
        ("LeakyRelu", {"alpha": 0.1}, ("leaky_relu", {"alpha": 0.1})),
        ("Elu", {}, ("elu", {"alpha": 1.0})),
        ("Gelu", {}, ("gelu", {})),
        ("Softmax", {}, ("softmax", {"axis": 3})),
        ("BatchNormalization", {"epsilon": 1e-3}, ("batch_norm", {"epsilon": 0.001})),
    ],
)
def test_activations(op_type: str, attrs: dict[str, Any], expected: tuple[str, dict[str, Any]]) -> None:
    extra, inits = [], []
    if op_type == "BatchNormalization":
        extra = ["s", "b", "m", "v"]
        inits = [init(n, np.ones(3)) for n in extra]
    g = one_op(op_type, [1, 3, 4, 4], 20, extra_inputs=extra, inits=inits, **attrs)
    assert (g.operators[0].type, g.operators[0].attrs) == expected


def test_softmax_default_axis_follows_the_opset() -> None:
    assert one_op("Softmax", [1, 3, 4], 11).operators[0].attrs == {"axis": 1}
    assert one_op("Softmax", [1, 3, 4], 13).operators[0].attrs == {"axis": 2}


@pytest.mark.parametrize("gate_first", [False, True])
def test_x_times_hard_sigmoid_of_x_is_hard_swish(gate_first: bool) -> None:
    mul_inputs = ["g", "x"] if gate_first else ["x", "g"]
    nodes = [
        helper.make_node("HardSigmoid", ["x"], ["g"], name="hs", alpha=1 / 6, beta=0.5),
        helper.make_node("Mul", mul_inputs, ["y"], name="hswish"),
    ]
    g = read(model(nodes, [vi("x", [1, 4, 3, 3])], [vi("y", None)], opset=13))
    assert [(o.name, o.type, o.inputs) for o in g.operators] == [("hswish", "hard_swish", ["x"])]


def test_sigmoid_used_elsewhere_is_not_fused_into_swish() -> None:
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["g"], name="sig"),
        helper.make_node("Mul", ["x", "g"], ["y"], name="mul"),
        helper.make_node("Add", ["y", "g"], ["z"], name="add"),
    ]
    g = read(model(nodes, [vi("x", [1, 4])], [vi("z", None)]))
    assert [o.type for o in g.operators] == ["sigmoid", "mul", "add"]


def _gelu_nodes(variant: str) -> list[onnx.NodeProto]:
    if variant == "pytorch":  # x * (1 + erf(x / sqrt 2)) * 0.5
        return [
            helper.make_node("Div", ["x", "sqrt2"], ["d"], name="/act/Div"),
            helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
            helper.make_node("Add", ["e", "one"], ["a"], name="/act/Add"),
            helper.make_node("Mul", ["x", "a"], ["m"], name="/act/Mul"),
            helper.make_node("Mul", ["m", "half"], ["y"], name="/act/Mul_1"),
        ]
    return [
        helper.make_node("Mul", ["x", "half"], ["h"], name="/act/Mul"),  # (x * 0.5) * (1 + erf(x / sqrt 2))
        helper.make_node("Mul", ["x", "inv_sqrt2"], ["d"], name="/act/Scale"),
        helper.make_node("Erf", ["d"], ["e"], name="/act/Erf"),
        helper.make_node("Add", ["one", "e"], ["a"], name="/act/Add"),
        helper.make_node("Mul", ["h", "a"], ["y"], name="/act/Mul_1"),
    ]


@pytest.mark.parametrize("variant", ["pytorch", "half_first"])
def test_erf_gelu_pattern_is_gelu(variant: str) -> None:
    consts = [
        init("sqrt2", 1.4142135381698608),
        init("one", 1.0),
        init("half", 0.5),
        init("inv_sqrt2", 0.7071067811865476),
    ]
    g = read(model(_gelu_nodes(variant), [vi("x", [1, 8, 16])], [vi("y", None)], consts))
    assert [(o.name, o.type, o.inputs, o.outputs) for o in g.operators] == [("/act/Mul_1", "gelu", ["x"], ["y"])]


def test_a_lone_erf_is_refused() -> None:
    with pytest.raises(GraphError, match="GELU pattern") as err:
        one_op("Erf", [1, 4])
    assert err.value.node == "node"


# ---------------------------------------------------------------------------------------------
# Pooling, split, pad, reductions, shapes, resize


def test_pooling_attributes() -> None:
    g = one_op("MaxPool", [1, 2, 7, 7], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)
    assert g.operators[0].attrs == {"kernel": [3, 3], "stride": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": True}
    g = one_op("AveragePool", [1, 2, 7, 7], kernel_shape=[2, 2], auto_pad="SAME_UPPER", count_include_pad=1)
    assert g.operators[0].attrs["pads"] == [0, 0, 1, 1] and g.operators[0].attrs["count_include_pad"] is True
    assert one_op("GlobalMaxPool", [1, 2, 7, 7]).tensors["y"].shape == (1, 2, 1, 1)


def test_pool_with_dilation_is_refused() -> None:
    with pytest.raises(GraphError, match="dilations"):
        one_op("MaxPool", [1, 2, 7, 7], kernel_shape=[3, 3], dilations=[2, 2])


@pytest.mark.parametrize(
    "opset,how,sizes",
    [
        (11, "attribute", [2, 6]),
        (13, "input", [5, 3]),
        (11, "equal", [4, 4]),
        (18, "num_outputs", [3, 3, 2]),
    ],
)
def test_split_sizes(opset: int, how: str, sizes: list[int]) -> None:
    kwargs: dict[str, Any] = {"axis": 1}
    extra, inits = [], []
    if how == "attribute":
        kwargs["split"] = sizes
    elif how == "input":
        extra, inits = ["sizes"], [init("sizes", sizes, np.int64)]
    elif how == "num_outputs":
        kwargs["num_outputs"] = len(sizes)
    g = one_op("Split", [1, 8, 2, 2], opset, extra_inputs=extra, inits=inits, n_out=len(sizes), **kwargs)
    assert g.operators[0].attrs == {"axis": 1, "sizes": sizes}
    assert [g.tensors[f"y{i}"].shape[1] for i in range(len(sizes))] == sizes


def test_pad_from_attribute_and_input() -> None:
    pads = [0, 0, 1, 2, 0, 0, 3, 4]
    g10 = one_op("Pad", [1, 2, 5, 5], 10, pads=pads, value=1.5)
    g11 = one_op("Pad", [1, 2, 5, 5], 11, extra_inputs=["p", "v"], inits=[init("p", pads, np.int64), init("v", 1.5)])
    assert g10.operators[0].attrs == g11.operators[0].attrs == {"pads": pads, "mode": "constant", "value": 1.5}
    g18 = one_op(
        "Pad",
        [1, 2, 5, 5],
        18,
        extra_inputs=["p", "", "axes"],
        inits=[init("p", [1, 2, 3, 4], np.int64), init("axes", [2, 3], np.int64)],
        mode="reflect",
    )
    assert g18.operators[0].attrs == {"pads": pads, "mode": "reflect", "value": 0.0}
    assert g18.tensors["y"].shape == (1, 2, 9, 11)


@pytest.mark.parametrize(
    "op_type,opset,as_input",
    [
        ("ReduceMean", 13, False),
        ("ReduceMean", 18, True),
        ("ReduceMax", 11, False),
        ("ReduceSum", 11, False),
        ("ReduceSum", 13, True),
    ],
)
def test_reduce_axes_from_attribute_or_input(op_type: str, opset: int, as_input: bool) -> None:
    if as_input:
        g = one_op(
            op_type, [1, 3, 4, 4], opset, extra_inputs=["axes"], inits=[init("axes", [2, 3], np.int64)], keepdims=0
        )
    else:
        g = one_op(op_type, [1, 3, 4, 4], opset, axes=[2, 3], keepdims=0)
    assert g.operators[0].attrs == {"axes": [2, 3], "keepdims": False}
    assert g.tensors["y"].shape == (1, 3)


def test_squeeze_unsqueeze_flatten_transpose() -> None:
    assert one_op("Squeeze", [1, 3, 1, 1], 11, axes=[2, 3]).operators[0].attrs == {"shape": [1, 3]}
    assert one_op("Squeeze", [1, 3, 1, 1], 13).operators[0].attrs == {"shape": [3]}
    g = one_op("Unsqueeze", [1, 3], 13, extra_inputs=["axes"], inits=[init("axes", [-1], np.int64)])
    assert (g.operators[0].type, g.operators[0].attrs) == ("reshape", {"shape": [1, 3, 1]})
    assert one_op("Flatten", [1, 3, 4, 4], axis=2).tensors["y"].shape == (3, 16)
    assert one_op("Transpose", [1, 3, 4, 5]).operators[0].attrs == {"perm": [3, 2, 1, 0]}


def test_reshape_with_zero_and_minus_one() -> None:
    g = one_op("Reshape", [2, 3, 4, 4], extra_inputs=["s"], inits=[init("s", [0, -1, 4], np.int64)])
    assert g.operators[0].attrs == {"shape": [2, 12, 4]}


def test_channel_shuffle_pattern() -> None:
    nodes = [
        helper.make_node("Reshape", ["x", "s5"], ["r"], name="/shuffle/Reshape"),
        helper.make_node("Transpose", ["r"], ["t"], name="/shuffle/Transpose", perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t", "s4"], ["y"], name="/shuffle/Reshape_1"),
    ]
    inits = [init("s5", [1, 2, 4, 3, 3], np.int64), init("s4", [1, -1, 3, 3], np.int64)]
    g = read(model(nodes, [vi("x", [1, 8, 3, 3])], [vi("y", None)], inits))
    assert [(o.name, o.type, o.attrs) for o in g.operators] == [
        ("/shuffle/Reshape_1", "channel_shuffle", {"groups": 2})
    ]


def test_resize_with_scales_and_sizes() -> None:
    empty = init("roi", np.zeros(0))
    g11 = one_op(
        "Resize",
        [1, 2, 4, 6],
        11,
        extra_inputs=["roi", "scales"],
        inits=[empty, init("scales", [1, 1, 2, 1.5])],
        mode="linear",
        coordinate_transformation_mode="align_corners",
    )
    assert g11.operators[0].attrs == {"size": [8, 9], "mode": "linear", "align_corners": True}
    g13 = one_op(
        "Resize",
        [1, 2, 4, 6],
        13,
        extra_inputs=["", "", "sizes"],
        inits=[init("sizes", [1, 2, 5, 7], np.int64)],
        mode="nearest",
    )
    assert g13.operators[0].attrs == {"size": [5, 7], "mode": "nearest", "align_corners": False}
    g9 = one_op("Upsample", [1, 2, 4, 6], 9, extra_inputs=["scales"], inits=[init("scales", [1, 1, 2, 2])])
    assert g9.tensors["y"].shape == (1, 2, 8, 12)
    g7 = one_op("Upsample", [1, 2, 4, 6], 7, scales=[1.0, 1.0, 3.0, 3.0], mode="bilinear")
    assert g7.operators[0].attrs["mode"] == "linear" and g7.tensors["y"].shape == (1, 2, 12, 18)


def test_resize_cubic_is_refused() -> None:
    with pytest.raises(GraphError, match="cubic") as err:
        one_op(
            "Resize",
            [1, 2, 4, 6],
            13,
            extra_inputs=["", "", "sizes"],
            inits=[init("sizes", [1, 2, 5, 7], np.int64)],
            mode="cubic",
        )
    assert err.value.node == "node"


# ---------------------------------------------------------------------------------------------
# Names, dropped nodes, old-style models


def test_unnamed_and_repeated_node_names_become_stable_and_unique() -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),
        helper.make_node("Sigmoid", ["a"], ["b"], name="Relu_2"),
        helper.make_node("Relu", ["b"], ["c"]),
        helper.make_node("Tanh", ["c"], ["d"], name="act"),
        helper.make_node("Tanh", ["d"], ["y"], name="act"),
    ]
    m = model(nodes, [vi("x", [1, 4])], [vi("y", None)])
    names = [o.name for o in read(m).operators]
    # The unnamed Relu at index 2 would be "Relu_2", which another node already uses.
    assert names == ["Relu_0", "Relu_2", "Relu_2_1", "act", "act_1"]
    assert [o.name for o in read(m).operators] == names  # the same every time


def test_identity_dropout_and_float_casts_are_dropped() -> None:
    nodes = [
        helper.make_node("Identity", ["x"], ["i"], name="id"),
        helper.make_node("Dropout", ["i"], ["d"], name="drop"),
        helper.make_node("Cast", ["d"], ["c"], name="cast", to=FLOAT),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    g = read(model(nodes, [vi("x", [1, 4])], [vi("y", None)]))
    assert [(o.name, o.inputs) for o in g.operators] == [("relu", ["x"])]
    assert set(g.tensors) == {"x", "y"}


def test_initializers_listed_as_inputs_are_weights() -> None:
    m = model(
        [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
        [vi("x", [1, 2, 5, 5]), vi("w", [3, 2, 1, 1])],
        [vi("y", None)],
        [weight("w", (3, 2, 1, 1))],
        opset=11,
    )
    g = read(m)
    assert g.inputs == ["x"] and g.operators[0].attrs["out_channels"] == 3


def test_weights_computed_from_constants_are_folded() -> None:
    nodes = [
        helper.make_node("Mul", ["w", "scale"], ["w2"], name="fold"),
        helper.make_node("Conv", ["x", "w2"], ["y"], name="conv"),
    ]
    g = read(model(nodes, [vi("x", [1, 2, 5, 5])], [vi("y", None)], [weight("w", (3, 2, 1, 1)), init("scale", 2.0)]))
    assert [o.name for o in g.operators] == ["conv"]


def external(name: str, dims: Sequence[int], elem: int = FLOAT) -> onnx.TensorProto:
    """An initializer whose data lives in a file next to the model (not shipped with it)."""
    t = onnx.TensorProto(name=name, dims=list(dims), data_type=elem, data_location=TensorProto.EXTERNAL)
    entry = t.external_data.add()
    entry.key, entry.value = "location", "weights.bin"
    return t


def test_weights_in_external_data_are_refused() -> None:
    # An upload is one file: weights in a file beside it are not part of it (issue 32, item 8).
    with pytest.raises(GraphError, match="external file") as err:
        one_op("Conv", [1, 2, 5, 5], extra_inputs=["w", "b"], inits=[external("w", (3, 2, 3, 3)), external("b", (3,))])
    assert err.value.node == "w" and "save_as_external_data=False" in err.value.reason


def test_a_reshape_target_in_external_data_is_refused() -> None:
    with pytest.raises(GraphError, match="external file") as err:
        one_op("Reshape", [1, 6], extra_inputs=["s"], inits=[external("s", (2,), TensorProto.INT64)])
    assert err.value.node == "s"
