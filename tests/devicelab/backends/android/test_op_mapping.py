"""Rows of benchmark_model's operator table land on the graph operators they ran."""

from __future__ import annotations

from devicelab.backends.android.benchmark_output import OperatorProfile, OperatorRow, OutputMode, ToolVersion
from devicelab.backends.android.op_mapping import ModelNode, op_timings
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph


def small_net() -> tuple[Graph, list[ModelNode]]:
    b = GraphBuilder("net", (1, 3, 16, 16))
    x = b.conv("input", 8, 3, name="conv1")
    x = b.relu(x, name="relu1")
    x = b.dwconv(x, 3, name="dw1")
    x = b.relu6(x, name="relu6_1")
    x = b.conv(x, 16, 1, name="pw1")
    x = b.global_avg_pool(x, name="gap")
    x = b.flatten(x, name="flat")
    x = b.fc(x, 10, name="fc")
    g = b.build(x)
    pos = {o.name: i for i, o in enumerate(g.operators)}
    nodes = [
        ModelNode(0, "CONV_2D", "conv1", (pos["conv1"], pos["relu1"])),
        ModelNode(1, "DEPTHWISE_CONV_2D", "dw1", (pos["dw1"], pos["relu6_1"])),
        ModelNode(2, "CONV_2D", "pw1", (pos["pw1"],)),
        ModelNode(3, "MEAN", "gap", (pos["gap"],)),
        ModelNode(4, "RESHAPE", "flat", (pos["flat"],)),
        ModelNode(5, "FULLY_CONNECTED", "fc", (pos["fc"],)),
    ]
    return g, nodes


def row(node_type: str, name: str, avg: float, times: int = 1) -> OperatorRow:
    return OperatorRow(node_type, None, avg, avg, 10.0, 10.0, 0.0, times, name)


def profile(*rows: OperatorRow) -> OperatorProfile:
    return OperatorProfile(tuple(rows), ToolVersion.LITERT_NO_START, OutputMode.CSV, True)


def by_name(timings: list, name: str) -> object:
    return next(t for t in timings if t.index is not None and t.name == name)


def test_builtin_rows_map_by_node_index_and_fused_activations_name_their_kernel() -> None:
    g, nodes = small_net()
    p = profile(
        row("CONV_2D", "[conv1]:0", 0.5),
        row("DEPTHWISE_CONV_2D", "[dw1]:1", 0.2),
        row("CONV_2D", "[pw1]:2", 0.3),
        row("MEAN", "[gap]:3", 0.05),
        row("RESHAPE", "[flat]:4", 0.01),
        row("FULLY_CONNECTED", "[fc]:5", 0.02),
    )
    rows, notes = op_timings(g, nodes, p, runs=30)
    assert [r.index for r in rows] == list(range(len(g.operators)))
    conv = rows[0]
    assert (conv.name, conv.kernel, conv.stats.mean, conv.stats.n) == ("conv1", "CONV_2D", 0.5, 30)
    relu = rows[1]
    assert relu.stats is None and relu.fused_into == "conv1"
    assert rows[3].fused_into == "dw1"
    assert notes["op_rows_builtin"] == 6 and notes["op_rows_unmatched"] == 0
    # the tool reports an average only: no median is invented
    assert conv.stats.median != conv.stats.median  # NaN


def test_xnnpack_rows_cover_delegated_nodes_by_kind_and_count() -> None:
    g, nodes = small_net()
    p = profile(
        row("Convolution (NHWC, F32) IGEMM", "Delegate/Convolution (NHWC, F32) IGEMM:0", 0.4, times=2),
        row("Convolution (NHWC, F32) DWConv", "Delegate/Convolution (NHWC, F32) DWConv:1", 0.1),
        row("Global Average Pooling (NWC, F32)", "Delegate/Global Average Pooling (NWC, F32):3", 0.02),
        row("Copy (NC, X32)", "Delegate/Copy (NC, X32):4", 0.001),
        row("Fully Connected (NC, F32) GEMM", "Delegate/Fully Connected (NC, F32) GEMM:5", 0.03),
    )
    rows, notes = op_timings(g, nodes, p, runs=10)
    names = {g.operators[r.index].name: r for r in rows}
    assert names["conv1"].name == "Delegate/Convolution (NHWC, F32) IGEMM:0"
    assert names["pw1"].name == "Delegate/Convolution (NHWC, F32) IGEMM:0"  # the GEMM row ran both
    assert names["pw1"].stats.mean == 0.4 and names["conv1"].stats.mean == 0.4
    assert names["dw1"].kernel == "Convolution (NHWC, F32) DWConv"
    assert names["relu1"].fused_into == "Delegate/Convolution (NHWC, F32) IGEMM:0"
    assert names["fc"].stats.mean == 0.03
    assert notes["op_rows_shared_by_several_operators"] == 1


def test_a_gpu_partition_covers_the_delegated_run_and_cpu_fallback_stays_builtin() -> None:
    g, nodes = small_net()
    p = profile(
        row("TfLiteGpuDelegateV2", "[gap]:6", 0.6),
        row("RESHAPE", "[flat]:4", 0.01),
        row("FULLY_CONNECTED", "[fc]:5", 0.02),
    )
    rows, notes = op_timings(g, nodes, p, runs=5)
    assert rows[0].name == "[gap]:6" and rows[0].stats.mean == 0.6
    assert all(r.fused_into == "[gap]:6" for r in rows[1:6])
    assert by_name(rows, "fc").kernel == "FULLY_CONNECTED"
    assert notes["op_rows_delegate_partition"] == 1


def test_a_row_no_node_explains_is_kept_as_runtime() -> None:
    g, nodes = small_net()
    p = profile(row("CONV_2D", "[conv1]:0", 0.5), row("TfLiteNnapiDelegate", "[x]:9", 0.1), row("COPY", "[y]:12", 0.2))
    rows, _ = op_timings(g, nodes, p, runs=5)
    runtime = [r for r in rows if r.index is None]
    assert [r.type for r in runtime] == ["runtime"]
    assert runtime[0].name == "[y]:12"


def test_helper_kernels_add_to_their_operator_and_unowned_rows_are_kept() -> None:
    g, nodes = small_net()
    conv = nodes[0]
    helper = ModelNode(0, "PAD", "conv1::pad", (conv.ir_ops[0],))
    shifted = [ModelNode(n.index + 2, n.builtin, n.name, n.ir_ops) for n in nodes]
    dequant = ModelNode(1, "DEQUANTIZE", "w::dequantize", ())
    p = profile(
        row("DEQUANTIZE", "[w]:1", 0.03),
        row("PAD", "[conv1::pad]:0", 0.1),
        row("CONV_2D", "[conv1]:2", 0.5),
        row("DEPTHWISE_CONV_2D", "[dw1]:3", 0.2),
    )
    rows, _ = op_timings(g, [helper, dequant, *shifted], p, runs=3)
    conv_row = rows[0]
    assert conv_row.kernel == "PAD+CONV_2D" and abs(conv_row.stats.mean - 0.6) < 1e-12
    assert rows[1].fused_into == "conv1"
    runtime = [r for r in rows if r.index is None]
    assert [(r.kernel, r.stats.mean) for r in runtime] == [("DEQUANTIZE", 0.03)]
