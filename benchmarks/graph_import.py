"""Benchmark: how long ``graph_from_onnx_bytes`` takes on a ~300-operator ONNX model.

Builds a MobileNetV2-shaped graph (inverted residual blocks with squeeze-excite, 300+ IR
operators, ~7 M random weights, a 28 MB file) with ``GraphBuilder``, exports it with the ONNX exporter, and
times the import over several repetitions. Prints the numbers and writes them to
``<var>/benchmarks/graph_import.json``. Target: median under 1 s.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/graph_import.py` without an install
    sys.path.insert(0, str(ROOT))

import onnx  # noqa: E402

from devicelab.graph import Graph, GraphBuilder  # noqa: E402
from devicelab.graph.onnx import graph_from_onnx_bytes, graph_to_onnx_bytes  # noqa: E402
from devicelab.measure.stats import summarize  # noqa: E402

REPETITIONS = 7
TARGET_S = 1.0
OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "graph_import.json"

# (expansion, output channels, repeats, stride) per stage, as in MobileNetV2, with more repeats.
STAGES = [(1, 16, 1, 1), (6, 24, 3, 2), (6, 32, 4, 2), (6, 64, 5, 2), (6, 96, 4, 1), (6, 160, 4, 2), (6, 320, 1, 1)]


def big_graph() -> Graph:
    """A MobileNetV2-like network with squeeze-excite: 300+ operators."""
    b = GraphBuilder("mbv2_se_bench", (1, 3, 224, 224))
    x = b.relu6(b.bn(b.conv(b.input, 32, 3, stride=2)))
    for s, (expand, cout, repeats, stride) in enumerate(STAGES):
        for r in range(repeats):
            with b.scope(f"stage{s}/block{r}"):
                cin = b.channels(x)
                y = x
                if expand != 1:
                    y = b.relu6(b.bn(b.conv(y, cin * expand, 1)))
                y = b.relu6(b.bn(b.dwconv(y, 3, stride=stride if r == 0 else 1)))
                gate = b.act(
                    b.conv(
                        b.relu(b.conv(b.global_avg_pool(y), max(8, b.channels(y) // 4), 1, bias=True)),
                        b.channels(y),
                        1,
                        bias=True,
                    ),
                    "hard_sigmoid",
                )
                y = b.mul(y, gate)
                y = b.bn(b.conv(y, cout, 1))
                x = b.add(x, y) if r > 0 and cin == cout else y
    x = b.relu6(b.bn(b.conv(x, 1280, 1)))
    return b.build(b.classifier(x, 1000, softmax=True))


def main() -> int:
    """Run the benchmark and write the JSON report."""
    graph = big_graph()
    data = graph_to_onnx_bytes(graph)
    assert graph_from_onnx_bytes(data) == graph  # the benchmark times a correct import
    samples_s = []
    for _ in range(REPETITIONS):
        start = time.perf_counter()
        graph_from_onnx_bytes(data)
        samples_s.append(time.perf_counter() - start)
    stats = summarize([s * 1000.0 for s in samples_s])
    report = {
        "benchmark": "graph_import",
        "model": graph.name,
        "operators": len(graph.operators),
        "onnx_nodes": len(onnx.load_from_string(data).graph.node),
        "params": graph.params,
        "onnx_bytes": len(data),
        "repetitions": REPETITIONS,
        "median_s": stats.median / 1000.0,
        "max_s": stats.max / 1000.0,
        "mean_s": stats.mean / 1000.0,
        "target_s": TARGET_S,
        "meets_target": stats.median / 1000.0 < TARGET_S,
        "python": platform.python_version(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"graph_from_onnx_bytes on {report['operators']} IR operators ({report['onnx_nodes']} ONNX nodes, "
        f"{len(data) / 1e6:.1f} MB): median {report['median_s']:.3f} s, max {report['max_s']:.3f} s "
        f"over {REPETITIONS} runs (target < {TARGET_S} s) -> {OUT.relative_to(ROOT)}"
    )
    return 0 if report["meets_target"] else 1


if __name__ == "__main__":
    sys.exit(main())
