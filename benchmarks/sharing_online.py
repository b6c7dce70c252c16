"""Benchmark: the online space-time scheduler against time-only and space-only sharing, every policy
on the same seeded Poisson arrival trace (issue 21 item 6; seed 003, section 4).

For each SGEMM shape (default: 256x128x1152, the ResNet-18 conv2_2 of figure 7, and 512x1x512,
the RNN's matrix-vector product) and each R it first measures ``t1``: one request of a tenant
served alone (its kernel and the download of its result; ``online.request_service_ms``). Each
offered load is a multiple of ``1 / t1``, the rate at which one tenant alone could be served back
to back, sustained for a second just before: load 0.8 with R = 8 is eight tenants of Poisson
arrivals at 0.1 / t1 each. Every request's latency target is ``--target-factor`` x t1 and
space-time's window ``--window-factor`` x t1 (printed in ms; further factors replay space-time
alone again, by default a window of 0: launch whatever is pending whenever the device is free).
One trace per (shape, R, load), seeded, replayed in real time under every policy, the policies'
order rotating from load to load.

Prints per policy the attainment (share of requests within their target), throughput
(requests/s, goodput: requests/s within target, GFLOP/s), p50/p99 latency, and for space-time the
mean batch size and why batches were launched; every output is checked against the tenant's
exclusive run. Writes ``<var>/benchmarks/sharing_online.json`` (each run's ``as_dict()``, without
the per-request records unless ``--keep-requests``, plus the machine and its load).

    python benchmarks/sharing_online.py
    python benchmarks/sharing_online.py --shapes 256x256x256 --tenants 4,16 --loads 0.5,1.0 --duration 3
    python benchmarks/sharing_online.py --window-factor 2,0,8 --target-factor 10
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
if str(ROOT) not in sys.path:  # run as `python benchmarks/sharing_online.py` without an install
    sys.path.insert(0, str(ROOT))

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "sharing_online.json"
POLICIES = ("time_only", "space_only", "space_time")


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v.strip())


def _strip(data: dict[str, Any], keep_requests: bool) -> dict[str, Any]:
    """The result without the per-request records (the trace is kept as its seed and loads)."""
    if keep_requests:
        return data
    data["trace"] = {k: v for k, v in data["trace"].items() if k != "requests"}
    for policy in data["policies"].values():
        policy.pop("requests", None)
        policy.pop("batch_records", None)
    return data


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every (shape, R, load), every policy; the report."""
    from devicelab.backends.opencl import devices
    from devicelab.tenancy.arrivals import poisson_trace, uniform_loads
    from devicelab.tenancy.online import OnlineWorkload, request_service_ms, run_online

    found = next(iter(devices.list_devices().values()))
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    runs: list[dict[str, Any]] = []

    def report(fraction: float, message: str) -> None:
        print(f"  {fraction:6.1%} {message}", file=sys.stderr, flush=True)

    for shape in (s for s in args.shapes.split(",") if s):
        workload = OnlineWorkload.sgemm(shape, seed=args.seed)
        t1 = request_service_ms(found, workload)
        target_ms = args.target_factor * t1
        windows_ms = [f * t1 for f in args.window_factor]
        print(
            f"{workload.name}: t1 = {t1:.3f} ms alone; target {target_ms:.2f} ms, windows "
            + ", ".join(f"{w:.2f}" for w in windows_ms)
            + " ms",
            file=sys.stderr,
        )
        for tenants in args.tenants:
            for i, load in enumerate(args.loads):
                trace = poisson_trace(
                    uniform_loads(tenants, load / (t1 / 1e3), target_ms), seed=args.seed, duration_s=args.duration
                )
                order = POLICIES[i % 3 :] + POLICIES[: i % 3]
                for j, window_ms in enumerate(windows_ms):
                    # the first window: every policy; the others: space-time again on the same trace
                    policies = order if j == 0 else ("space_time",)
                    result = run_online(found, workload, trace, policies, window_ms=window_ms, progress=report)
                    data = _strip(result.as_dict(), args.keep_requests)
                    data.update(load=load, t1_ms=t1, target_ms=target_ms, window_ms=window_ms, order=list(policies))
                    runs.append(data)
    return {
        "benchmark": "sharing_online",
        "seed": args.seed,
        "duration_s": args.duration,
        "target_factor": args.target_factor,
        "window_factors": list(args.window_factor),
        "runs": runs,
        "device": runs[0]["device"] if runs else None,
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1min": [load_before[0], os.getloadavg()[0]],
        "wall_s": time.perf_counter() - t0,
    }


def _num(value: float | None, fmt: str) -> str:
    return format(value, fmt) if value is not None else "-"


def print_report(report: dict[str, Any]) -> None:
    """One table per (shape, R): per load and policy, attainment, throughput and latency."""
    dev = report["device"] or {}
    print(
        f"{dev.get('name')} ({dev.get('platform')}), {dev.get('compute_units')} compute units; seed {report['seed']}, "
        f"{report['duration_s']} s of arrivals per trace; load average {report['load_average_1min'][0]:.1f} -> "
        f"{report['load_average_1min'][1]:.1f} on {report['cpus']} CPUs"
    )
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in report["runs"]:
        groups.setdefault((r["workload"]["name"], r["trace_summary"]["tenants"]), []).append(r)
    for (name, tenants), runs in groups.items():
        first = runs[0]
        print(
            f"\n{name}, R = {tenants}: t1 {first['t1_ms']:.3f} ms alone, target {first['target_ms']:.2f} ms "
            "('!': an output differed from the exclusive run)"
        )
        print(
            f"{'load':>5} {'offered/s':>10} {'policy':<19}{'attain':>8}{'req/s':>10}{'good/s':>10}{'GFLOP/s':>9}"
            f"{'p50 ms':>9}{'p99 ms':>10}{'batch':>7}  launches"
        )
        for r in runs:
            offered = r["trace_summary"]["requests"] / r["trace_summary"]["duration_s"]
            for c in r["comparison"]:
                label = c["policy"] + (f" w={r['window_ms']:.2f}" if c["policy"] == "space_time" else "")
                if c["status"] != "ok":
                    print(f"{r['load']:>5.2f} {offered:>10.0f} {label:<19}{c['status']}")
                    continue
                batches = r["policies"][c["policy"]]["batches"]
                reasons = ", ".join(f"{k} {v}" for k, v in sorted(batches["reasons"].items())) if batches else ""
                mark = "" if c["outputs_correct"] else "!"
                print(
                    f"{r['load']:>5.2f} {offered:>10.0f} {label:<19}{c['attainment']:>7.1%}{mark:1}"
                    f"{_num(c['per_s'], '.0f'):>10}{_num(c['goodput_per_s'], '.0f'):>10}{_num(c['gflops'], '.2f'):>9}"
                    f"{_num(c['p50_ms'], '.2f'):>9}{_num(c['p99_ms'], '.2f'):>10}{c['mean_batch']:>7.2f}  {reasons}"
                )
    bad = [
        (r["workload"]["name"], r["load"], c["policy"])
        for r in report["runs"]
        for c in r["comparison"]
        if c["status"] == "ok" and not c["outputs_correct"]
    ]
    print(f"\n{len(bad)} policy runs with an output that differed from the exclusive run; {report['wall_s']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default="256x128x1152,512x1x512", help="MxNxK, comma-separated")
    p.add_argument("--tenants", type=_ints, default=(8,), help="R values, comma-separated")
    p.add_argument("--loads", type=_floats, default=(0.3, 0.6, 0.9), help="offered loads in units of 1 / t1")
    p.add_argument("--duration", type=float, default=4.0, help="seconds of arrivals per trace")
    p.add_argument("--target-factor", type=float, default=20.0, help="latency target in units of t1")
    p.add_argument(
        "--window-factor",
        type=_floats,
        default=(2.0, 0.0),
        help="space-time's window in units of t1; after the first, space-time alone again per value",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep-requests", action="store_true", help="keep every request's record in the JSON")
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    report = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report) + "\n")
    print_report(report)
    print(f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
