"""Table 3 features from the IR, checked against values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.graph import GraphBuilder
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import (
    FEATURES,
    feature_group,
    feature_matrix,
    op_kind,
    op_raw_features,
    raw_features,
    table3,
)
from devicelab.predict.qed import ir_view


def _features(build, group: str) -> dict[str, float]:
    b = GraphBuilder("t", (1, 8, 16, 16))
    build(b)
    g = b.build()
    return table3(group, op_raw_features(g, g.operators[-1]))


def test_conv_features_match_hand_computed_values() -> None:
    f = _features(lambda b: b.conv(b.input, 16, 3, stride=2, pad=1), "conv")
    assert f == {
        "input_hw": 16,
        "input_channels": 8,
        "output_hw": 8,
        "stride": 2,
        "kernel_hw": 3,
        "filters": 16,
        "input_size": 8 * 16 * 16,
        "output_size": 16 * 8 * 8,
        "kernel_size": 16 * 8 * 3 * 3,
        "flops": 2 * (16 * 8 * 8) * 8 * 3 * 3,
    }


def test_grouped_conv_adds_the_group_count() -> None:
    f = _features(lambda b: b.conv(b.input, 16, 3, groups=4), "grouped_conv")
    assert f["groups"] == 4
    assert f["kernel_size"] == 16 * (8 // 4) * 9
    assert f["flops"] == 2 * (16 * 16 * 16) * 2 * 9
    assert list(f) == list(FEATURES["grouped_conv"])


def test_depthwise_conv_counts_one_filter_per_channel() -> None:
    f = _features(lambda b: b.dwconv(b.input, 3), "conv")
    assert (f["filters"], f["kernel_size"], f["flops"]) == (1, 8 * 9, 2 * 8 * 16 * 16 * 9)


def test_fully_connected_features() -> None:
    f = _features(lambda b: b.fc(b.flatten(b.global_avg_pool(b.input)), 10), "fc")
    assert f == {"input_channels": 8, "filters": 10, "param_size": 8 * 10 + 10, "flops": 2 * 8 * 10}


def test_mean_window_is_the_input() -> None:
    f = _features(lambda b: b.global_avg_pool(b.input), "mean")
    assert f == {"input_hw": 16, "input_channels": 8, "kernel_hw": 16, "input_size": 2048, "flops": 2048}


def test_concat_and_split_kernel_is_the_piece_count() -> None:
    f = _features(lambda b: b.concat([b.input, b.conv(b.input, 4, 1)]), "concat_split")
    assert f == {
        "input_hw": 16,
        "input_channels": 8,
        "kernel_hw": 2,
        "output_channels": 12,
        "input_size": 8 * 256 + 4 * 256,
        "output_size": 12 * 256,
    }
    f = _features(lambda b: b.split(b.input, [2, 2, 4]), "concat_split")
    assert (f["kernel_hw"], f["output_channels"], f["output_size"]) == (3, 2, 2048)


def test_pool_pad_and_elementwise_features() -> None:
    f = _features(lambda b: b.max_pool(b.input, 3, 2, pad=1), "pool")
    assert f == {
        "input_hw": 16,
        "input_channels": 8,
        "output_hw": 8,
        "stride": 2,
        "kernel_hw": 3,
        "input_size": 2048,
        "output_size": 512,
        "flops": 512 * 9,
    }
    f = _features(lambda b: b.op("pad", [b.input], pads=[0, 0, 1, 1, 0, 0, 1, 1]), "pad")
    assert f == {"input_hw": 16, "input_channels": 8, "output_hw": 18, "padding_size": 4, "output_size": 8 * 18 * 18}
    assert _features(lambda b: b.relu(b.input), "elementwise") == {
        "input_hw": 16,
        "input_channels": 8,
        "input_size": 2048,
    }


def test_a_resize_is_described_by_the_output_it_writes() -> None:
    # a 4x upsampling of 8 x 16 x 16 writes 8 x 64 x 64 elements: that is its element-wise work
    f = _features(lambda b: b.op("resize", [b.input], size=[64, 64], mode="linear"), "elementwise")
    assert f == {"input_hw": 64, "input_channels": 8, "input_size": 8 * 64 * 64}


def test_feature_matrix_keeps_the_group_columns_in_order() -> None:
    b = GraphBuilder("t", (1, 8, 16, 16))
    b.conv(b.input, 16, 3)
    g = b.build()
    raw = op_raw_features(g, g.operators[0])
    m = feature_matrix("conv", [raw, raw])
    assert m.shape == (2, len(FEATURES["conv"]))
    assert np.array_equal(m[0], [table3("conv", raw)[n] for n in FEATURES["conv"]])


def test_kinds_map_to_table3_rows() -> None:
    assert op_kind("conv2d", {"groups": 8, "out_channels": 8}, [(1, 8, 4, 4)]) == "depthwise_conv2d"
    assert op_kind("conv2d", {"groups": 2, "out_channels": 8}, [(1, 8, 4, 4)]) == "grouped_conv2d"
    assert feature_group("winograd") == "conv"
    assert feature_group("conv2d/nchwc") == "conv"
    assert feature_group("reorder_output/nchwc") == "elementwise"
    with pytest.raises(KeyError, match="unknown kernel kind"):
        feature_group("teleport")


def test_a_qed_row_goes_through_the_same_function() -> None:
    row = {
        "Input_shape": "31",
        "Input_channel": 384,
        "Output_shape": "14",
        "Stride": "2",
        "Kernel": "5",
        "Filter": "1",
        "Group": "1",
        "FLOPS": "3763200",
    }
    op_type, ins, outs, attrs = ir_view("DEPTHWISE_CONV_2D", row)
    raw = raw_features(op_type, ins, outs, attrs)
    f = table3("conv", raw)
    assert (f["input_hw"], f["output_hw"], f["flops"]) == (31, 14, 3763200)
    with pytest.raises(PredictorError, match="FLOPS"):
        ir_view("DEPTHWISE_CONV_2D", {**row, "FLOPS": "12"})


def test_each_feature_group_names_its_work_among_its_own_features() -> None:
    from devicelab.predict.features import FEATURES, WORK, work_column

    assert set(WORK) == set(FEATURES)
    for group, name in WORK.items():
        assert FEATURES[group][work_column(group)] == name
    assert WORK["conv"] == "flops" and WORK["elementwise"] == "input_size"
