"""Issue 32, item 1: the web side's peak memory and refusal times over every hostile ONNX upload.

Runs, in this one process, what a web worker runs on an upload under the inline byte limit: the
node count that decides whether the request parses it (``count_onnx_nodes``, bound
``PARSE_INLINE_MAX_NODES``), then ``load_graph`` under the default ``ImportLimits`` (the server's
defaults), over the generated family of ``tests/devicelab/graph/hostile_models.py`` (each
operator that can grow a tensor to 2**28 elements, followed by each cheap one), the long run-time
Reshape target, external data at five locations, and a 10**5-node chain (3.2 MB) that must go to
the trainer. It prints and writes (<var>/benchmarks/hostile_uploads.json) the process's peak RSS
over all of them (VmHWM; goal under 1 GB) and each refusal's time::

    .venv/bin/python benchmarks/hostile_uploads.py [--rounds 5]

Before issue 32 the first family member, ``Range -> Cast -> Add``, took this process to 10.7 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from devicelab.graph import GraphError, LimitExceeded, load_graph  # noqa: E402
from devicelab.graph.onnx import count_onnx_nodes  # noqa: E402
from tests.devicelab.graph import hostile_models as hostile  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "hostile_uploads.json"
GOAL_KB = 1024 * 1024
PARSE_INLINE_MAX_NODES = 10_000  # server.networks.services.PARSE_INLINE_MAX_NODES (no Django here)


def peak_rss_kb() -> int:
    """This process's peak resident set since it started (VmHWM)."""
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmHWM:")[1].split()[0])


def external_data_model(location: str) -> bytes:
    """An Add whose constant operand's data is said to be at ``location``."""
    t = numpy_helper.from_array(np.zeros(4, np.float32), "ext")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    entry = t.external_data.add()
    entry.key, entry.value = "location", location
    return hostile.onnx_model([helper.make_node("Add", ["x", "ext"], ["y"], name="add")], [t])


def relu_chain(nodes: int) -> bytes:
    """A chain of ``nodes`` ReLUs: 10**5 of them are 3.2 MB, under the 4 MB inline byte limit."""
    chain = [
        helper.make_node("Relu", ["x" if i == 0 else f"t{i - 1}"], [f"t{i}" if i < nodes - 1 else "y"], name=f"r{i}")
        for i in range(nodes)
    ]
    return hostile.onnx_model(chain)


def cases() -> dict[str, bytes]:
    """Every hostile upload, by name."""
    files = {case: hostile.family_member(g, f) for case, g, f in hostile.FAMILY}
    files["Reshape to a run-time target of 2**26 values"] = hostile.reshape_to_a_long_runtime_target()
    for location in ("../../../etc/passwd", "/etc/passwd", "/proc/self/environ", "/no/such/file", "w.bin"):
        files[f"external data at {location}"] = external_data_model(location)
    files["10**5 nodes under the inline byte limit"] = relu_chain(100_000)
    return files


def web_side(data: bytes) -> dict[str, Any]:
    """What a web worker does with an inline-sized upload: count, then parse or hand over."""
    nodes = count_onnx_nodes(data, PARSE_INLINE_MAX_NODES)
    if nodes is not None and nodes > PARSE_INLINE_MAX_NODES:
        return {"outcome": "to the trainer", "message": f"more than {PARSE_INLINE_MAX_NODES} nodes"}
    try:
        load_graph(data, filename="hostile.onnx")
    except LimitExceeded as exc:
        return {"outcome": "refused", "limit": exc.limit, "message": str(exc)}
    except GraphError as exc:
        return {"outcome": "refused", "limit": None, "message": str(exc)}
    return {"outcome": "accepted", "message": ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="times each upload is handled (median reported)")
    args = parser.parse_args(argv)
    files = cases()
    start_kb = peak_rss_kb()
    web_side(hostile.family_member("Pad", "Relu"))  # warm: the first import pays for onnx's modules
    results: dict[str, Any] = {}
    for case, data in files.items():
        times = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            out = web_side(data)
            times.append(time.perf_counter() - started)
        results[case] = {**out, "bytes": len(data), "median_ms": 1000 * statistics.median(times)}
        results[case]["max_ms"] = 1000 * max(times)
    peak_kb = peak_rss_kb()
    accepted = [c for c, r in results.items() if r["outcome"] == "accepted"]
    report = {
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()},
        "rounds": args.rounds,
        "uploads": len(files),
        "peak_rss_mb": peak_kb / 1024,
        "rss_before_mb": start_kb / 1024,
        "goal_mb": GOAL_KB / 1024,
        "slowest_refusal_ms": max(r["max_ms"] for r in results.values()),
        "median_refusal_ms": statistics.median(r["median_ms"] for r in results.values()),
        "accepted": accepted,
        "cases": results,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2))
    width = max(len(c) for c in results)
    for case, r in results.items():
        print(f"{case:{width}}  {r['bytes']:>8} B  {r['median_ms']:8.2f} ms  {r['outcome']:14}  {r.get('limit') or ''}")
    print(
        f"\n{len(files)} uploads, peak RSS {peak_kb / 1024:.0f} MB (goal < {GOAL_KB // 1024} MB), "
        f"slowest {report['slowest_refusal_ms']:.1f} ms, median {report['median_refusal_ms']:.2f} ms; "
        f"accepted: {accepted or 'none'}; wrote {OUT.relative_to(ROOT)}"
    )
    return 0 if peak_kb < GOAL_KB and not accepted else 1


if __name__ == "__main__":
    sys.exit(main())
