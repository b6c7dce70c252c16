"""TFLite GPU kernel deduction: Algorithm 3.2 against the paper's Table 2, Algorithm 3.1 on small graphs."""

from __future__ import annotations

import pytest

from devicelab.graph import GraphBuilder
from devicelab.predict.deduce_tflite_gpu import (
    ConvInfo,
    TfliteGpuDeducer,
    check_winograd,
    deduce_kernels,
    gpu_family,
    select_conv_kernel,
)
from devicelab.predict.errors import PredictorError


def _conv(cin: int, cout: int, out_hw: int, groups: int = 1, k: int = 3, s: int = 1) -> ConvInfo:
    return ConvInfo(cin, cout, groups, (k, k), (s, s), (1, 1), (out_hw, out_hw))


# Table 2 of the paper: convolutions of ResNet16 (1 group, 3x3, stride 1) and whether TFLite
# picks Winograd on Adreno and on Mali.
TABLE_2 = [
    (64, 64, 56, False, True),
    (128, 128, 28, False, True),
    (256, 256, 14, False, False),
]


@pytest.mark.parametrize(("cin", "cout", "out_hw", "adreno", "mali"), TABLE_2)
def test_winograd_choice_matches_table_2(cin: int, cout: int, out_hw: int, adreno: bool, mali: bool) -> None:
    info = _conv(cin, cout, out_hw)
    assert check_winograd("adreno6xx", info) is adreno
    assert check_winograd("adreno", info) is adreno
    assert check_winograd("mali", info) is mali
    assert check_winograd("powervr", info) is mali  # lines 21 and 28 apply to every other GPU


def test_adreno_generations_differ_on_tiles() -> None:
    info = _conv(256, 256, 40)  # src/dst depth 64, 100 tiles
    assert not check_winograd("adreno6xx", info)  # needs 128 tiles (line 24)
    assert check_winograd("adreno", info)  # needs 64 (line 26)
    assert check_winograd("adreno6xx", _conv(256, 256, 56))


def test_amd_has_its_own_depth_limit() -> None:
    info = _conv(64, 32, 56)  # src depth 16, dst depth 8
    assert check_winograd("amd", info)
    assert not check_winograd("mali", info)


def test_grouped_conv_wins_over_winograd_and_needs_groups_of_four() -> None:
    assert select_conv_kernel("mali", _conv(64, 64, 56, groups=2)) == "grouped_conv2d"
    assert select_conv_kernel("mali", _conv(24, 24, 56, groups=3)) == "grouped_conv2d"  # 8 channels a group
    assert select_conv_kernel("mali", _conv(18, 18, 56, groups=3)) == "conv2d"  # 6 channels a group
    assert select_conv_kernel("mali", _conv(64, 64, 56, k=5)) == "conv2d"
    assert select_conv_kernel("mali", _conv(64, 64, 56, s=2)) == "conv2d"


def test_gpu_names_map_to_families() -> None:
    assert gpu_family("Adreno (TM) 640") == "adreno6xx"
    assert gpu_family("Adreno 540") == "adreno"
    assert gpu_family("Mali-G76 MP10") == "mali"
    assert gpu_family("PowerVR Rogue GE8320") == "powervr"
    assert gpu_family("Apple A12 GPU") == "apple"
    assert gpu_family("AMD Radeon RX 580") == "amd"
    assert gpu_family("llvmpipe") == "other"
    with pytest.raises(PredictorError, match="unknown GPU family"):
        TfliteGpuDeducer("nvidia")


def _names(b: GraphBuilder, outputs: list[str] | None = None, family: str = "mali") -> list[str]:
    return [k.name for k in deduce_kernels(b.build(outputs), family)]


def test_activation_and_folded_batch_norm_link_into_the_conv() -> None:
    b = GraphBuilder("t", (1, 8, 16, 16))
    b.relu(b.bn(b.conv(b.input, 8, 3)))
    assert _names(b) == ["convolution_2d_0_linked_:_relu_1"]


def test_add_links_only_when_it_reads_the_chain_first() -> None:
    # Algorithm 3.1 line 14: the tensor must be the next node's input 0.
    b = GraphBuilder("t", (1, 8, 16, 16))
    y = b.conv(b.input, 8, 3)
    b.relu(b.add(y, b.input))
    assert _names(b) == ["convolution_2d_0_linked_:_add_1_linked_:_relu_2"]
    b = GraphBuilder("t", (1, 8, 16, 16))
    y = b.conv(b.input, 8, 3)
    b.relu(b.add(b.input, y))
    assert _names(b) == ["convolution_2d_0", "add_1_linked_:_relu_2"]


def test_a_tensor_with_two_readers_is_not_linked() -> None:
    b = GraphBuilder("t", (1, 8, 16, 16))
    y = b.conv(b.input, 8, 3)
    out = b.add(b.relu(y), y)
    # The conv's output has two readers: nothing links into it; the ReLU's has one, the add.
    assert _names(b, [out]) == ["convolution_2d_0", "relu_1_linked_:_add_2"]


def test_nodes_with_several_outputs_do_not_link_forward() -> None:
    b = GraphBuilder("t", (1, 8, 16, 16))
    parts = b.split(b.input, [4, 4])
    b.concat([b.relu(parts[0]), b.sigmoid(parts[1])])
    names = _names(b)
    assert names[0] == "split_0"
    assert "concat_3" in names and len(names) == 4  # split, relu, sigmoid, concat


def test_non_linkable_followers_stay_apart() -> None:
    b = GraphBuilder("t", (1, 8, 16, 16))
    b.max_pool(b.conv(b.input, 8, 3), 2)
    assert _names(b) == ["convolution_2d_0", "pooling_2d_1"]


def test_conversions_seen_on_every_phone() -> None:
    b = GraphBuilder("t", (1, 8, 7, 7))
    x = b.avg_pool(b.input, 7)  # window = whole input: the mean kernel
    b.sigmoid(b.conv(x, 4, 1, bias=True))  # a 1x1 conv on a 1x1 input: the fully-connected kernel
    kernels = deduce_kernels(b.build(), "adreno6xx")
    assert [k.type for k in kernels] == ["mean", "fully_connected"]
    assert kernels[1].name == "fully_connected_1_linked_:_sigmoid_2"


def test_apple_fuses_a_small_depthwise_conv_with_its_1x1_conv() -> None:
    b = GraphBuilder("t", (1, 16, 32, 32))
    y = b.relu(b.dwconv(b.input, 3))
    b.add(b.conv(y, 16, 1), b.input)
    apple = deduce_kernels(b.build(), "apple")
    mali = deduce_kernels(b.build(), "mali")
    assert [k.type for k in apple] == ["dw_conv_plus_1x1"]
    assert apple[0].name == "depthwise_conv_plus_1x1_conv_0_1_2_linked_:_add_3"
    assert apple[0].ops == (0, 1, 2, 3)
    assert [k.type for k in mali] == ["depthwise_conv2d", "conv2d"]


def test_every_operator_lands_in_exactly_one_kernel() -> None:
    from devicelab.graph import zoo

    for name in ("mobilenet_v3_large", "resnet18", "shufflenet_v2_x1_0", "googlenet"):
        g = zoo.build(name)
        for family in ("adreno6xx", "mali", "apple"):
            ops = [i for k in deduce_kernels(g, family) for i in k.ops]
            assert sorted(ops) == list(range(len(g.operators))), (name, family)


def test_resnet_convolutions_pick_winograd_on_mali_only() -> None:
    from devicelab.graph import zoo

    g = zoo.build("resnet18")
    types = {f: {k.type for k in deduce_kernels(g, f)} for f in ("adreno6xx", "mali")}
    assert "winograd" in types["mali"]
    assert "winograd" not in types["adreno6xx"]
