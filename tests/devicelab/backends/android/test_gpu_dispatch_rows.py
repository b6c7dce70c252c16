"""LiteRT 2.x's GPU delegate in the op profile: one row per OpenCL dispatch, no partition row.

The delegate hands the profiler one event per dispatch, typed by the GPU node's label
(``convolution_2d 0``, merged element-wise nodes chained with `` -> ``) and named
``Delegate/<label>:<dispatch index>``; the tables are those of the text and CSV formatters, with
or without the ``start`` column. The adb double's formatter writes them (``tests/adb_double/
op_profiling.py``) and the production parser reads every variant back."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.backends.android import benchmark_output as bo
from tests.adb_double import op_profiling as opf

LABELS = ["convolution_2d 0 -> relu 1", "depthwise_convolution 2", "winograd_4x4_to_36 3", "fully_connected 4"]


def _table(csv: bool, with_start: bool) -> str:
    types = ["QUANTIZE", *LABELS, "ARG_MAX"]
    names = ["[input_q]:0", *(f"Delegate/{label}:{i}" for i, label in enumerate(LABELS)), "[argmax]:5"]
    times = np.array([[3, 410, 120, 95, 30, 2], [4, 400, 118, 97, 31, 2]], dtype=np.int64)
    init = opf.StatsCalculator.from_runs([[opf.Event("AllocateTensors", "AllocateTensors/0", 900)]], csv, with_start)
    run = opf.StatsCalculator.from_matrix(types, names, times, csv, with_start)
    return opf.sections(init, run)


@pytest.mark.parametrize("csv", [False, True], ids=["text", "csv"])
@pytest.mark.parametrize("with_start", [False, True], ids=["litert", "start-column"])
def test_dispatch_rows_are_read_in_every_table_layout(csv: bool, with_start: bool) -> None:
    profile = bo.parse_op_profile(_table(csv, with_start))
    assert profile.mode == (bo.OutputMode.CSV if csv else bo.OutputMode.TEXT)
    assert [r.node_type for r in profile.rows] == ["QUANTIZE", *LABELS, "ARG_MAX"]
    dispatches = [r for r in profile.rows if bo.gpu_dispatch_nodes(r.node_type) is not None]
    assert [r.name for r in dispatches] == [f"Delegate/{label}:{i}" for i, label in enumerate(LABELS)]
    assert dispatches[0].avg_ms == pytest.approx(0.405) and dispatches[0].times_called == 1


def test_a_label_gives_the_gpu_operations_and_node_ids_it_ran() -> None:
    assert bo.gpu_dispatch_nodes("convolution_2d 0 -> relu 1") == [("convolution_2d", 0), ("relu", 1)]
    assert bo.gpu_dispatch_nodes("convolution_winograd_4x4_6x6 7") == [("convolution_winograd_4x4_6x6", 7)]
    # builtin kernels, XNNPACK operators, partitions and the ML Drift accelerator's buffer
    # transfers ("UploadOrBindTensorBuffer") are no dispatch
    for other in ("CONV_2D", "Convolution (NHWC, F32) IGEMM", "TfLiteGpuDelegateV2", "UploadOrBindTensorBuffer"):
        assert bo.gpu_dispatch_nodes(other) is None


def test_the_doubles_gpu_partition_becomes_its_dispatches_without_the_cpu_side_cost() -> None:
    times = np.array([[5, 1000], [5, 1100]], dtype=np.int64)
    gpu = {1: [(opf.gpu_label("CONV_2D", 0), 300.0), (opf.gpu_label("ADD", 1), 100.0)]}
    types, names, out = opf.gpu_dispatch_columns(["ADD", "TfLiteGpuDelegateV2"], ["[a]:0", "[b]:3"], times, gpu, 100.0)
    assert types == ["ADD", "convolution_2d 0", "add 1"]
    assert names == ["[a]:0", "Delegate/convolution_2d 0:0", "Delegate/add 1:1"]
    assert out[:, 0].tolist() == [5, 5] and out[0, 1:].tolist() == [600, 200]  # 1000 µs less 100/500 of it
