"""Test data built from real devicelab objects: small graphs and the results a backend reports."""

from __future__ import annotations

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings
from devicelab.graph import Graph, GraphBuilder, graph_to_json
from devicelab.measure.stats import summarize


def tiny_graph(name: str = "tiny", channels: int = 8) -> Graph:
    """A five-operator CNN: conv, bn, relu, global pool, fc."""
    b = GraphBuilder(name, (1, 3, 16, 16))
    x = b.relu(b.bn(b.conv(b.input, channels, 3, stride=2, bias=False)))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def graph_bytes(graph: Graph | None = None) -> bytes:
    """A graph as graph-JSON bytes."""
    return graph_to_json(graph or tiny_graph()).encode()


def profile_result(
    graph: Graph, device: DeviceInfo | None = None, fused: bool = True, runtime_kernel: bool = True
) -> ProfileResult:
    """A ProfileResult for ``graph`` as a backend reports it: one timing per operator (the ReLU
    fused into the conv when ``fused``) plus a runtime-inserted kernel."""
    ops = []
    for index, op in enumerate(graph.operators):
        is_fused = fused and op.type == "relu"
        ops.append(
            OpTiming(
                index=index,
                name=op.name,
                type=op.type,
                kernel="FusedConv" if op.type == "conv2d" and fused else op.type,
                input_shapes=[list(s) for s in graph.input_shapes(op)],
                output_shapes=[list(s) for s in graph.output_shapes(op)],
                attrs=dict(op.attrs),
                stats=None if is_fused else summarize([0.1 + 0.01 * index, 0.11 + 0.01 * index, 0.12 + 0.01 * index]),
                fused_into=graph.operators[0].name if is_fused else None,
            )
        )
    if runtime_kernel:
        ops.append(
            OpTiming(
                index=None,
                name="reorder_0",
                type="runtime",
                kernel="ReorderInput",
                input_shapes=[[1, 3, 16, 16]],
                output_shapes=[[1, 3, 16, 16]],
                attrs={},
                stats=summarize([0.01, 0.02, 0.015]),
            )
        )
    samples = [1.0, 1.1, 1.05, 0.98, 1.02]
    return ProfileResult(
        device=device or DeviceInfo("cpu", "cpu:test", "test cpu", {}),
        settings=ProfileSettings(),
        e2e=summarize(samples),
        samples_ms=samples,
        cold=ColdStart(load_ms=12.5, first_run_ms=3.25),
        ops=ops,
        environment={"runtime": "test"},
    )
