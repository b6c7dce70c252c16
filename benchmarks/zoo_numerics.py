"""Benchmark: the whole zoo checked numerically, the sweep the tests run on representatives only.

For every zoo network (and ``--nas`` samples of the synthetic NAS space):

* OpenCL: our kernels (``GraphRunner`` on this machine's first OpenCL device) against onnxruntime
  on the same weights and inputs, fp32: the relative error (largest difference over the largest
  reference value, per output) must be under 1e-3;
* TFLite: the network written with fp32 and fp16 weights runs in LiteRT's interpreter with the
  IR's output shapes and finite outputs, and the fp32 file computes what onnxruntime computes
  (the same seeded weights) within 1e-4 of the largest output.

The tests (``tests/devicelab/backends/opencl/test_graph_vs_onnxruntime.py``,
``tests/devicelab/graph/test_tflite_zoo_export.py``) run the networks that together hold every
operator configuration of the zoo; this runs all of them. On a fresh machine most of its time is
PoCL compiling kernels (kept in PoCL's cache afterwards). Prints one line per network and writes
``<var>/benchmarks/zoo_numerics.json``; exits 1 when any check fails.

    python benchmarks/zoo_numerics.py [--nas 50] [--only NAME,NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/zoo_numerics.py` without an install
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402

from devicelab.graph import zoo  # noqa: E402
from devicelab.graph.ir import Graph  # noqa: E402
from devicelab.graph.nas import synthetic  # noqa: E402
from devicelab.graph.onnx import graph_to_onnx_bytes  # noqa: E402
from devicelab.measure.inputs import make_inputs  # noqa: E402

OPENCL_TOLERANCE = 1e-3
TFLITE_TOLERANCE = 1e-4
OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "zoo_numerics.json"


def _relative_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got.astype(np.float64) - want).max() / max(float(np.abs(want).max()), 1e-30))


def _onnxruntime(graph: Graph, feeds: dict[str, np.ndarray], seed: int) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(graph_to_onnx_bytes(graph, seed=seed), options, providers=["CPUExecutionProvider"])
    return list(session.run(list(graph.outputs), feeds))


def check_opencl(found: Any, graph: Graph) -> dict[str, Any]:
    """Our kernels against onnxruntime on one network."""
    from devicelab.backends.opencl.runner import GraphRunner

    start = time.perf_counter()
    runner = GraphRunner(found, graph)
    try:
        feeds = make_inputs(runner.graph)
        got = runner.run(feeds)
    finally:
        runner.release()
    errors = [_relative_error(got[name], want) for name, want in zip(graph.outputs, _onnxruntime(graph, feeds, 0))]
    error = max(errors)
    return {"relative_error": error, "ok": error < OPENCL_TOLERANCE, "seconds": time.perf_counter() - start}


def check_tflite(graph: Graph) -> dict[str, Any]:
    """The TFLite export in LiteRT: shapes and finiteness at fp32 and fp16, fp32 values against onnxruntime."""
    from ai_edge_litert.interpreter import Interpreter

    from devicelab.graph.tflite import graph_to_tflite
    from devicelab.graph.tflite.emit import to_nhwc

    def nhwc(a: np.ndarray) -> np.ndarray:
        return np.transpose(a, (0, 2, 3, 1)) if a.ndim == 4 else a

    start = time.perf_counter()
    rng = np.random.default_rng(5)
    feeds = {t: rng.standard_normal(graph.tensors[t].shape).astype(np.float32) for t in graph.inputs}
    shapes = [tuple(to_nhwc(graph.tensors[t].shape)) for t in graph.outputs]
    result: dict[str, Any] = {"ok": True}
    for precision in ("fp32", "fp16"):
        interpreter = Interpreter(model_content=graph_to_tflite(graph, precision=precision, seed=7).data)
        interpreter.allocate_tensors()
        for d in interpreter.get_input_details():
            interpreter.set_tensor(d["index"], nhwc(feeds[d["name"]]))
        interpreter.invoke()
        outputs = [interpreter.get_tensor(d["index"]) for d in interpreter.get_output_details()]
        fine = [o.shape for o in outputs] == shapes and all(np.isfinite(o).all() for o in outputs)
        result[f"{precision}_shapes_and_finite"] = fine
        result["ok"] = result["ok"] and fine
        if precision == "fp32" and fine:
            expected = [nhwc(o) for o in _onnxruntime(graph, feeds, 7)]
            error = max(_relative_error(g, e) for g, e in zip(outputs, expected))
            result["fp32_relative_error"] = error
            result["ok"] = result["ok"] and error < TFLITE_TOLERANCE
    result["seconds"] = time.perf_counter() - start
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nas", type=int, default=50, help="synthetic NAS samples checked on OpenCL (default 50)")
    parser.add_argument("--only", default="", help="comma-separated zoo names (default: the whole zoo)")
    args = parser.parse_args()

    from devicelab.backends.opencl import devices

    found_devices = devices.list_devices()
    if not found_devices:
        print("no OpenCL device: install PoCL (make system-deps)", file=sys.stderr)
        return 1
    found = next(iter(found_devices.values()))
    names = [n for n in args.only.split(",") if n] or sorted(zoo.entries())
    rows: list[dict[str, Any]] = []
    for name in names:
        graph = zoo.build(name)
        row = {"network": name, "opencl": check_opencl(found, graph), "tflite": check_tflite(graph)}
        rows.append(row)
        o, t = row["opencl"], row["tflite"]
        print(
            f"{name:24s} opencl err {o['relative_error']:.1e} {'ok' if o['ok'] else 'FAIL'} ({o['seconds']:.1f} s)  "
            f"tflite fp32 err {t.get('fp32_relative_error', float('nan')):.1e} {'ok' if t['ok'] else 'FAIL'} "
            f"({t['seconds']:.1f} s)",
            flush=True,
        )
    for i, graph in enumerate(synthetic.sample(args.nas, seed=0) if args.nas else []):
        o = check_opencl(found, graph)
        rows.append({"network": f"synthetic[{i}]", "opencl": o})
        print(f"synthetic[{i:2d}]            opencl err {o['relative_error']:.1e} {'ok' if o['ok'] else 'FAIL'}")
    failed = [r["network"] for r in rows if not r["opencl"]["ok"] or not r.get("tflite", {"ok": True})["ok"]]
    summary = {
        "machine": platform.node(),
        "opencl_device": getattr(found, "name", str(found)),
        "networks": len(rows),
        "failed": failed,
        "max_opencl_error": max(r["opencl"]["relative_error"] for r in rows),
        "rows": rows,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(summary, indent=2))
    print(f"{len(rows)} networks, {len(failed)} failed {failed if failed else ''}; wrote {OUT}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
