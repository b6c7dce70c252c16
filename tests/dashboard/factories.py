"""Test data for the dashboard: graphs of any size and results shaped like the CPU backend's.

``benchmarks/dashboard_pages.py`` builds its 500-operator model and its results from these too.
"""

from __future__ import annotations

import random

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings
from devicelab.graph import Graph, GraphBuilder
from devicelab.measure.stats import summarize

# What onnxruntime fuses into the kernel before it (the CPU backend reports them with fused_into).
_FUSED_TYPES = ("batch_norm", "relu", "relu6")


def graph_with_ops(num_ops: int, name: str = "wide", channels: int = 16, size: int = 28) -> Graph:
    """A mobile-style network (inverted residual blocks) with exactly ``num_ops`` operators."""
    if num_ops < 6:
        raise ValueError("a graph_with_ops needs at least 6 operators (stem and head)")
    b = GraphBuilder(name, (1, 3, size, size))
    x = b.relu6(b.bn(b.conv(b.input, channels, 3)))
    left = num_ops - 6  # the stem (3) and the head (3)
    while left >= 9:
        y = b.relu6(b.bn(b.conv(x, channels * 2, 1)))
        y = b.relu6(b.bn(b.dwconv(y, 3)))
        x = b.add(x, b.bn(b.conv(y, channels, 1)))
        left -= 9
    for _ in range(left):
        x = b.relu(x)
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def measured_result(
    graph: Graph,
    samples: int = 100,
    scale: float = 1.0,
    seed: int = 0,
    device: DeviceInfo | None = None,
) -> ProfileResult:
    """A ProfileResult for ``graph`` like the CPU backend's: batch norms and activations fused
    into the preceding kernel, one runtime-inserted kernel, ``samples`` end-to-end runs (ms).
    ``scale`` multiplies every time (a slower device or setting)."""
    rng = random.Random(seed)
    ops = []
    last_kernel = graph.operators[0].name
    total = 0.0
    for index, op in enumerate(graph.operators):
        fused = op.type in _FUSED_TYPES and index > 0
        if not fused:
            last_kernel = op.name
        base = (0.4 if op.type in ("conv2d", "depthwise_conv2d") else 0.05) * scale * (1 + (index % 7) / 10)
        runs = [base * rng.uniform(0.95, 1.05) for _ in range(5)]
        total += 0.0 if fused else base
        ops.append(
            OpTiming(
                index=index,
                name=op.name,
                type=op.type,
                kernel=f"{op.type}_kernel" if not fused else "",
                input_shapes=[list(s) for s in graph.input_shapes(op)],
                output_shapes=[list(s) for s in graph.output_shapes(op)],
                attrs=dict(op.attrs),
                stats=None if fused else summarize(runs),
                fused_into=f"{last_kernel}_fused" if fused else None,
            )
        )
    ops.append(
        OpTiming(
            index=None,
            name="ReorderOutput",
            type="runtime",
            kernel="ReorderOutput",
            input_shapes=[],
            output_shapes=[],
            attrs={},
            stats=summarize([0.01 * scale, 0.012 * scale, 0.011 * scale]),
        )
    )
    e2e = [total * rng.gauss(1.05, 0.03) for _ in range(samples)]
    return ProfileResult(
        device=device or DeviceInfo("cpu", "cpu:test", "test cpu", {}),
        settings=ProfileSettings(runs=samples),
        e2e=summarize(e2e),
        samples_ms=e2e,
        cold=ColdStart(load_ms=40.0 * scale, first_run_ms=total * 2.5),
        ops=ops,
        environment={"runtime": "test"},
    )
