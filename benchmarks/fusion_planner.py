"""Benchmark: the fusion planner against running every kernel alone and fusing every ready kernel
(``devicelab.fusion.plan_run``), on this machine's OpenCL device.

Scenarios (each graph at the zoo's default input size):

* ``mobilenet_v2+mobilenet_v2``: two MobileNet-V2 run together (the paper's figure 11);
* ``googlenet``: one graph with branches (its Inception modules).

For each, ``compare_plan`` loads the graphs, calibrates the latency model on the device (kernels
timed alone, a few fused probes), plans, checks every written buffer of ``plan`` and ``fuse_all``
against the sequential run, and times the three strategies interleaved (``--warmup`` dropped
rounds, ``--runs`` kept). It prints each strategy's device-time median with its standard
deviation and p90, the throughput relative to sequential as a paired estimate (sequential time /
strategy time of the same round, the median of their logs, > 1: faster) with its 95 % bootstrap
interval and its busy ratio (the kernels' own times, launch gaps left out), the launches, where the plan's benefits came from, the output checks and the model's
predictions beside the measured medians.

With ``--sweep`` a fusion sweep (pairs and triples of operator kinds, ``devicelab.fusion.sweep``)
first runs on each scenario's models, and the planner takes its rows as measured benefits (and
fits its fusion costs to their timings); the scenario is then planned both ways.

Writes ``<var>/benchmarks/fusion_planner.json`` (``--out`` to change).

    python benchmarks/fusion_planner.py                      # both scenarios, 5 + 30 rounds
    python benchmarks/fusion_planner.py --sweep --sweep-runs 10
    python benchmarks/fusion_planner.py --scenarios googlenet,inception_v3 --runs 50
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
if str(ROOT) not in sys.path:  # run as `python benchmarks/fusion_planner.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.measure.ratios import RatioEstimate  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "fusion_planner.json"
SCENARIOS = "mobilenet_v2+mobilenet_v2,googlenet"


def sweep_rows(found: Any, models: list[str], args: argparse.Namespace) -> tuple[list[dict[str, Any]], float]:
    """A sweep of pairs and triples of kinds over the scenario's models (rounded variant only)."""
    from devicelab.fusion.pool import load_pool
    from devicelab.fusion.sweep import SweepSpec, run_sweep
    from devicelab.graph import zoo

    t0 = time.perf_counter()
    spec = SweepSpec(
        sizes=tuple(args.sweep_sizes),
        identical_counts=(),
        rounding=(True,),
        warmup=args.sweep_warmup,
        runs=args.sweep_runs,
        max_combinations=args.sweep_max_combinations,
        seed=args.seed,
    )
    with load_pool(found, [zoo.build(m) for m in sorted(set(models))]) as pool:
        result = run_sweep(pool, spec)
    return [row.as_dict() for row in result.rows], time.perf_counter() - t0


def run_scenario(found: Any, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Plan, check and time one scenario (with and without a sweep's rows)."""
    from devicelab.fusion.plan_run import compare_plan
    from devicelab.graph import zoo

    models = [m for m in name.split("+") if m]
    out: dict[str, Any] = {"scenario": name, "models": models}
    variants: list[tuple[str, Any]] = [("model", None)]
    if args.sweep:
        rows, sweep_s = sweep_rows(found, models, args)
        out["sweep"] = {"rows": len(rows), "seconds": sweep_s}
        variants.append(("sweep", rows))
    for label, rows in variants:
        t0 = time.perf_counter()
        result = compare_plan(
            found,
            [zoo.build(m) for m in models],
            sweep_rows=rows,
            max_group=args.max_group,
            min_throughput=args.min_throughput,
            warmup=args.warmup,
            runs=args.runs,
            round_to_wave=not args.no_rounding,
        )
        out[label] = {"seconds": time.perf_counter() - t0, "comparison": result.as_dict()}
        print_comparison(name, label, out[label]["comparison"], out[label]["seconds"])
    return out


def print_comparison(name: str, label: str, d: dict[str, Any], seconds: float) -> None:
    """One scenario's strategies side by side."""
    kernels = len(d["kernels"])
    print(
        f"\n== {name} ({kernels} kernels), benefits: {label}; {d['warmup']} warm-up + {d['runs']} interleaved "
        f"rounds; {seconds:.0f} s"
    )
    print(
        f"{'strategy':<11}{'launches':>9}{'fused':>6}{'median ms':>11}{'std':>8}{'p90':>8}"
        f"{'predicted':>11}  {'seq / strategy, paired [95 %]':<40}{'busy':<8}{'check':<10}"
    )
    for s in d["strategies"]:
        dev = d["timing"][s]["device"]
        plan = d["plans"][s]
        if s == "sequential":
            ratio, busy, check = "reference", "", "reference"
        else:
            r, c = d["ratios"][s], d["checks"][s]
            # the paired estimate, never the quotient of the medians printed beside it
            ratio = RatioEstimate.from_dict(r["ratio"]).label(3)
            busy = f"{r['busy_ratio']['ratio']:.3f}" if r.get("busy_ratio") else "n/a"
            check = ("bitwise" if c["buffers"]["bitwise"] else "1e-6") if c["correct"] else "WRONG"
        print(
            f"{s:<11}{plan['launches']:>9}{plan['fused_launches']:>6}{dev['median']:>11.3f}{dev['std']:>8.3f}"
            f"{dev['p90']:>8.3f}{d['predicted_ms'][s]:>11.3f}  {ratio:<40}{busy:<8}{check:<10}"
        )
    src = d["benefit_sources"]["plan"]
    print(f"plan's fused launches: {src['measured']} from measurements, {src['model']} from the model")
    print(f"model: {d['model']['calibration']}")
    for note in d["notes"]:
        print(f"note: {note}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenarios", default=SCENARIOS, help="comma-separated; models run together joined by +")
    p.add_argument("--runs", type=int, default=30, help="interleaved timed rounds")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--max-group", type=int, default=3)
    p.add_argument("--min-throughput", type=float, default=1.0, help="predicted throughput a group must beat")
    p.add_argument("--no-rounding", action="store_true", help="do not round parts to the wave (section 4.2)")
    p.add_argument("--sweep", action="store_true", help="also plan with a sweep's measured benefits")
    p.add_argument("--sweep-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[2, 3])
    p.add_argument("--sweep-runs", type=int, default=10)
    p.add_argument("--sweep-warmup", type=int, default=2)
    p.add_argument("--sweep-max-combinations", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)

    from devicelab.backends.opencl import devices
    from devicelab.graph import zoo

    scenarios = [s for s in args.scenarios.split(",") if s]
    unknown = sorted({m for s in scenarios for m in s.split("+") if m not in zoo.entries()})
    if unknown:
        raise SystemExit(f"unknown zoo models: {unknown}")
    found = next(iter(devices.list_devices().values()))
    load_before = os.getloadavg()
    print(
        f"{found.limits.name} ({found.limits.platform}), wave {found.limits.wave_size}; "
        f"load average {load_before[0]:.1f} on {os.cpu_count()} CPUs"
    )
    results = [run_scenario(found, s, args) for s in scenarios]
    report = {
        "benchmark": "fusion_planner",
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "device": found.limits.name,
        "platform": found.limits.platform,
        "wave_size": found.limits.wave_size,
        "threads_env": devices.runtime_environment().get(devices.THREADS_ENV),
        "runs": args.runs,
        "warmup": args.warmup,
        "max_group": args.max_group,
        "min_throughput": args.min_throughput,
        "round_to_wave": not args.no_rounding,
        "load_average_1min": [load_before[0], os.getloadavg()[0]],
        "throughput": "median over timed rounds of sequential device time / strategy device time of the same "
        "round (> 1: faster); noise: standard deviation of those per-round values",
        "scenarios": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    print(f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
