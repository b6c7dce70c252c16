"""Benchmark: the OpenCL backend's kernels on this machine's OpenCL device beside onnxruntime.

For convolution (3x3, 1x1, depthwise), fully connected and pooling operators at MobileNet-V2
(and ResNet) shapes it measures the time of the lab's kernel and of onnxruntime's on the same
CPU with the same thread count, and their ratio (onnxruntime time / ours: > 1 means ours is
faster); then the end-to-end latency of the six Table-1 zoo models on both. It prints each
ratio with its interval, the geometric means per kernel and end to end beside the goals of
issue 33 (>= 0.9 per kernel, >= 0.8 end to end), and the machine's load average; the JSON
report goes to ``$LATENCYLAB_VAR_DIR/benchmarks/opencl_kernels.json`` (else
``var/benchmarks/`` beside the code).

How it measures:

* **Same computation.** Each operator case is a one-operator graph built with ``GraphBuilder``
  (a convolution or fully connected layer with its bias). onnxruntime runs that graph's ONNX
  export (``graph_to_onnx_bytes``, the same seed-0 weights); the OpenCL backend runs the graph.
* **Interleaved, in the same time window.** PoCL sizes its thread pool from
  ``POCL_MAX_PTHREAD_COUNT`` when OpenCL first initializes in a process, so each engine lives in
  a long-lived worker subprocess of its own per thread count, and the two take turns: for each
  case or model, both warm up, then ``--rounds`` rounds, each a block of ``--runs`` runs of one
  engine then a block of the other (the order alternating, ABBA, so a steady drift of the
  machine's speed hits both alike). A round's ratio is the median of onnxruntime's block over
  the median of ours; a case's ratio is the median of its rounds' ratios, with the 95 %
  bootstrap interval of that median and the lowest and highest round.
* **Geometric means** per kernel (over the cases) and end to end (over the models), with a 95 %
  bootstrap interval: each draw resamples every case's rounds (independently: cases ran at
  different times) and takes the geometric mean of the resampled medians.
* **Load.** The machine is shared: the 1-minute load average is read before every round and
  reported beside every number (its median and highest over the case's rounds).
* **MACs convention.** MACs are ``devicelab.graph.ops``' multiply-accumulates of the operator
  (the bias add is not counted); GFLOP/s = 2 * MACs / time. Pooling reports the window's
  compares as "MACs" (one per input element read per output), so its GFLOP/s is only relative.
* **Operator time.** Ours: the kernel's OpenCL event (``COMMAND_END - COMMAND_START``).
  onnxruntime: its profiler's ``<node>_kernel_time`` of the operator's node, summed over the
  nodes ORT runs for it except the NCHWc layout reorders it inserts at the edges of a one-node
  model (inside a network those are paid once, not per operator), so both sides time the
  operator's compute alone.
* **End to end.** Ours: ``GraphRunner.run_timed`` host wall time, input upload to output
  download; onnxruntime: ``session.run`` wall time (profiler off) with its default graph
  optimizations (it fuses batch norm and activations, as ours does). The cold start of each
  (ours: plan, program builds, weight upload and the first run) is recorded too.

Run ``python benchmarks/opencl_kernels.py`` (``--help`` for options; ``--cases`` and
``--models`` take comma-separated names, ``--models none`` skips the networks).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/opencl_kernels.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.graph.builder import GraphBuilder  # noqa: E402
from devicelab.graph.ir import Graph  # noqa: E402

THREADS = (1,)
GOAL_KERNELS = 0.9  # issue 33: geometric mean of the per-kernel ratios
GOAL_END_TO_END = 0.8  # issue 33: geometric mean over the models
BOOTSTRAP_DRAWS = 2000


def default_out() -> Path:
    """``$LATENCYLAB_VAR_DIR/benchmarks/opencl_kernels.json``, else under ``var/`` beside the code."""
    var = os.environ.get("LATENCYLAB_VAR_DIR", "").strip()
    return (Path(var) if var else ROOT / "var") / "benchmarks" / "opencl_kernels.json"


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


# ---------------------------------------------------------------------------------------------
# Workers: one engine at one thread count, in a long-lived process of its own. They read one
# JSON command a line on stdin and answer one JSON line on a private copy of stdout (fd 1 itself
# goes to stderr, so nothing a runtime prints there can garble the protocol).


class OursEngine:
    """The OpenCL backend (POCL_MAX_PTHREAD_COUNT is already in this process's environment)."""

    def __init__(self) -> None:
        from devicelab.backends.opencl import devices

        self.runtime = devices.init_runtime()
        self.found = next(iter(devices.list_devices().values()))
        self.runner: Any = None
        self.feeds: Any = None

    def info(self) -> dict[str, Any]:
        return {"device": self.found.limits.name, "runtime": self.runtime}

    def prepare(self, kind: str, name: str, warmup: int) -> dict[str, Any]:
        from devicelab.backends.opencl.runner import GraphRunner
        from devicelab.graph import zoo
        from devicelab.measure.inputs import make_inputs

        graph = CASES[name][2]() if kind == "case" else zoo.build(name)
        t0 = time.perf_counter()
        self.runner = GraphRunner(self.found, graph)
        self.feeds = make_inputs(self.runner.graph)
        self.runner.run(self.feeds)
        cold_ms = (time.perf_counter() - t0) * 1000.0
        for _ in range(warmup):
            self.runner.run_timed(self.feeds)
        plan = [
            (k.kernel, list(k.global_size), list(k.local_size or ()), k.attrs.get("variant")) for k in self.runner.plan
        ]
        return {"cold_start_ms": cold_ms, "kernels": len(plan), "plan": plan if kind == "case" else None}

    def run(self, n: int) -> dict[str, Any]:
        timings = [self.runner.run_timed(self.feeds) for _ in range(n)]
        return {"wall_ms": [t.wall_ms for t in timings], "op_ms": [sum(t.kernel_ms) for t in timings]}

    def finish(self) -> dict[str, Any]:
        self.runner.release()
        self.runner = None
        return {}


class OrtEngine:
    """onnxruntime with ``threads`` intra-op threads, sequential."""

    def __init__(self, threads: int) -> None:
        import onnxruntime as ort

        self.ort = ort
        self.threads = threads
        self.tmp = tempfile.TemporaryDirectory()
        self.session: Any = None
        self.feeds: Any = None
        self.kind = ""
        self.timed_runs: list[int] = []  # run indices of the timed runs (the profile holds all)
        self.count = 0

    def info(self) -> dict[str, Any]:
        return {"onnxruntime": self.ort.__version__}

    def prepare(self, kind: str, name: str, warmup: int) -> dict[str, Any]:
        from devicelab.graph import zoo
        from devicelab.graph.onnx import graph_to_onnx_bytes
        from devicelab.measure.inputs import make_inputs

        graph = CASES[name][2]() if kind == "case" else zoo.build(name)
        so = self.ort.SessionOptions()
        so.intra_op_num_threads = self.threads
        so.inter_op_num_threads = 1
        so.execution_mode = self.ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        if kind == "case":  # the operator's time comes from the profiler; a network's is wall time
            so.enable_profiling = True
            so.profile_file_prefix = str(Path(self.tmp.name) / name)
        self.kind, self.timed_runs, self.count = kind, [], 0
        self.feeds = make_inputs(graph)
        t0 = time.perf_counter()
        self.session = self.ort.InferenceSession(
            graph_to_onnx_bytes(graph, seed=0), so, providers=["CPUExecutionProvider"]
        )
        self._run()
        cold_ms = (time.perf_counter() - t0) * 1000.0
        for _ in range(warmup):
            self._run()
        return {"cold_start_ms": cold_ms}

    def _run(self) -> float:
        t0 = time.perf_counter_ns()
        self.session.run(None, self.feeds)
        self.count += 1
        return (time.perf_counter_ns() - t0) / 1e6

    def run(self, n: int) -> dict[str, Any]:
        walls = []
        for _ in range(n):
            self.timed_runs.append(self.count)
            walls.append(self._run())
        return {"wall_ms": walls}

    def finish(self) -> dict[str, Any]:
        import numpy as np

        from devicelab.backends.ort_profile import parse_profile

        out: dict[str, Any] = {}
        if self.kind == "case":
            profiles, _ = parse_profile(Path(self.session.end_profiling()), keep=self.timed_runs)
            kept = {n: p for n, p in profiles.items() if not p.op_type.startswith("Reorder")}
            per_run = np.sum([p.per_run_ms for p in kept.values()], axis=0)
            reorders = np.sum([p.per_run_ms for p in profiles.values()], axis=0) - per_run
            out = {
                "op_ms": [float(v) for v in per_run],
                "kernels": sorted({p.op_type for p in kept.values()}),
                "reorder_ms": float(np.median(reorders)),
            }
        self.session = None
        return out


def serve(engine: str, threads: int) -> int:
    """The worker loop: answer commands until stdin closes."""
    reply: IO[str] = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    impl: OursEngine | OrtEngine = OursEngine() if engine == "ours" else OrtEngine(threads)
    reply.write(json.dumps(impl.info()) + "\n")
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "prepare":
            answer = impl.prepare(cmd["kind"], cmd["name"], cmd["warmup"])
        elif cmd["op"] == "run":
            answer = impl.run(cmd["n"])
        else:
            answer = impl.finish()
        reply.write(json.dumps(answer) + "\n")
    return 0


class Worker:
    """The controller's handle on one worker subprocess."""

    def __init__(self, engine: str, threads: int) -> None:
        env = dict(os.environ)
        env["POCL_MAX_PTHREAD_COUNT"] = str(threads)  # read when OpenCL first initializes in the child
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", engine, "--threads", str(threads)]
        self.engine = engine
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.info = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.engine} worker exited (code {self.proc.wait()}); its stderr is above")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


# ---------------------------------------------------------------------------------------------
# Statistics of the per-round ratios


def bootstrap_median(values: list[float], rng: random.Random, draws: int = BOOTSTRAP_DRAWS) -> list[float]:
    """Medians of ``draws`` resamples of ``values`` (sorted)."""
    return sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(draws))


def interval(draws: list[float]) -> list[float]:
    """The central 95 % of sorted bootstrap draws."""
    return [draws[int(0.025 * len(draws))], draws[int(0.975 * len(draws)) - 1]]


def geomean(values: list[float]) -> float:
    """The geometric mean of positive numbers."""
    return math.exp(statistics.fmean(math.log(v) for v in values))


def geomean_summary(rounds_by_item: list[list[float]], seed: int) -> dict[str, Any] | None:
    """Geometric mean of the items' median ratios, and its 95 % bootstrap interval (each item's
    rounds resampled independently per draw)."""
    if not rounds_by_item:
        return None
    rng = random.Random(seed)
    point = geomean([statistics.median(r) for r in rounds_by_item])
    draws = sorted(
        geomean([statistics.median(rng.choices(r, k=len(r))) for r in rounds_by_item]) for _ in range(BOOTSTRAP_DRAWS)
    )
    return {"geomean": point, "ci95": interval(draws), "items": len(rounds_by_item)}


def ratio_summary(ours_rounds: list[list[float]], ort_rounds: list[list[float]], seed: int) -> dict[str, Any]:
    """Per-round ratios (median of onnxruntime's block / median of ours), their median, its 95 %
    bootstrap interval, and the lowest and highest round."""
    ratios = [statistics.median(t) / statistics.median(o) for o, t in zip(ours_rounds, ort_rounds, strict=True)]
    return {
        "ratio": statistics.median(ratios),
        "ci95": interval(bootstrap_median(ratios, random.Random(seed))),
        "range": [min(ratios), max(ratios)],
        "round_ratios": ratios,
    }


# ---------------------------------------------------------------------------------------------
# The controller


def measure_item(
    ours: Worker, ort: Worker, kind: str, name: str, args: argparse.Namespace, seed: int
) -> dict[str, Any]:
    """Warm both engines up on one case or model, then run the interleaved rounds."""
    runs = args.runs if kind == "case" else args.model_runs
    rounds = args.rounds if kind == "case" else args.model_rounds
    prep = {"ours": ours.ask(op="prepare", kind=kind, name=name, warmup=args.warmup)}
    prep["ort"] = ort.ask(op="prepare", kind=kind, name=name, warmup=args.warmup)
    blocks: dict[str, list[dict[str, Any]]] = {"ours": [], "ort": []}
    loads = []
    for r in range(rounds):
        loads.append(os.getloadavg()[0])
        order = (ours, ort) if r % 2 == 0 else (ort, ours)  # ABBA: a steady drift hits both alike
        for w in order:
            blocks[w.engine].append(w.ask(op="run", n=runs))
    done = {"ours": ours.ask(op="finish"), "ort": ort.ask(op="finish")}
    key = "op_ms" if kind == "case" else "wall_ms"
    ours_rounds = [b[key] for b in blocks["ours"]]
    if kind == "case":  # onnxruntime's operator times come from its profile, in run order
        flat = done["ort"]["op_ms"]
        ort_rounds = [flat[i * runs : (i + 1) * runs] for i in range(rounds)]
    else:
        ort_rounds = [b["wall_ms"] for b in blocks["ort"]]
    row: dict[str, Any] = {
        "ours_ms": statistics.median(x for r in ours_rounds for x in r),
        "ort_ms": statistics.median(x for r in ort_rounds for x in r),
        **ratio_summary(ours_rounds, ort_rounds, seed),
        "load_1min": {"median": statistics.median(loads), "max": max(loads)},
        "ours_cold_start_ms": prep["ours"]["cold_start_ms"],
        "ort_cold_start_ms": prep["ort"]["cold_start_ms"],
        "ours_kernels": prep["ours"]["kernels"],
    }
    if kind == "case":
        row["ours_wall_ms"] = statistics.median(x for b in blocks["ours"] for x in b["wall_ms"])
        row["ort_wall_ms"] = statistics.median(x for b in blocks["ort"] for x in b["wall_ms"])
        row["ours_plan"] = prep["ours"]["plan"]
        row["ort_kernels"] = done["ort"]["kernels"]
        row["ort_reorder_ms"] = done["ort"]["reorder_ms"]
    else:
        row["ours_kernel_sum_ms"] = statistics.median(x for b in blocks["ours"] for x in b["op_ms"])
    return row


def _gflops(macs: int, ms: float) -> float:
    return 2.0 * macs / (ms * 1e-3) / 1e9 if ms > 0 else float("nan")


def build_report(args: argparse.Namespace, cases: list[str], models: list[str]) -> dict[str, Any]:
    """Run every thread count's worker pair over the cases and models; the JSON report."""
    started = time.time()
    report: dict[str, Any] = {
        "benchmark": "opencl_kernels",
        "date": time.strftime("%Y-%m-%d %H:%M", time.localtime(started)),
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "threads": list(args.threads),
        "warmup": args.warmup,
        "rounds": {"cases": args.rounds, "models": args.model_rounds},
        "runs_per_round": {"cases": args.runs, "models": args.model_runs},
        "statistic": (
            "per case: the median over rounds of (median of onnxruntime's runs / median of ours) in that round, "
            "rounds interleaved ABBA; 95 % bootstrap interval of that median; range: lowest and highest round"
        ),
        "macs_convention": "MACs of devicelab.graph.ops (the bias add not counted); GFLOP/s = 2 * MACs / time",
        "op_time": {
            "ours": "OpenCL event COMMAND_END - COMMAND_START of the operator's kernel",
            "onnxruntime": "profiler <node>_kernel_time of the operator's nodes, NCHWc reorders excluded",
        },
        "ratio": "onnxruntime time / ours (GFLOP/s ours / GFLOP/s onnxruntime); > 1 means ours is faster",
        "goals": {"kernels_geomean": GOAL_KERNELS, "end_to_end_geomean": GOAL_END_TO_END},
        "load_average_1min": {"start": os.getloadavg()[0]},
        "by_threads": {},
    }
    for t in args.threads:
        ours, ort = Worker("ours", t), Worker("ort", t)
        report["device"], report["onnxruntime"] = ours.info["device"], ort.info["onnxruntime"]
        section: dict[str, Any] = {"cases": {}, "models": {}}
        try:
            for i, name in enumerate(cases):
                family, what, build = CASES[name]
                macs = _op_macs(build())
                row = measure_item(ours, ort, "case", name, args, seed=1000 * t + i)
                row.update(
                    family=family,
                    what=what,
                    macs=macs,
                    ours_gflops=_gflops(macs, row["ours_ms"]),
                    ort_gflops=_gflops(macs, row["ort_ms"]),
                )
                section["cases"][name] = row
                print(f"  {t}t {name}: {row['ratio']:.2f} (load {row['load_1min']['median']:.1f})", file=sys.stderr)
            for i, name in enumerate(models):
                section["models"][name] = row = measure_item(ours, ort, "model", name, args, seed=2000 * t + i)
                print(f"  {t}t {name}: {row['ratio']:.2f} (load {row['load_1min']['median']:.1f})", file=sys.stderr)
        finally:
            ours.close()
            ort.close()
        section["kernels_geomean"] = geomean_summary(
            [r["round_ratios"] for r in section["cases"].values()], seed=3000 + t
        )
        section["end_to_end_geomean"] = geomean_summary(
            [r["round_ratios"] for r in section["models"].values()], seed=4000 + t
        )
        report["by_threads"][str(t)] = section
    loads = [
        r["load_1min"]["median"]
        for s in report["by_threads"].values()
        for g in ("cases", "models")
        for r in s[g].values()
    ]
    report["load_average_1min"].update(
        end=os.getloadavg()[0], median_over_rounds=statistics.median(loads) if loads else None
    )
    report["duration_s"] = round(time.time() - started, 1)
    return report


def _verdict(summary: dict[str, Any] | None, goal: float) -> str:
    if summary is None:
        return "not measured"
    low, high = summary["ci95"]
    g = summary["geomean"]
    met = "met" if low >= goal else ("not met" if high < goal else "undecided (the interval holds the goal)")
    return f"{g:.2f} [{low:.2f}-{high:.2f}] vs goal >= {goal}: {met}"


def print_report(report: dict[str, Any]) -> None:
    """The tables, one per thread count, then now-vs-goal."""
    print(
        f"{report['device']} vs onnxruntime {report['onnxruntime']}, {report['date']}; "
        f"{report['rounds']['cases']} rounds x {report['runs_per_round']['cases']} runs per case, "
        f"{report['rounds']['models']} x {report['runs_per_round']['models']} per model, interleaved ABBA; "
        f"load average {report['load_average_1min']['start']:.1f} -> {report['load_average_1min']['end']:.1f} "
        f"on {report['cpus']} CPUs"
    )
    for t, s in report["by_threads"].items():
        if s["cases"]:
            print(f"\n{t} thread(s): per kernel (ratio = onnxruntime time / ours; > 1: ours faster)")
            print(
                f"{'case':<24}{'MMACs':>7} {'ours ms':>8} {'ort ms':>8} {'ours GF':>8} {'ort GF':>7} "
                f"{'ratio':>6} {'95% CI':>12} {'rounds':>11} {'load':>9}"
            )
            for name, r in s["cases"].items():
                print(
                    f"{name:<24}{r['macs'] / 1e6:7.1f} {r['ours_ms']:8.3f} {r['ort_ms']:8.3f} "
                    f"{r['ours_gflops']:8.1f} {r['ort_gflops']:7.1f} {r['ratio']:6.2f} "
                    f"{r['ci95'][0]:5.2f}-{r['ci95'][1]:<5.2f} {r['range'][0]:5.2f}-{r['range'][1]:<5.2f} "
                    f"{r['load_1min']['median']:4.1f}/{r['load_1min']['max']:<4.1f}"
                )
        if s["models"]:
            print(f"\n{t} thread(s): end to end (ms)")
            print(f"{'model':<24}{'ours':>8} {'ort':>8} {'ratio':>6} {'95% CI':>12} {'rounds':>11} {'load':>9}")
            for name, r in s["models"].items():
                print(
                    f"{name:<24}{r['ours_ms']:8.1f} {r['ort_ms']:8.1f} {r['ratio']:6.2f} "
                    f"{r['ci95'][0]:5.2f}-{r['ci95'][1]:<5.2f} {r['range'][0]:5.2f}-{r['range'][1]:<5.2f} "
                    f"{r['load_1min']['median']:4.1f}/{r['load_1min']['max']:<4.1f}"
                )
        print(f"\n{t} thread(s), now vs goal (geometric mean [95 % bootstrap interval]):")
        print(f"  per kernel : {_verdict(s['kernels_geomean'], GOAL_KERNELS)}")
        print(f"  end to end : {_verdict(s['end_to_end_geomean'], GOAL_END_TO_END)}")
    print(
        f"load average (1 min) over the rounds: median {report['load_average_1min']['median_over_rounds']:.1f} "
        f"on {report['cpus']} CPUs; {report['duration_s']:.0f} s"
    )


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
    """Run the benchmark (or, with ``--worker``, serve one engine at one thread count)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", default=",".join(map(str, THREADS)), help="comma-separated thread counts")
    p.add_argument("--cases", default="all", help="comma-separated case names, all or none")
    p.add_argument("--models", default="all", help="comma-separated zoo names, all (Table 1) or none")
    p.add_argument("--warmup", type=int, default=5, help="discarded runs of each engine before the rounds")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds per case")
    p.add_argument("--runs", type=int, default=10, help="runs per engine and round of a case")
    p.add_argument("--model-rounds", type=int, default=10, help="interleaved rounds per model")
    p.add_argument("--model-runs", type=int, default=3, help="runs per engine and round of a model")
    p.add_argument("--out", type=Path, default=None, help="the JSON report (default: under the var dir)")
    p.add_argument("--worker", choices=("ours", "ort"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.threads = [int(t) for t in str(args.threads).split(",")]
    if args.worker:
        return serve(args.worker, args.threads[0])
    cases = _names(args.cases, list(CASES), "cases")
    models = _names(args.models, table1_models(), "models")
    report = build_report(args, cases, models)
    out = args.out or default_out()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print_report(report)
    print(f"-> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
