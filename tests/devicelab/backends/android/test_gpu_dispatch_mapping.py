"""LiteRT 2.x's GPU dispatch rows mapped to the graph, and its GPU end-to-end time measured apart.

* A dispatch the delegate made of several nodes (``convolution_2d 0 -> add 1``) times its first
  operator; the element-wise operators linked into it are fused into its row, and the rows after
  it still time the operators they ran.
* Delegate rows that are no dispatch (the ML Drift accelerator's tensor transfers) take no
  operator: the mapping of the dispatches after them does not shift.
* With op profiling on, the delegate runs a profiled pass of its kernels in every invocation
  before the regular one, so the end-to-end time comes from a second run without op profiling.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.android import backend
from devicelab.backends.android.benchmark_output import OperatorProfile, OperatorRow, OutputMode, ToolVersion
from devicelab.backends.android.op_mapping import nodes_from_export, op_timings
from devicelab.backends.base import DeviceInfo, ProfileSettings
from devicelab.graph import Graph
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.tflite.writer import graph_to_tflite
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import Phone
from tests.adb_double.server import discovered_phone

QUICK = {"backend": "android", "delegate": "gpu", "runs": 5, "warmup_runs": 1, "cooldown_c": 90.0}


def residual_net() -> Graph:
    """conv -> conv -> add(skip) -> conv: the add is linked into the second conv's dispatch."""
    b = GraphBuilder("residual", (1, 8, 16, 16))
    x = b.conv(b.input, 8, 3, name="c0")
    y = b.conv(x, 8, 3, name="c1")
    z = b.add(y, x, name="skip")
    return b.build(b.conv(z, 4, 1, name="c2"))


@pytest.fixture(scope="module")
def phone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DeviceInfo, Phone]]:
    pixel = Phone("PIXEL7-1")
    pixel.time_scale = 0.02
    pixel.cooling_time_scale = 50.0
    with discovered_phone(pixel, benchmark_model_binary(), tmp_path_factory.mktemp("tool")) as info:
        yield info, pixel


def _run(info: DeviceInfo, graph: Graph, **settings: Any) -> Any:
    return backend.profile(info, graph, ProfileSettings.from_dict({**QUICK, **settings}), lambda f, m: None, None)


def test_linked_element_wise_nodes_are_fused_into_their_dispatch(phone: tuple[DeviceInfo, Phone]) -> None:
    info, _ = phone
    graph = residual_net()
    r = _run(info, graph)
    by_name = {graph.operators[t.index].name: t for t in r.ops if t.index is not None}
    assert by_name["c1"].kernel == "convolution_2d 1 -> add 2" and by_name["c1"].stats is not None
    assert by_name["skip"].stats is None and by_name["skip"].fused_into == by_name["c1"].name
    # the dispatch after the linked one still times the operator it ran
    assert by_name["c2"].kernel == "convolution_2d 3" and by_name["c2"].stats is not None
    assert by_name["c0"].kernel == "convolution_2d 0"


def test_the_end_to_end_time_comes_from_a_run_without_the_profiled_pass(phone: tuple[DeviceInfo, Phone]) -> None:
    info, pixel = phone
    before = len(pixel.history)
    r = _run(info, residual_net())
    runs = [c for c in pixel.history[before:] if "benchmark_model" in c and "--graph=" in c]
    profiled, plain = runs
    assert "--enable_op_profiling=true" in profiled and "--enable_op_profiling" not in plain
    source = r.environment["e2e_source"]
    assert "second run without op profiling" in source
    profiled_mean = float(source.rsplit("mean was ", 1)[1].split(" ms", 1)[0])
    # the profiled run paid the kernels twice: it took about one pass of the dispatch rows more
    dispatch_ms = sum(t.stats.mean for t in r.ops if t.stats is not None)
    assert r.e2e.mean < profiled_mean
    assert profiled_mean - r.e2e.mean == pytest.approx(dispatch_ms, rel=0.35)


def test_the_cpu_delegates_end_to_end_time_is_the_profiled_runs(phone: tuple[DeviceInfo, Phone]) -> None:
    info, pixel = phone
    before = len(pixel.history)
    r = _run(info, residual_net(), delegate="xnnpack")
    runs = [c for c in pixel.history[before:] if "benchmark_model" in c and "--graph=" in c]
    assert len(runs) == 1 and "second run" not in r.environment["e2e_source"]


def _row(node_type: str, name: str, ms: float) -> OperatorRow:
    return OperatorRow(node_type, None, ms, ms, 10.0, 50.0, 0.0, 1, name)


def test_delegate_rows_that_are_no_dispatch_take_no_operator(tmp_path: Path) -> None:
    graph = residual_net()
    nodes = nodes_from_export(graph_to_tflite(graph).ops, graph)
    rows = (
        _row("UploadOrBindTensorBuffer", "Delegate/UploadOrBindTensorBuffer:0", 0.05),
        _row("convolution_2d 0", "Delegate/convolution_2d 0:1", 0.4),
        _row("convolution_2d 1 -> add 2", "Delegate/convolution_2d 1 -> add 2:2", 0.5),
        _row("convolution_2d 3", "Delegate/convolution_2d 3:3", 0.2),
        _row("DownloadGpuMemoryToTensorBufferGpuMemory", "Delegate/DownloadGpuMemoryToTensorBufferGpuMemory:4", 0.06),
    )
    profile = OperatorProfile(rows, ToolVersion.LITERT_NO_START, OutputMode.CSV, False)
    timings, notes = op_timings(graph, nodes, profile, 5)
    by_name = {graph.operators[t.index].name: t for t in timings if t.index is not None}
    assert by_name["c0"].stats is not None and by_name["c0"].stats.mean == pytest.approx(0.4)
    assert by_name["c1"].stats is not None and by_name["c1"].stats.mean == pytest.approx(0.5)
    assert by_name["skip"].fused_into == "Delegate/convolution_2d 1 -> add 2:2"
    assert by_name["c2"].stats is not None and by_name["c2"].stats.mean == pytest.approx(0.2)
    transfers = [t for t in timings if t.index is None]
    assert [t.kernel for t in transfers] == ["UploadOrBindTensorBuffer", "DownloadGpuMemoryToTensorBufferGpuMemory"]
    assert notes["op_rows_unmatched"] == 2
