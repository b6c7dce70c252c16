"""TFLite import: real .tflite flatbuffers (written with the tflite builders) read into the IR.

TensorFlow is not installed, so the files written by ``tflite_writer`` are the source of truth;
each network is also built with ``GraphBuilder`` in NCHW and the two IR graphs must agree operator
by operator: types, shapes, canonical attributes, MACs, FLOPs and parameters.
"""

from __future__ import annotations

import pytest

from devicelab.graph import GraphBuilder, load_graph
from devicelab.graph.tflite import graph_from_tflite_bytes
from tests.devicelab.graph.tflite_writer import TFLiteWriter


def _rows(graph):
    """The op table without names, for comparing two graphs of the same network."""
    keep = ("type", "input_shapes", "output_shapes", "attrs", "macs", "flops", "params")
    return [{k: r[k] for k in keep} for r in graph.op_table()]


# -- networks --------------------------------------------------------------------------------


def mobilenet_like(with_weights: bool = True, code_style: str = "both") -> bytes:
    """Conv 3x3/2 + fused ReLU6, depthwise, 1x1, residual add, pools, reshape, FC, softmax."""
    w = TFLiteWriter("mobilenet_like", with_weights=with_weights)
    w.code_style = code_style
    x = w.input("input", [1, 224, 224, 3])
    c1 = w.conv2d(x, 16, 3, 2, "SAME", "RELU6", name="conv1")
    y = w.dwconv(c1, 3, 1, "SAME", "RELU6", name="block1/dw")
    y = w.conv2d(y, 16, 1, name="block1/pw")
    y = w.binary("ADD", c1, y, name="block1/add")
    y = w.dwconv(y, 3, 2, "SAME", "RELU", multiplier=2, name="block2/dw")
    y = w.conv2d(y, 64, 1, act="RELU6", name="block2/pw")
    y = w.pool("MAX_POOL_2D", y, 3, 2, "SAME", name="maxpool")
    y = w.pool("AVERAGE_POOL_2D", y, 28, 28, "VALID", name="avgpool")
    y = w.reshape(y, [1, 64], name="flatten")
    y = w.fc(y, 10, name="logits")
    w.outputs = [w.softmax(y, name="prob")]
    return w.to_bytes()


def mobilenet_like_builder():
    """The same network written with GraphBuilder in NCHW."""
    b = GraphBuilder("mobilenet_like", (1, 3, 224, 224))
    c1 = b.relu6(b.conv(b.input, 16, 3, 2, pad="same_tf", bias=True))
    y = b.relu6(b.dwconv(c1, 3, 1, pad="same_tf", bias=True))
    y = b.add(c1, b.conv(y, 16, 1, pad="valid", bias=True))
    y = b.relu(b.dwconv(y, 3, 2, pad="same_tf", multiplier=2, bias=True))
    y = b.relu6(b.conv(y, 64, 1, bias=True))
    y = b.max_pool(y, 3, 2, pad="same_tf")
    y = b.avg_pool(y, 28, 28)
    y = b.fc(b.reshape(y, [1, 64]), 10)
    return b.build(b.softmax(y))


def se_model(with_weights: bool = True) -> bytes:
    """Pad, conv, hard-swish, split, two branches, concat, SE block, resize, constants, split_v, mean."""
    w = TFLiteWriter("se_net", with_weights=with_weights)
    x = w.input("image", [1, 32, 32, 8])
    y = w.pad(x, [[0, 0], [1, 1], [2, 2], [0, 0]], name="pad")
    y = w.conv2d(y, 16, 3, 1, "VALID", name="stem")
    y = w.unary("HARD_SWISH", y, name="stem/hswish")
    s0, s1 = w.split(y, 2, axis=3, name="split")
    a = w.conv2d(s0, 8, 1, act="RELU", name="branch_a")
    b = w.dwconv(s1, 3, 1, "SAME", dilation=2, name="branch_b")
    cat = w.concat([a, b], axis=-1, name="concat")
    m = w.mean(cat, [1, 2], keepdims=True, name="se/squeeze")
    r = w.conv2d(m, 4, 1, act="RELU", name="se/reduce")
    e = w.conv2d(r, 16, 1, name="se/expand")
    g = w.unary("LOGISTIC", e, name="se/gate")
    y = w.binary("MUL", cat, g, name="se/scale")
    y = w.resize(y, [64, 68], bilinear=True, name="upsample")
    bias = w.const("channel_bias", [16])
    y = w.binary("ADD", y, bias, name="add_bias")
    half = w.const("half", [], [0.5])
    y = w.binary("MUL", half, y, name="halve")
    top, bottom = w.split_v(y, [24, 40], axis=1, name="rows")
    pooled = w.mean(top, [1, 2], keepdims=False, name="pooled")
    small = w.resize(bottom, [20, 34], bilinear=False, align_corners=True, name="small")
    w.outputs = [pooled, small]
    return w.to_bytes()


def se_model_builder():
    """The same network written with GraphBuilder in NCHW."""
    b = GraphBuilder("se_net", (1, 8, 32, 32))
    y = b.op("pad", [b.input], pads=[0, 0, 1, 2, 0, 0, 1, 2])
    y = b.act(b.conv(y, 16, 3, pad="valid", bias=True), "hard_swish")
    s0, s1 = b.split(y, [8, 8], axis=1)
    a = b.relu(b.conv(s0, 8, 1, bias=True))
    bb = b.dwconv(s1, 3, pad="same_tf", dilation=2, bias=True)
    cat = b.concat([a, bb], axis=1)
    g = b.sigmoid(b.conv(b.relu(b.conv(b.global_avg_pool(cat), 4, 1, bias=True)), 16, 1, bias=True))
    y = b.resize(b.mul(cat, g), [64, 68], mode="linear")
    y = b.op("add", [y], const_shape=[1, 16, 1, 1])
    y = b.op("mul", [y], const_shape=[], const_value=0.5, const_first=True)
    top, bottom = b.split(y, [24, 40], axis=2)
    pooled = b.op("reduce_mean", [top], axes=[2, 3], keepdims=False)
    small = b.resize(bottom, [20, 34], mode="nearest", align_corners=True)
    return b.build([pooled, small])


def quantized_model(dtype: str = "int8") -> bytes:
    """A small full-integer model: QUANTIZE in, int8 convs and FC, DEQUANTIZE, float softmax."""
    w = TFLiteWriter("quant")
    x = w.input("input", [1, 32, 32, 3])
    q = w.quantize(x, dtype, name="input_q")
    y = w.conv2d(q, 8, 3, 2, "SAME", "RELU6", name="conv1")
    y = w.dwconv(y, 3, 1, "SAME", "RELU6", name="dw")
    y = w.conv2d(y, 16, 1, name="pw")
    y = w.pool("AVERAGE_POOL_2D", y, 16, 16, "VALID", name="gap")
    y = w.reshape(y, [1, 16], name="flatten")
    y = w.fc(y, 10, name="logits")
    d = w.dequantize(y, name="logits_float")
    w.outputs = [w.softmax(d, name="prob")]
    return w.to_bytes()


def float_twin_of_quantized() -> bytes:
    """The quantized model's network in float, without QUANTIZE / DEQUANTIZE."""
    w = TFLiteWriter("float")
    x = w.input("input", [1, 32, 32, 3])
    y = w.conv2d(x, 8, 3, 2, "SAME", "RELU6", name="conv1")
    y = w.dwconv(y, 3, 1, "SAME", "RELU6", name="dw")
    y = w.conv2d(y, 16, 1, name="pw")
    y = w.pool("AVERAGE_POOL_2D", y, 16, 16, "VALID", name="gap")
    y = w.reshape(y, [1, 16], name="flatten")
    w.outputs = [w.softmax(w.fc(y, 10, name="logits"), name="prob")]
    return w.to_bytes()


# -- the MobileNet-like network --------------------------------------------------------------


def test_mobilenet_like_matches_the_builder_network():
    g = graph_from_tflite_bytes(mobilenet_like())
    ref = mobilenet_like_builder()
    assert _rows(g) == _rows(ref)
    assert (g.macs, g.params, g.flops) == (ref.macs, ref.params, ref.flops)
    assert g.input_shape() == (1, 3, 224, 224)
    assert g.outputs == ["prob"] and g.tensors["prob"].shape == (1, 10)


def test_mobilenet_like_names_ops_after_their_output_tensors_and_splits_fused_activations():
    g = graph_from_tflite_bytes(mobilenet_like())
    names = [o.name for o in g.operators]
    assert names[:5] == ["conv1", "conv1/act", "block1/dw", "block1/dw/act", "block1/pw"]
    conv1, act = g.op("conv1"), g.op("conv1/act")
    assert act.type == "relu6" and act.inputs == conv1.outputs and act.outputs == ["conv1"]
    assert g.op("block2/dw/act").type == "relu"
    assert "block1/pw/act" not in names  # fused NONE adds nothing


def test_tf_same_padding_puts_the_odd_pixel_bottom_right():
    g = graph_from_tflite_bytes(mobilenet_like())
    # 224 -> 112 with k3 s2: total pad (112-1)*2 + 3 - 224 = 1, all of it at the bottom/right.
    assert g.op("conv1").attrs["pads"] == [0, 0, 1, 1]
    assert g.op("block1/dw").attrs["pads"] == [1, 1, 1, 1]
    # 56 -> 28 with k3 s2: total pad 1 again.
    assert g.op("maxpool").attrs["pads"] == [0, 0, 1, 1]
    assert g.op("block2/dw").attrs["multiplier"] == 2
    assert g.op("avgpool").attrs["count_include_pad"] is False


def test_mobilenet_like_costs_by_hand():
    g = graph_from_tflite_bytes(mobilenet_like())
    cost = {o.name: g.op_cost(o) for o in g.operators}
    assert cost["conv1"].macs == 112 * 112 * 16 * 3 * 9
    assert cost["conv1"].params == 16 * 3 * 9 + 16
    assert cost["block2/dw"].macs == 56 * 56 * 32 * 9
    assert cost["logits"].params == 64 * 10 + 10


def test_shape_only_file_gives_the_same_graph():
    full = graph_from_tflite_bytes(mobilenet_like(with_weights=True))
    shape_only_bytes = mobilenet_like(with_weights=False)
    assert len(shape_only_bytes) < len(mobilenet_like(with_weights=True)) / 2
    assert _rows(graph_from_tflite_bytes(shape_only_bytes)) == _rows(full)


@pytest.mark.parametrize("style", ["deprecated", "builtin", "both"])
def test_operator_codes_in_either_field_read_the_same(style):
    g = graph_from_tflite_bytes(mobilenet_like(code_style=style))
    assert _rows(g) == _rows(mobilenet_like_builder())


def test_load_graph_detects_tflite_and_names_the_graph_after_the_file():
    g = load_graph(mobilenet_like(), filename="mnet_v0.tflite")
    assert g.name == "mnet_v0"
    assert _rows(g) == _rows(mobilenet_like_builder())


def test_graph_name_defaults_to_the_subgraph_name():
    assert graph_from_tflite_bytes(mobilenet_like()).name == "mobilenet_like"
    assert graph_from_tflite_bytes(mobilenet_like(), name="given").name == "given"


# -- concat, split, pad, mean, resize, hard-swish, SE -----------------------------------------


@pytest.mark.parametrize("with_weights", [True, False])
def test_se_model_matches_the_builder_network(with_weights):
    g = graph_from_tflite_bytes(se_model(with_weights))
    ref = se_model_builder()
    assert _rows(g) == _rows(ref)
    assert (g.macs, g.params) == (ref.macs, ref.params)


def test_se_model_axes_and_attributes_are_converted_to_nchw():
    g = graph_from_tflite_bytes(se_model())
    assert g.op("pad").attrs["pads"] == [0, 0, 1, 2, 0, 0, 1, 2]
    assert g.op("split").attrs == {"axis": 1, "sizes": [8, 8]}
    assert g.op("split").outputs == ["split", "split:1"]
    assert g.op("concat").attrs["axis"] == 1
    assert g.op("se/squeeze").type == "global_avg_pool"
    assert g.op("se/gate").type == "sigmoid"
    assert g.op("branch_b").attrs["pads"] == [2, 2, 2, 2]  # dilation 2: effective kernel 5
    assert g.op("add_bias").attrs["const_shape"] == [1, 16, 1, 1]
    assert g.op_cost(g.op("add_bias")).params == 16
    assert g.op("halve").attrs["const_first"] is True and g.op("halve").attrs["const_value"] == 0.5
    assert g.op("rows").attrs == {"axis": 2, "sizes": [24, 40]}
    assert g.op("pooled").type == "reduce_mean"
    assert g.op("pooled").attrs == {"axes": [2, 3], "keepdims": False}
    assert g.op("upsample").attrs == {"size": [64, 68], "mode": "linear", "align_corners": False}
    assert g.op("small").attrs == {"size": [20, 34], "mode": "nearest", "align_corners": True}
    assert g.tensors["pooled"].shape == (1, 16)
    assert g.tensors["small"].shape == (1, 16, 20, 34)


# -- quantized models ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_quantized_model_keeps_quantize_ops_and_counts_int8_macs(dtype):
    """QUANTIZE / DEQUANTIZE keep their meaning: the convs and the FC read and write int8 (or
    uint8) tensors, so their MACs count as int8 ones; the network is the float twin's otherwise."""
    g = graph_from_tflite_bytes(quantized_model(dtype))
    ref = graph_from_tflite_bytes(float_twin_of_quantized())
    kinds = [o.type for o in g.operators]
    assert kinds[0] == "quantize_linear" and g.operators[0].attrs == {"dtype": dtype}
    assert "dequantize_linear" in kinds
    assert [k for k in kinds if k not in ("quantize_linear", "dequantize_linear")] == [o.type for o in ref.operators]
    assert (g.macs, g.params) == (ref.macs, ref.params)
    assert g.macs_by_dtype() == {dtype: ref.macs} and ref.macs_by_dtype() == {"float32": ref.macs}
    assert g.tensors["input"].dtype == "float32"
    assert g.tensors["input_q"].dtype == dtype
    assert g.op("conv1").inputs == ["input_q"]
    assert g.tensors["conv1"].dtype == dtype
    assert g.tensors["logits"].dtype == dtype
    assert g.op("prob").inputs == ["logits_float"] and g.tensors["logits_float"].dtype == "float32"
    assert g.tensors["prob"].dtype == "float32"
    assert {r["name"]: r["dtype"] for r in g.op_table()}["pw"] == dtype
    assert {o.name for o in g.quantized_operators()} >= {"input_q", "conv1", "pw", "logits", "logits_float"}
    assert ref.quantized_operators() == []


def test_fp16_weights_behind_dequantize_are_constants():
    w = TFLiteWriter("fp16")
    x = w.input("input", [1, 16, 16, 4])
    half = w.const("conv/weights_fp16", [8, 3, 3, 4], dtype="float16")
    filt = w.tensor("conv/weights", [8, 3, 3, 4])
    w.op("DEQUANTIZE", [half], [filt])
    y = w.tensor("conv", [1, 16, 16, 8])
    w.op("CONV_2D", [x, filt, -1], [y], ("Conv2DOptions", {"Padding": 0, "StrideW": 1, "StrideH": 1}))
    g = graph_from_tflite_bytes(w.to_bytes(outputs=[y]))
    assert [o.type for o in g.operators] == ["conv2d"]
    assert g.op("conv").attrs["out_channels"] == 8 and g.op("conv").attrs["bias"] is False
    assert g.params == 8 * 4 * 9


# -- single operators ------------------------------------------------------------------------


def _one(build, shape=(1, 8, 10, 12), **kw):
    w = TFLiteWriter("one")
    x = w.input("x", list(shape))
    out = build(w, x)
    w.outputs = out if isinstance(out, list) else [out]
    return graph_from_tflite_bytes(w.to_bytes(), **kw)


@pytest.mark.parametrize("axis,ir_axis", [(-1, 1), (3, 1), (1, 2), (2, 3)])
def test_concat_axis_maps_nhwc_to_nchw(axis, ir_axis):
    g = _one(lambda w, x: w.concat([x, x], axis=axis, name="cat"), shape=(1, 4, 4, 4))
    assert g.op("cat").attrs["axis"] == ir_axis
    assert g.tensors["cat"].shape[ir_axis] == 8


def test_softmax_on_4d_runs_over_channels():
    g = _one(lambda w, x: w.softmax(x, name="sm"))
    assert g.op("sm").attrs["axis"] == 1


@pytest.mark.parametrize("with_data", [True, False])
def test_transpose_perm_is_mapped(with_data):
    g = _one(lambda w, x: w.transpose(x, [0, 3, 1, 2], name="t", with_data=with_data), shape=(1, 4, 5, 6))
    # NHWC [1,4,5,6] -> [1,6,4,5]; in NCHW that is (1,6,4,5) -> (1,5,6,4).
    assert g.tensors["x"].shape == (1, 6, 4, 5)
    assert g.tensors["t"].shape == (1, 5, 6, 4)
    assert g.op("t").attrs["perm"] == [0, 3, 1, 2]


def test_squeeze_becomes_reshape():
    g = _one(lambda w, x: w.squeeze(x, [1, 2], name="sq"), shape=(1, 1, 1, 8))
    assert g.op("sq").type == "reshape" and g.op("sq").attrs["shape"] == [1, 8]


@pytest.mark.parametrize(
    "kind,ir,attrs",
    [
        ("RELU", "relu", {}),
        ("RELU6", "relu6", {}),
        ("TANH", "tanh", {}),
        ("HARD_SWISH", "hard_swish", {}),
        ("LOGISTIC", "sigmoid", {}),
        ("RELU_N1_TO_1", "clip", {"min": -1.0, "max": 1.0}),
    ],
)
def test_activations(kind, ir, attrs):
    g = _one(lambda w, x: w.unary(kind, x, name="a"))
    assert (g.op("a").type, g.op("a").attrs) == (ir, attrs)


def test_leaky_relu_keeps_alpha():
    g = _one(lambda w, x: w.unary("LEAKY_RELU", x, ("LeakyReluOptions", {"Alpha": 0.25}), name="lr"))
    assert g.op("lr").attrs == {"alpha": 0.25}


def test_operator_code_above_127_uses_the_builtin_field():
    for style in ("both", "builtin"):
        w = TFLiteWriter("gelu")
        w.code_style = style
        x = w.input("x", [1, 8])
        w.outputs = [w.unary("GELU", x, name="g")]
        g = graph_from_tflite_bytes(w.to_bytes())
        assert g.op("g").type == "gelu"


@pytest.mark.parametrize("act,ir", [("TANH", "tanh"), ("RELU_N1_TO_1", "clip"), ("RELU", "relu")])
def test_fused_activation_kinds(act, ir):
    g = _one(lambda w, x: w.conv2d(x, 4, 3, act=act, name="c"))
    assert g.op("c/act").type == ir
    assert g.op("c/act").outputs == ["c"] and g.op("c").outputs == ["c/pre_act"]


def test_grouped_conv_from_filter_shape():
    g = _one(lambda w, x: w.conv2d(x, 16, 3, groups=4, name="gc"), shape=(1, 8, 8, 8))
    assert g.op("gc").attrs["groups"] == 4
    assert g.op_cost(g.op("gc")).macs == 16 * 8 * 8 * 2 * 9


@pytest.mark.parametrize("size,pads", [(7, [1, 1, 1, 1]), (8, [0, 0, 1, 1])])
def test_max_pool_same_padding(size, pads):
    g = _one(lambda w, x: w.pool("MAX_POOL_2D", x, 3, 2, "SAME", name="mp"), shape=(1, size, size, 4))
    assert g.op("mp").attrs["pads"] == pads
    assert g.tensors["mp"].shape == (1, 4, 4, 4)


def test_fully_connected_on_4d_input_flattens_first():
    g = _one(lambda w, x: w.fc(x, 5, name="fc", in_features=32), shape=(1, 2, 2, 8))
    assert [o.type for o in g.operators] == ["reshape", "fully_connected"]
    assert g.op("fc/flatten").attrs["shape"] == [1, 32]
    assert g.op_cost(g.op("fc")).params == 32 * 5 + 5
    assert g.tensors["fc"].shape == (1, 5)


def test_fully_connected_rows_are_the_leading_axes_when_weights_take_the_last_axis():
    g = _one(lambda w, x: w.fc(x, 5, name="fc"), shape=(1, 2, 2, 8))
    assert g.op("fc/flatten").attrs["shape"] == [4, 8]
    assert g.tensors["fc"].shape == (4, 5)


def test_mean_over_height_only_keeps_tflite_axis_order():
    g = _one(lambda w, x: w.mean(x, [1], keepdims=False, name="m"), shape=(1, 4, 6, 8))
    assert [o.type for o in g.operators] == ["reduce_mean", "reshape"]
    assert g.op("m").attrs == {"axes": [2], "keepdims": False}
    assert g.tensors["m"].shape == (1, 6, 8)  # TFLite's [N, W, C]


def test_mean_with_keepdims_over_channels_is_reduce_mean():
    g = _one(lambda w, x: w.mean(x, [3], keepdims=True, name="m"), shape=(1, 4, 6, 8))
    assert g.op("m").type == "reduce_mean" and g.op("m").attrs["axes"] == [1]


def test_pad_without_paddings_data_splits_evenly():
    g = _one(lambda w, x: w.pad(x, [[0, 0], [1, 2], [0, 3], [0, 0]], name="p", with_data=False), shape=(1, 4, 4, 2))
    assert g.tensors["p"].shape == (1, 2, 7, 7)
    assert g.op("p").attrs["pads"] == [0, 0, 1, 1, 0, 0, 2, 2]


def test_padv2_keeps_the_constant_value():
    g = _one(lambda w, x: w.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], value=-1.5, name="p"), shape=(1, 4, 4, 2))
    assert g.op("p").attrs["value"] == -1.5 and g.op("p").attrs["pads"] == [0, 0, 1, 1, 0, 0, 1, 1]


def test_sub_with_constant_first_operand():
    def build(w, x):
        return w.binary("SUB", w.const("k", [1, 1, 1, 8]), x, act="RELU", name="s")

    g = _one(build, shape=(1, 4, 4, 8))
    assert g.op("s").attrs == {"const_shape": [1, 8, 1, 1], "const_first": True}
    assert g.op("s/act").type == "relu"


def test_binary_of_two_inputs_with_different_ranks_broadcasts_over_channels():
    w = TFLiteWriter("bcast")
    x = w.input("x", [1, 4, 4, 8])
    v = w.input("v", [8])
    w.outputs = [w.binary("MUL", x, v, name="m")]
    g = graph_from_tflite_bytes(w.to_bytes())
    assert g.op("m/broadcast1").attrs["shape"] == [1, 8, 1, 1]
    assert g.op("m").inputs == ["x", "m/broadcast1"] and g.tensors["m"].shape == (1, 8, 4, 4)


def test_dynamic_batch_reads_as_one():
    w = TFLiteWriter("dyn")
    x = w.input("x", [1, 8, 8, 3], signature=[-1, 8, 8, 3])
    y = w.conv2d(x, 4, 3, name="c")
    w.tensors[y].signature = [-1, 8, 8, 4]
    w.outputs = [y]
    g = graph_from_tflite_bytes(w.to_bytes())
    assert g.input_shape() == (1, 3, 8, 8) and g.tensors["c"].shape == (1, 4, 8, 8)


def test_empty_and_repeated_tensor_names_are_made_unique():
    w = TFLiteWriter("names")
    x = w.input("", [1, 4, 4, 2])
    a = w.unary("RELU", x, name="same")
    b = w.unary("RELU6", a, name="same")
    w.outputs = [b]
    g = graph_from_tflite_bytes(w.to_bytes())
    assert g.inputs == ["tensor_0"]
    assert [o.name for o in g.operators] == ["same", "same_1"]


def test_model_of_quantize_ops_only_reads_as_them():
    w = TFLiteWriter("q")
    x = w.input("x", [1, 4, 4, 2])
    w.outputs = [w.dequantize(w.quantize(x))]
    g = graph_from_tflite_bytes(w.to_bytes())
    assert [o.type for o in g.operators] == ["quantize_linear", "dequantize_linear"]
    assert [g.tensors[t].dtype for o in g.operators for t in o.outputs] == ["int8", "float32"]
