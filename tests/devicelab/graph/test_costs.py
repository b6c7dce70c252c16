"""MACs, FLOPs and parameters per operator against hand-computed values."""

from __future__ import annotations

from devicelab.graph import GraphBuilder


def _single(op_type_builder):
    b = GraphBuilder("g", (1, 32, 56, 56))
    out = op_type_builder(b)
    g = b.build(out)
    return g, g.op_cost(g.operators[-1])


def test_conv_counts_macs_weights_and_bias():
    g, c = _single(lambda b: b.conv(b.input, 64, 3, stride=2, bias=True))
    assert g.tensors[g.outputs[0]].shape == (1, 64, 28, 28)
    assert c.macs == 64 * 28 * 28 * 32 * 9
    assert c.params == 64 * 32 * 9 + 64
    assert c.flops == 2 * c.macs


def test_grouped_conv_divides_input_channels():
    g, c = _single(lambda b: b.conv(b.input, 64, 3, groups=4))
    assert c.macs == 64 * 56 * 56 * (32 // 4) * 9
    assert c.params == 64 * 8 * 9


def test_depthwise_conv():
    g, c = _single(lambda b: b.dwconv(b.input, 5, stride=2, pad="same_tf", multiplier=2))
    assert g.tensors[g.outputs[0]].shape == (1, 64, 28, 28)
    assert c.macs == 64 * 28 * 28 * 25
    assert c.params == 64 * 25


def test_batch_norm_is_folded_for_macs_and_has_two_params_per_channel():
    g, c = _single(lambda b: b.bn(b.input))
    assert c.macs == 0
    assert c.params == 2 * 32
    assert c.flops == 2 * 32 * 56 * 56


def test_fully_connected():
    g, c = _single(lambda b: b.fc(b.flatten(b.global_avg_pool(b.input)), 1000))
    assert c.macs == 32 * 1000
    assert c.params == 32 * 1000 + 1000


def test_pooling_flops_count_window_elements():
    g, c = _single(lambda b: b.max_pool(b.input, 3, 2, pad=1))
    assert g.tensors[g.outputs[0]].shape == (1, 32, 28, 28)
    assert (c.macs, c.params, c.flops) == (0, 0, 32 * 28 * 28 * 9)


def test_scalar_constant_is_not_a_parameter_but_a_tensor_constant_is():
    b = GraphBuilder("g", (1, 8, 4, 4))
    x = b.op("div", [b.input], const_shape=[], const_value=6.0)
    y = b.op("mul", [x], const_shape=[1, 8, 1, 1])
    g = b.build(y)
    assert g.op_cost(g.operators[0]).params == 0
    assert g.op_cost(g.operators[1]).params == 8


def test_resnet18_matches_torchvision():
    # torchvision.models.resnet18 documentation: 11,689,512 parameters, 1.81 GFLOPS (multiply-adds).
    b = GraphBuilder("resnet18", (1, 3, 224, 224))
    x = b.max_pool(b.relu(b.bn(b.conv(b.input, 64, 7, 2, pad=3))), 3, 2, pad=1)
    for c, s in [(64, 1), (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1)]:
        y = b.bn(b.conv(b.relu(b.bn(b.conv(x, c, 3, s))), c, 3))
        if s != 1 or b.channels(x) != c:
            x = b.bn(b.conv(x, c, 1, s, pad=0))
        x = b.relu(b.add(x, y))
    g = b.build(b.classifier(x))
    assert g.params == 11_689_512
    assert abs(g.macs - 1.81e9) / 1.81e9 < 0.01
