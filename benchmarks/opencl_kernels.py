"""Benchmark: the OpenCL backend's kernels on this machine's OpenCL device beside onnxruntime.

For convolution (3x3, 1x1, depthwise), fully connected and pooling operators at MobileNet-V2
(and ResNet) shapes it prints the GFLOP/s of the lab's kernel and of onnxruntime on the same
CPU with the same thread count, and their ratio (ours / onnxruntime, > 1 is faster); then the
end-to-end latency of the six Table-1 zoo models on both. Everything runs at 1 and at 2
threads and is written to ``var/benchmarks/opencl_kernels.json``.

How it measures:

* **Same computation.** Each operator case is a one-operator graph built with ``GraphBuilder``
  (a convolution or fully connected layer with its bias). onnxruntime runs that graph's ONNX
  export (``graph_to_onnx_bytes``, the same seed-0 weights); the OpenCL backend runs the graph.
* **MACs convention.** MACs are ``devicelab.graph.ops``' multiply-accumulates of the operator
  (the bias add is not counted); GFLOP/s = 2 * MACs / time. Pooling reports the window's
  compares / adds as "MACs" (one per input element read per output), so its GFLOP/s is only a
  relative number.
* **Operator time.** Ours: the kernel's OpenCL event (``COMMAND_END - COMMAND_START``).
  onnxruntime: its profiler's ``<node>_kernel_time`` of the operator's node, summed over the
  nodes ORT runs for it except the NCHWc layout reorders it inserts at the edges of a one-node
  model (inside a network those are paid once, not per operator), so both sides time the
  operator's compute alone. The host wall time of one run is recorded for both as well.
* **Threads.** PoCL sizes its thread pool from ``POCL_MAX_PTHREAD_COUNT`` when OpenCL first
  initializes in a process, so each (engine, thread count) runs in a fresh subprocess of this
  script; onnxruntime gets ``intra_op_num_threads`` (``inter_op_num_threads`` 1, sequential).
* **Repetitions.** ``--warmup`` discarded runs, then ``--reps`` timed runs; the median counts.
  The ratio of the two sides' fastest runs (``ratio_of_minima``) and the machine's load average
  are recorded too: on a shared machine other work slows either side at random.
* **End to end.** Ours: ``GraphRunner.run_timed`` host wall time, input upload to output
  download; the cold start (plan, program builds, weight upload, kernel arguments, and the first
  run, which includes PoCL's per-work-group-size compile) is reported too. PoCL also caches
  programs on disk, so only the very first process on a machine pays the full builds. onnxruntime: ``session.run`` wall time with its default graph
  optimizations (it fuses batch norm and activations, as ours does).

Run ``python benchmarks/opencl_kernels.py`` (``--help`` for options; ``--cases`` and
``--models`` take comma-separated names, ``--models none`` skips the networks).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/opencl_kernels.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.graph.builder import GraphBuilder  # noqa: E402
from devicelab.graph.ir import Graph  # noqa: E402

OUT = ROOT / "var" / "benchmarks" / "opencl_kernels.json"
THREADS = (1, 2)
TARGET_RATIO = 0.5  # the aim for the convolution kernels
CONV_FAMILIES = ("conv3x3", "conv1x1", "depthwise")  # "conv3x3": the spatial convolutions (7x7 too)


def _conv(shape: tuple[int, ...], cout: int, k: int, stride: int = 1) -> Callable[[], Graph]:
    def build() -> Graph:
        b = GraphBuilder("case", shape)
        return b.build(b.conv(b.input, cout, k, stride=stride, pad="same", bias=True, name="op"))

    return build


def _dw(shape: tuple[int, ...], stride: int = 1) -> Callable[[], Graph]:
    def build() -> Graph:
        b = GraphBuilder("case", shape)
        return b.build(b.dwconv(b.input, 3, stride=stride, pad="same", bias=True, name="op"))

    return build


def _fc(k: int, n: int) -> Callable[[], Graph]:
    def build() -> Graph:
        b = GraphBuilder("case", (1, k))
        return b.build(b.fc(b.input, n, name="op"))

    return build


def _maxpool(shape: tuple[int, ...]) -> Callable[[], Graph]:
    def build() -> Graph:
        b = GraphBuilder("case", shape)
        return b.build(b.max_pool(b.input, 3, stride=2, pad=1, name="op"))

    return build


# name -> (family, what it is, graph). MobileNet-V2 shapes unless the name says ResNet.
CASES: dict[str, tuple[str, str, Callable[[], Graph]]] = {
    "stem_3x3_s2_3_32_224": ("conv3x3", "MobileNet-V2 stem: 3x3 s2, 3->32 @224", _conv((1, 3, 224, 224), 32, 3, 2)),
    "conv3x3_64_64_56": ("conv3x3", "ResNet-18 layer1: 3x3, 64->64 @56", _conv((1, 64, 56, 56), 64, 3)),
    "conv3x3_s2_64_128_56": (
        "conv3x3",
        "ResNet-18 layer2 entry: 3x3 s2, 64->128 @56",
        _conv((1, 64, 56, 56), 128, 3, 2),
    ),
    "conv3x3_512_512_7": ("conv3x3", "ResNet-18 layer4: 3x3, 512->512 @7", _conv((1, 512, 7, 7), 512, 3)),
    "conv7x7_s2_3_64_224": ("conv3x3", "ResNet stem: 7x7 s2, 3->64 @224", _conv((1, 3, 224, 224), 64, 7, 2)),
    "conv1x1_24_144_56": ("conv1x1", "MobileNet-V2 expansion: 1x1, 24->144 @56", _conv((1, 24, 56, 56), 144, 1)),
    "conv1x1_144_24_56": ("conv1x1", "MobileNet-V2 projection: 1x1, 144->24 @56", _conv((1, 144, 56, 56), 24, 1)),
    "conv1x1_96_576_14": ("conv1x1", "MobileNet-V2 expansion: 1x1, 96->576 @14", _conv((1, 96, 14, 14), 576, 1)),
    "conv1x1_320_1280_7": ("conv1x1", "MobileNet-V2 head: 1x1, 320->1280 @7", _conv((1, 320, 7, 7), 1280, 1)),
    "dw3x3_144_56": ("depthwise", "MobileNet-V2 depthwise: 3x3, 144 @56", _dw((1, 144, 56, 56))),
    "dw3x3_s2_144_56": ("depthwise", "MobileNet-V2 depthwise: 3x3 s2, 144 @56", _dw((1, 144, 56, 56), 2)),
    "dw3x3_576_14": ("depthwise", "MobileNet-V2 depthwise: 3x3, 576 @14", _dw((1, 576, 14, 14))),
    "dw3x3_960_7": ("depthwise", "MobileNet-V2 depthwise: 3x3, 960 @7", _dw((1, 960, 7, 7))),
    "fc_1280_1000": ("fc", "MobileNet-V2 classifier: 1280->1000", _fc(1280, 1000)),
    "maxpool3x3_s2_64_112": ("pool", "ResNet stem max pool: 3x3 s2, 64 @112", _maxpool((1, 64, 112, 112))),
}


def table1_models() -> list[str]:
    """The six zoo networks of ParallelFusion's Table 1."""
    from devicelab.graph import zoo

    return sorted(name for name, entry in zoo.entries().items() if entry.table1)


def _op_macs(graph: Graph) -> int:
    op = graph.op("op")
    if op.type in ("max_pool2d", "avg_pool2d"):  # window reads per output
        out = graph.tensors[op.outputs[0]].shape
        return int(out[0] * out[1] * out[2] * out[3] * op.attrs["kernel"][0] * op.attrs["kernel"][1])
    return int(graph.op_cost(op).macs)


def _median(xs: list[float]) -> float:
    from devicelab.measure.stats import summarize

    return summarize(xs).median


# ---------------------------------------------------------------------------------------------
# Workers: one engine at one thread count, in a process of their own


def worker_ours(cases: list[str], models: list[str], warmup: int, reps: int) -> dict[str, Any]:
    """Time the OpenCL backend (POCL_MAX_PTHREAD_COUNT is already in this process's environment)."""
    from devicelab.backends.opencl import devices
    from devicelab.backends.opencl.runner import GraphRunner
    from devicelab.graph import zoo
    from devicelab.measure.inputs import make_inputs

    applied = devices.init_runtime()
    found = next(iter(devices.list_devices().values()))
    out: dict[str, Any] = {"device": found.limits.name, "runtime": applied, "cases": {}, "models": {}}
    for name in cases:
        graph = CASES[name][2]()
        runner = GraphRunner(found, graph)
        try:
            feeds = make_inputs(runner.graph)
            for _ in range(warmup):
                runner.run_timed(feeds)
            timings = [runner.run_timed(feeds) for _ in range(reps)]
            plan = [(k.kernel, list(k.global_size), list(k.local_size or ()), dict(k.attrs)) for k in runner.plan]
        finally:
            runner.release()
        out["cases"][name] = {
            "op_ms": _median([sum(t.kernel_ms) for t in timings]),
            "op_min_ms": min(sum(t.kernel_ms) for t in timings),
            "wall_ms": _median([t.wall_ms for t in timings]),
            "plan": plan,
        }
    for name in models:
        graph = zoo.build(name)
        t0 = time.perf_counter()
        runner = GraphRunner(found, graph)
        try:
            feeds = make_inputs(runner.graph)
            runner.run(feeds)
            cold_ms = (time.perf_counter() - t0) * 1000.0
            for _ in range(max(1, warmup // 2)):
                runner.run(feeds)
            timings = [runner.run_timed(feeds) for _ in range(reps)]
            kernels = len(runner.plan)
        finally:
            runner.release()
        out["models"][name] = {
            "e2e_ms": _median([t.wall_ms for t in timings]),
            "e2e_min_ms": min(t.wall_ms for t in timings),
            "kernel_sum_ms": _median([sum(t.kernel_ms) for t in timings]),
            "cold_start_ms": cold_ms,
            "kernels": kernels,
        }
    return out


def worker_ort(cases: list[str], models: list[str], warmup: int, reps: int, threads: int) -> dict[str, Any]:
    """Time onnxruntime on the same graphs with ``threads`` intra-op threads."""
    import numpy as np
    import onnxruntime as ort

    from devicelab.backends.ort_profile import parse_profile
    from devicelab.graph import zoo
    from devicelab.graph.onnx import graph_to_onnx_bytes
    from devicelab.measure.inputs import make_inputs

    def options(profile_prefix: str | None = None) -> ort.SessionOptions:
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        if profile_prefix is not None:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        return so

    out: dict[str, Any] = {"onnxruntime": ort.__version__, "cases": {}, "models": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in cases:
            graph = CASES[name][2]()
            feeds = make_inputs(graph)
            session = ort.InferenceSession(
                graph_to_onnx_bytes(graph, seed=0), options(str(Path(tmp) / name)), providers=["CPUExecutionProvider"]
            )
            walls = []
            for i in range(warmup + reps):
                t0 = time.perf_counter_ns()
                session.run(None, feeds)
                if i >= warmup:
                    walls.append((time.perf_counter_ns() - t0) / 1e6)
            profiles, _ = parse_profile(Path(session.end_profiling()), skip_runs=warmup)
            kept = {n: p for n, p in profiles.items() if not p.op_type.startswith("Reorder")}
            per_run = np.sum([p.per_run_ms for p in kept.values()], axis=0)
            out["cases"][name] = {
                "op_ms": _median([float(v) for v in per_run]),
                "op_min_ms": float(min(per_run)),
                "wall_ms": _median(walls),
                "kernels": sorted({p.op_type for p in kept.values()}),
                "reorder_ms": _median(
                    [float(v) for v in np.sum([p.per_run_ms for p in profiles.values()], axis=0) - per_run]
                ),
            }
        for name in models:
            graph = zoo.build(name)
            feeds = make_inputs(graph)
            t0 = time.perf_counter()
            session = ort.InferenceSession(
                graph_to_onnx_bytes(graph, seed=0), options(), providers=["CPUExecutionProvider"]
            )
            session.run(None, feeds)
            cold_ms = (time.perf_counter() - t0) * 1000.0
            for _ in range(max(1, warmup // 2)):
                session.run(None, feeds)
            walls = []
            for _ in range(reps):
                t0 = time.perf_counter_ns()
                session.run(None, feeds)
                walls.append((time.perf_counter_ns() - t0) / 1e6)
            out["models"][name] = {"e2e_ms": _median(walls), "e2e_min_ms": min(walls), "cold_start_ms": cold_ms}
    return out


def _spawn(engine: str, threads: int, args: argparse.Namespace, cases: list[str], models: list[str]) -> dict[str, Any]:
    env = dict(os.environ)
    env["POCL_MAX_PTHREAD_COUNT"] = str(threads)  # read when OpenCL first initializes in the child
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        engine,
        "--threads",
        str(threads),
        "--cases",
        ",".join(cases) or "none",
        "--models",
        ",".join(models) or "none",
        "--warmup",
        str(args.warmup),
        "--reps",
        str(args.reps),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{engine} worker ({threads} threads) failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# Report


def _gflops(macs: int, ms: float) -> float:
    return 2.0 * macs / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")


def build_report(args: argparse.Namespace, cases: list[str], models: list[str]) -> dict[str, Any]:
    """Run every worker and assemble the JSON report."""
    raw: dict[int, dict[str, dict[str, Any]]] = {}
    load_before = os.getloadavg()
    for t in args.threads:
        raw[t] = {"ours": _spawn("ours", t, args, cases, models), "ort": _spawn("ort", t, args, cases, models)}
    report: dict[str, Any] = {
        "benchmark": "opencl_kernels",
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "device": raw[args.threads[0]]["ours"]["device"],
        "onnxruntime": raw[args.threads[0]]["ort"]["onnxruntime"],
        "threads": list(args.threads),
        "warmup": args.warmup,
        "repetitions": args.reps,
        "statistic": "median (ratio_of_minima: the same from each side's fastest run, less sensitive to other load)",
        "macs_convention": "MACs of devicelab.graph.ops (the bias add not counted); GFLOP/s = 2 * MACs / time",
        "op_time": {
            "ours": "OpenCL event COMMAND_END - COMMAND_START of the operator's kernel",
            "onnxruntime": "profiler <node>_kernel_time of the operator's nodes, NCHWc reorders excluded",
        },
        "ratio": "onnxruntime time / ours (GFLOP/s ours / GFLOP/s onnxruntime); > 1 means ours is faster",
        "target_ratio_conv": TARGET_RATIO,
        "cpus": os.cpu_count(),
        # other work on the machine skews both engines: the 1-minute load before and after
        "load_average_1min": [load_before[0], os.getloadavg()[0]],
        "cases": {},
        "models": {},
    }
    for name in cases:
        family, what, build = CASES[name]
        macs = _op_macs(build())
        row: dict[str, Any] = {"family": family, "what": what, "macs": macs}
        for t in args.threads:
            ours, theirs = raw[t]["ours"]["cases"][name], raw[t]["ort"]["cases"][name]
            row[f"threads_{t}"] = {
                "ours_ms": ours["op_ms"],
                "ort_ms": theirs["op_ms"],
                "ours_gflops": _gflops(macs, ours["op_ms"]),
                "ort_gflops": _gflops(macs, theirs["op_ms"]),
                "ratio": theirs["op_ms"] / ours["op_ms"],
                "ratio_of_minima": theirs["op_min_ms"] / ours["op_min_ms"],
                "ours_wall_ms": ours["wall_ms"],
                "ort_wall_ms": theirs["wall_ms"],
                "ort_reorder_ms": theirs["reorder_ms"],
                "ort_kernels": theirs["kernels"],
                "ours_plan": ours["plan"],
            }
        report["cases"][name] = row
    for name in models:
        row = {}
        for t in args.threads:
            ours, theirs = raw[t]["ours"]["models"][name], raw[t]["ort"]["models"][name]
            row[f"threads_{t}"] = {
                "ours_ms": ours["e2e_ms"],
                "ort_ms": theirs["e2e_ms"],
                "ratio": theirs["e2e_ms"] / ours["e2e_ms"],
                "ratio_of_minima": theirs["e2e_min_ms"] / ours["e2e_min_ms"],
                "ours_kernel_sum_ms": ours["kernel_sum_ms"],
                "ours_cold_start_ms": ours["cold_start_ms"],
                "ort_cold_start_ms": theirs["cold_start_ms"],
                "ours_kernels": ours["kernels"],
            }
        report["models"][name] = row
    conv = [
        r[f"threads_{t}"]["ratio"]
        for r in report["cases"].values()
        if r["family"] in CONV_FAMILIES
        for t in args.threads
    ]
    report["conv_ratio_min"] = min(conv) if conv else None
    return report


def print_report(report: dict[str, Any]) -> None:
    """The tables, one row per case / model, both thread counts side by side."""
    threads = report["threads"]
    print(
        f"{report['device']} vs onnxruntime {report['onnxruntime']}; median of {report['repetitions']} runs; "
        f"load average {report['load_average_1min'][0]:.1f} -> {report['load_average_1min'][1]:.1f} "
        f"on {report['cpus']} CPUs"
    )
    head = f"{'case':<24}{'MMACs':>8}" + "".join(f" | {t}t: {'ours':>6} {'ort':>6} {'ratio':>5}" for t in threads)
    print(head + "   (GFLOP/s)")
    for name, r in report["cases"].items():
        cells = "".join(
            f" | {'':>3} {r[f'threads_{t}']['ours_gflops']:6.1f} {r[f'threads_{t}']['ort_gflops']:6.1f} "
            f"{r[f'threads_{t}']['ratio']:5.2f}"
            for t in threads
        )
        print(f"{name:<24}{r['macs'] / 1e6:8.1f}{cells}")
    if report["models"]:
        print(
            f"{'model (end to end, ms)':<32}"
            + "".join(f" | {t}t: {'ours':>7} {'ort':>7} {'ratio':>5}" for t in threads)
        )
        for name, r in report["models"].items():
            cells = "".join(
                f" | {'':>3} {r[f'threads_{t}']['ours_ms']:7.1f} {r[f'threads_{t}']['ort_ms']:7.1f} "
                f"{r[f'threads_{t}']['ratio']:5.2f}"
                for t in threads
            )
            print(f"{name:<32}{cells}")
    if report["conv_ratio_min"] is not None:
        print(f"lowest convolution ratio: {report['conv_ratio_min']:.2f} (aim >= {TARGET_RATIO})")


def _names(text: str, known: list[str], what: str) -> list[str]:
    if text == "all":
        return list(known)
    if text == "none":
        return []
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {unknown}; known: {known}")
    return names


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark (or, with ``--worker``, one engine at one thread count)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default=",".join(map(str, THREADS)), help="comma-separated thread counts")
    p.add_argument("--cases", default="all", help="comma-separated case names, all or none")
    p.add_argument("--models", default="all", help="comma-separated zoo names, all (Table 1) or none")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--reps", type=int, default=40, help="timed runs per case and model (the median counts)")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--worker", choices=("ours", "ort"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.threads = [int(t) for t in str(args.threads).split(",")]
    cases = _names(args.cases, list(CASES), "cases")
    models = _names(args.models, table1_models(), "models")
    if args.worker:
        if args.worker == "ours":
            result = worker_ours(cases, models, args.warmup, args.reps)
        else:
            result = worker_ort(cases, models, args.warmup, args.reps, args.threads[0])
        print(json.dumps(result))
        return 0
    report = build_report(args, cases, models)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
