"""The qed reader, and kernel deduction checked against the kernels six real phones ran."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from devicelab.graph import zoo
from devicelab.predict import qed
from devicelab.predict.deduce_tflite_gpu import deduce_kernels, kind_from_name, linked_labels
from devicelab.predict.errors import PredictorError
from tests.devicelab.predict.qed_published import write_published

# Measured on the training file (4052 rows, 67 networks): every row's deduced kernel equals the
# recorded one on all six phones (Winograd on Mali / PowerVR / Apple only, grouped convolutions,
# 1x1-on-1x1 convolutions as fully-connected kernels, Apple's depthwise + 1x1 kernel).
KERNEL_MATCH_FLOOR = 0.999
# Zoo networks with a qed counterpart: the sequence of listed kernels (kind, number of linked
# operators) deduced from our graph vs recorded. Measured 0.996 (kind) and 0.891 (kind and fused
# count; 0.829-0.830 while a residual add linked only into its first operand's chain and Winograd
# kernels took links on Mali / PowerVR / Apple); the rest are architecture differences between
# pytorchcv's networks and the zoo's.
COUNTERPARTS = {
    "proxylessnas_mobile": "proxylessnas_mobile",
    "mobilenet_w1": "mobilenet_v1",
    "mobilenetv3_large_w1": "mobilenet_v3_large",
    "squeezenet_v1_1": "squeezenet_1_1",
    "densenet121": "densenet121",
    "ghostnet": "ghostnet_1.0",
    "mnasnet_b1": "mnasnet1_0",
    "mobilenetv2b_w1": "mobilenet_v2",
    "regnetx004": "regnetx_400mf",
}
LISTED = {
    "conv2d",
    "winograd",
    "grouped_conv2d",
    "depthwise_conv2d",
    "dw_conv_plus_1x1",
    "fully_connected",
    "mean",
    "pooling",
    "concat",
}


def test_rows_parse_into_ir_views(qed_rows: list[qed.QedOp]) -> None:
    assert len(qed_rows) == 4052
    assert len(qed.by_model(qed_rows)) == 67
    first = qed_rows[0]
    assert (first.model, first.operation, first.op_type) == ("bagnet9", "CONV_2D", "conv2d")
    assert first.input_shapes == ((1, 3, 224, 224),) and first.output_shapes == ((1, 64, 224, 224),)
    assert first.kernel["pixel4"] == "convolution_2d_0"
    assert first.latency_us["pixel4"] == pytest.approx(320.4096)


@pytest.mark.parametrize("device", list(qed.DEVICES))
def test_deduced_kernels_match_the_recorded_ones(qed_rows: list[qed.QedOp], device: str) -> None:
    matched, total = qed.kernel_match(qed_rows, device)
    assert total == 4052
    assert matched / total >= KERNEL_MATCH_FLOOR


def test_winograd_appears_where_algorithm_3_2_says(qed_rows: list[qed.QedOp]) -> None:
    wino = {d: sum("winograd" in r.kernel[d] for r in qed_rows) for d in qed.DEVICES}
    assert wino["pixel4"] == wino["mi8se"] == 0  # Adreno's stricter limits
    assert wino["s10"] == wino["a03s"] == wino["iphonexs"] == 118


@pytest.mark.parametrize("device", ["pixel4", "s10", "iphonexs"])
def test_fused_chains_of_zoo_counterparts(qed_rows: list[qed.QedOp], device: str) -> None:
    models = qed.by_model(qed_rows)
    family = qed.DEVICES[device][1]
    total = kinds = exact = 0
    for qname, zname in COUNTERPARTS.items():
        measured, prev = [], None
        for r in models[qname]:
            if r.kernel[device] != prev:
                measured.append((kind_from_name(r.kernel[device]), len(linked_labels(r.kernel[device]))))
            prev = r.kernel[device]
        deduced = [
            (k.type, len(linked_labels(k.name))) for k in deduce_kernels(zoo.build(zname), family) if k.type in LISTED
        ]
        total += len(measured)
        exact += sum(
            b.size for b in difflib.SequenceMatcher(a=measured, b=deduced, autojunk=False).get_matching_blocks()
        )
        kinds += sum(
            b.size
            for b in difflib.SequenceMatcher(
                a=[m[0] for m in measured], b=[d[0] for d in deduced], autojunk=False
            ).get_matching_blocks()
        )
    assert kinds / total >= 0.99
    assert exact / total >= 0.88


def test_samples_hold_kernels_latencies_and_deduction(qed_rows: list[qed.QedOp], qed_e2e: dict) -> None:
    samples = qed.gpu_samples("iphonexs", qed_rows, qed_e2e)
    assert len(samples) == 67
    s = next(x for x in samples if x.name == "mobilenetv3_large_w1")
    assert any(k.type == "dw_conv_plus_1x1" for k in s.measured)
    assert [k.type for k in s.measured] == [k.type for k in s.deduced or ()]
    assert s.e2e_ms > s.kernel_sum_ms > 0  # unlisted element-wise kernels and overhead


def test_a_broken_row_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "ops.csv"
    header = "model,operation,feature,pixel4|gpu|float,pixel4|gpu|kernel\n"
    path.write_text(header + "m,CONV_2D,\"{'Input_shape': '8', \",1.0,convolution_2d_0\n")
    with pytest.raises(PredictorError, match="line 2.*not a Python dict literal"):
        qed.read_ops(path)
    path.write_text(header + "m,CONV_2D,\"{'Input_shape': 'x', 'Input_channel': 3}\",1.0,convolution_2d_0\n")
    with pytest.raises(PredictorError, match="line 2: feature 'Input_shape'"):
        qed.read_ops(path)
    with pytest.raises(PredictorError, match="cannot read"):
        qed.read_ops(tmp_path / "missing.csv")


def test_the_published_file_names_are_found_in_a_folder_or_a_clone(tmp_path: Path) -> None:
    ops, e2e = write_published(tmp_path / "mobile-ml-benchmark", ["resnet10", "mobilenetv2_wd4"])
    assert qed.find_files(tmp_path / "mobile-ml-benchmark") == (ops, e2e)  # the clone as it is
    assert qed.find_files(ops.parent) == (ops, e2e)  # its dataset/ folder
    rows = qed.read_ops(ops)
    assert sorted(qed.by_model(rows)) == ["mobilenetv2_wd4", "resnet10"]
    assert len(rows) == len([r for r in qed.read_ops() if r.model in ("resnet10", "mobilenetv2_wd4")])
    assert set(qed.read_e2e(e2e)) == {"resnet10", "mobilenetv2_wd4"}
    assert [s.name for s in qed.gpu_samples("s10", rows, qed.read_e2e(e2e))] == ["mobilenetv2_wd4", "resnet10"]


def test_our_names_come_first_and_a_folder_without_the_files_is_named(tmp_path: Path) -> None:
    assert qed.find_files(qed.default_data_dir()) == (
        qed.default_data_dir() / qed.OPS_FILE,
        qed.default_data_dir() / qed.E2E_FILE,
    )
    (tmp_path / "tflite_cnn_ops_gpu.csv").write_text("model,operation,feature\n")  # no end-to-end file
    with pytest.raises(PredictorError, match=r"no qed files in .*tflite_cnn_ops_gpu.csv \+ tflite_cnn_e2e.csv"):
        qed.find_files(tmp_path)
    with pytest.raises(PredictorError, match="does not exist"):
        qed.find_files(tmp_path / "nowhere")


def test_a_git_lfs_pointer_is_refused_with_what_to_do(tmp_path: Path) -> None:
    # the repository's later dataset/cnn/ files are kept in Git LFS: a clone without it holds pointers
    folder = tmp_path / "dataset" / "cnn"
    folder.mkdir(parents=True)
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:c49d9a05\nsize 2301909\n"
    for name in ("tflite_cnn_real_ops_gpu.csv", "tflite_cnn_real_e2e.csv"):
        (folder / name).write_text(pointer)
    ops, e2e = qed.find_files(tmp_path)
    with pytest.raises(PredictorError, match="Git LFS pointer.*git lfs pull"):
        qed.read_ops(ops)
    with pytest.raises(PredictorError, match="Git LFS pointer"):
        qed.read_e2e(e2e)


def test_a_bad_end_to_end_value_names_its_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "e2e.csv"
    path.write_text("model,FLOPS,s10|gpu|float|mean\nresnet10,1,fast\n")
    with pytest.raises(PredictorError, match=r"line 2: column 's10\|gpu\|float\|mean' is 'fast'"):
        qed.read_e2e(path)
