"""TFLite GPU kernel deduction: Algorithm 3.2 against the paper's Table 2, Algorithm 3.1 on small graphs,
and both against the kernel names the qed phones recorded (``../shared/data``)."""

from __future__ import annotations

import pytest

from devicelab.graph import GraphBuilder
from devicelab.predict import qed
from devicelab.predict.deduce_tflite_gpu import (
    ConvInfo,
    TfliteGpuDeducer,
    check_winograd,
    deduce_kernels,
    gpu_family,
    kind_from_name,
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


def test_an_add_of_same_shaped_inputs_links_whichever_operand_its_chain_writes() -> None:
    for operands in ("yx", "xy"):
        b = GraphBuilder("t", (1, 8, 16, 16))
        y = b.conv(b.input, 8, 3)
        pair = (y, b.input) if operands == "yx" else (b.input, y)
        b.relu(b.add(*pair))
        assert _names(b) == ["convolution_2d_0_linked_:_add_1_linked_:_relu_2"], operands


def test_a_broadcasting_reader_links_only_when_it_reads_the_chain_first() -> None:
    # Algorithm 3.1 line 14: the tensor must be the next node's input 0 (a squeeze-excitation
    # MUL is not linked into its sigmoid on any qed phone: seresnet10's fully_connected_9_linked_:_sigmoid_10)
    b = GraphBuilder("t", (1, 8, 16, 16))
    s = b.sigmoid(b.conv(b.global_avg_pool(b.input), 8, 1, bias=True))
    b.mul(b.input, s)
    assert _names(b) == ["mean_0", "fully_connected_1_linked_:_sigmoid_2", "mul_3"]


def test_a_node_links_only_once_its_readers_other_inputs_are_written() -> None:
    # TFLite's IsReady: the add waits for the second conv, launched after the first
    b = GraphBuilder("t", (1, 8, 16, 16))
    y = b.conv(b.input, 8, 3)
    z = b.conv(b.input, 8, 1)
    b.relu(b.add(y, z))
    assert _names(b) == ["convolution_2d_0", "convolution_2d_1_linked_:_add_2_linked_:_relu_3"]


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


def test_apple_fuses_a_stride_2_depthwise_conv_with_its_1x1_conv() -> None:
    # The head of qed's fdmobilenet_wd4 (the public dataset/tflite_cnn_ops_gpu.csv, not among
    # the training part in ../shared/data): explicit pads (nodes 2 and 7), then two stride-2
    # depthwise convs. Both iPhones ran the first with its 8 -> 16 channel 1x1 conv as one
    # kernel; the second's 1x1 conv goes to 32 channels, over Apple's limit of 16.
    b = GraphBuilder("fdmobilenet_wd4", (1, 3, 224, 224))
    x = b.relu(b.conv(b.input, 8, 3, stride=2, pad=1))
    for channels in (16, 32):
        x = b.op("pad", [x], pads=[0, 0, 1, 1, 0, 0, 1, 1])
        x = b.relu(b.dwconv(x, 3, stride=2, pad=0))
        x = b.relu(b.conv(x, channels, 1))
    assert [k for k in _names(b, family="apple") if not k.startswith("pad_")] == [
        "convolution_2d_0_linked_:_relu_1",
        "depthwise_conv_plus_1x1_conv_3_4_5_linked_:_relu_6",  # as both iPhones named it
        "depthwise_convolution_8_linked_:_relu_9",
        "convolution_2d_10_linked_:_relu_11",
    ]
    assert "depthwise_convolution_3_linked_:_relu_4" in _names(b, family="mali")  # Apple only


@pytest.mark.parametrize("device", ["iphone7", "iphonexs"])
def test_every_measured_depthwise_and_1x1_pair_on_iphones_is_deduced(qed_rows: list, device: str) -> None:
    # Every depthwise row followed by a 1x1 conv row in the shared data, stride 1 and 2: the
    # pair is one special kernel exactly when the iPhone ran it as one.
    pairs = 0
    for model_rows in qed.by_model(qed_rows).values():
        deduced = {i: k.type for k in qed.deduce_rows(model_rows, "apple") for i in k.ops}
        for i, (dw, conv) in enumerate(zip(model_rows, model_rows[1:])):
            if dw.op_type == "depthwise_conv2d" and conv.op_type == "conv2d" and conv.attrs["kernel"] == [1, 1]:
                pairs += 1
                ran = kind_from_name(dw.kernel[device])
                assert deduced[i] == ran, (dw.model, dw.row, dw.attrs["stride"], ran)
    assert pairs > 300


# resnet10 and resnet14 of the qed data, built as the zoo builds ResNets (torchvision's basic
# blocks): every kernel the six phones ran, as they named it, in launch order
RESNETS = {"resnet10": (1, 1, 1, 1), "resnet14": (2, 2, 1, 1)}


@pytest.mark.parametrize("network", list(RESNETS))
def test_resnet_kernels_are_named_as_every_phone_named_them(qed_rows: list, network: str) -> None:
    from devicelab.graph.zoo.resnet import build_resnet_v1

    graph = build_resnet_v1(network, "basic", RESNETS[network])
    rows = qed.by_model(qed_rows)[network]
    for device, (_, family) in qed.DEVICES.items():
        deduced = [k.name for k in deduce_kernels(graph, family) if k.type in qed.LISTED_KINDS]
        assert deduced == [r.kernel[device] for r in rows], device


def test_winograd_takes_no_links_on_mali_powervr_and_apple() -> None:
    # s10, a03s and both iPhones ran resnet10's first block as convolution_winograd_4x4_6x6_3 and
    # _5 with no linked node; the downsampling block's add and ReLU went to the shortcut conv
    b = GraphBuilder("t", (1, 64, 56, 56))
    y = b.relu(b.conv(b.input, 64, 3))
    y = b.conv(y, 64, 3)
    z = b.conv(b.input, 64, 1)
    b.relu(b.add(y, z))
    for family in ("mali", "powervr", "apple"):
        assert _names(b, family=family) == [
            "convolution_winograd_4x4_6x6_0",
            "relu_1",
            "convolution_winograd_4x4_6x6_2",
            "convolution_2d_3_linked_:_add_4_linked_:_relu_5",
        ], family
    b = GraphBuilder("t", (1, 64, 56, 56))
    b.relu(b.add(b.conv(b.input, 64, 3), b.input))
    assert _names(b, family="mali") == ["convolution_winograd_4x4_6x6_0", "add_1_linked_:_relu_2"]
    assert _names(b, family="amd") == ["convolution_winograd_4x4_6x6_0_linked_:_add_1_linked_:_relu_2"]


def test_a_flatten_after_a_global_mean_is_no_kernel() -> None:
    # TFLite's RemoveIdentityReshape: the phones ran mean_26 then fully_connected_27 in resnet10
    b = GraphBuilder("t", (1, 8, 7, 7))
    b.fc(b.flatten(b.global_avg_pool(b.input)), 10)
    kernels = deduce_kernels(b.build(), "mali")
    assert [k.name for k in kernels] == ["mean_0", "fully_connected_1"]
    assert [k.ops for k in kernels] == [(0, 1), (2,)]


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
