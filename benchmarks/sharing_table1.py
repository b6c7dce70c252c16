"""Benchmark: table 1 of seed 003 (space-time over the next best sharing strategy) on this machine's
OpenCL device.

For the paper's three SGEMM shapes (M=512,N=1,K=512; M=256,N=128,K=1152; M=N=K=256) and R
tenants it runs every sharing strategy (``devicelab.tenancy``): exclusive, exclusive batched,
time-only, space-only, space-time with the strided and the variable-sized batch kernel, and
CLBlast's batched GEMM where pyclblast is installed (up to ``--clblast-max-tenants``: on a CPU
driver it is slow enough to dominate the run).

How it measures: at each R the strategies run interleaved (one step of each per round, the order
rotating; ``--warmup`` dropped rounds, ``--runs`` kept), so round i's samples are paired; every
strategy's outputs are checked against each tenant's exclusive run first. The speed-up at one R
is space-time's GFLOP/s over the better of time-only and space-only (by median), paired by round
(``devicelab.measure.ratios.paired_ratio``: the median of the rounds' ratios with a 95% bootstrap
interval); the table gives the geometric mean over R in [2, 120] and at how many R the speed-up
was significantly above or below 1. The ceiling is numpy's SGEMM on every tenant's own operands
(best of one BLAS thread and all), one step per round interleaved with the strategies in a
separate process (``devicelab.tenancy.ceiling``); every row's share of it is paired by round.

Writes ``<var>/benchmarks/sharing_table1.json`` (the sweep's ``as_dict()`` plus the machine).

    python benchmarks/sharing_table1.py                          # R = 1,2,4,8,10,16,20,32,64,120
    python benchmarks/sharing_table1.py --tenants 1,2,4,8,16 --runs 10
    python benchmarks/sharing_table1.py --networks mobilenet_v2,resnet18 --tenants 1,2,4
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
if str(ROOT) not in sys.path:  # run as `python benchmarks/sharing_table1.py` without an install
    sys.path.insert(0, str(ROOT))

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "sharing_table1.json"
ORDER = (
    "exclusive",
    "exclusive_batched",
    "time_only",
    "space_only",
    "space_time",
    "space_time_vbatched",
    "space_time_clblast",
    "space_time_native",
)
SHORT = {
    "exclusive": "excl",
    "exclusive_batched": "excl-batch",
    "time_only": "time",
    "space_only": "space",
    "space_time": "space-time",
    "space_time_vbatched": "st-vbatch",
    "space_time_clblast": "st-clblast",
    "space_time_native": "st-native",
}


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v.strip())


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Run the sweep(s) and put the report together."""
    from devicelab.backends.opencl import devices
    from devicelab.tenancy.gemm import GemmShape
    from devicelab.tenancy.spec import SharingSpec
    from devicelab.tenancy.sweep import run_sharing_sweep
    from devicelab.tenancy.table1 import table1

    found = next(iter(devices.list_devices().values()))
    shapes = tuple((s.m, s.n, s.k) for s in (GemmShape.parse(t) for t in args.shapes.split(",") if t))
    try:
        import pyclblast  # noqa: F401

        clblast = True
    except ImportError:
        clblast = False
    base = (
        "exclusive",
        "exclusive_batched",
        "time_only",
        "space_only",
        "space_time",
        "space_time_vbatched",
        "space_time_native",  # networks only: the sweep gives SGEMM shapes no row of it
    )
    load_before = os.getloadavg()
    t0 = time.perf_counter()

    def report(fraction: float, message: str) -> None:
        print(f"  {fraction:6.1%} {message}", file=sys.stderr, flush=True)

    main = run_sharing_sweep(
        found,
        SharingSpec(
            shapes=shapes,
            networks=tuple(n for n in args.networks.split(",") if n),
            tenants=args.tenants,
            strategies=base,
            warmup=args.warmup,
            runs=args.runs,
            seed=args.seed,
        ),
        progress=report,
    )
    data = main.as_dict()
    rows = data["rows"]
    if clblast and args.clblast_max_tenants > 0 and shapes:  # CLBlast is a peer for SGEMM shapes only
        # The peer is measured on its own pass with the two multiplexers it is compared with,
        # interleaved the same way (so its ratios are paired too), at fewer R.
        peer = run_sharing_sweep(
            found,
            SharingSpec(
                shapes=shapes,
                tenants=tuple(r for r in args.tenants if r <= args.clblast_max_tenants),
                strategies=("time_only", "space_only", "space_time", "space_time_clblast"),
                warmup=args.warmup,
                runs=args.runs,
                seed=args.seed,
                ceiling=False,
            ),
            progress=report,
        ).as_dict()
        data["clblast_pass"] = {"rows": peer["rows"], "table1": peer["table1"]}
    data.update(
        benchmark="sharing_table1",
        python=platform.python_version(),
        machine=platform.processor() or platform.machine(),
        cpus=os.cpu_count(),
        pyclblast=clblast,
        load_average_1min=[load_before[0], os.getloadavg()[0]],
        wall_s=time.perf_counter() - t0,
    )
    data["table1"] = table1(rows)
    return data


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return f"{'':>11}"
    if row["status"] != "ok":
        return f"{row['status'][:11]:>11}"
    g = row["throughput"]["gflops"]
    mark = "" if row["checks"].get("correct", True) else "!"
    return f"{g:10.2f}{mark or ' '}"


def print_report(report: dict[str, Any]) -> None:
    """Throughput per strategy and R, p50/p99 latency and stragglers, then table 1."""
    dev = report["device"]
    print(
        f"{dev['name']} ({dev['platform']}), {dev['compute_units']} compute units; {report['spec']['runs']} "
        f"interleaved rounds after {report['spec']['warmup']} dropped; load average "
        f"{report['load_average_1min'][0]:.1f} -> {report['load_average_1min'][1]:.1f} on {report['cpus']} CPUs"
    )
    rows = report["rows"] + report.get("clblast_pass", {}).get("rows", [])
    names = [n for n in ORDER if any(r["strategy"] == n for r in rows)]
    by: dict[tuple[str, int, str], dict[str, Any]] = {}
    for r in report["rows"]:
        by[(r["workload"]["name"], r["tenants"], r["strategy"])] = r
    for r in report.get("clblast_pass", {}).get("rows", []):
        if r["strategy"] == "space_time_clblast":
            by[(r["workload"]["name"], r["tenants"], r["strategy"])] = r
    workloads = list(dict.fromkeys(r["workload"]["name"] for r in rows))
    ceiling = (report.get("ceiling") or {}).get("shapes", {})
    for w in workloads:
        kind = next(r["workload"]["kind"] for r in rows if r["workload"]["name"] == w)
        unit = "GFLOP/s" if kind == "sgemm" else "GFLOP/s (network)"
        per_r = (ceiling.get(w) or {}).get("per_tenants") or {}
        print(f"\n{w} ({kind}): throughput in {unit}  ('!': outputs failed the check)")
        print(f"{'R':>4} " + "".join(f"{SHORT[n]:>11}" for n in names) + ("    ceiling" if per_r else ""))
        for t in sorted({r["tenants"] for r in rows if r["workload"]["name"] == w}):
            top = per_r.get(str(t)) or {}
            roof = f"{top['gflops']:11.2f}" if top.get("gflops") else ""
            print(f"{t:>4} " + "".join(_cell(by.get((w, t, n))) for n in names) + roof)
        if per_r:
            print(f"{'R':>4}  share of the ceiling, paired by round [95% interval]")
            for t in sorted({r["tenants"] for r in rows if r["workload"]["name"] == w}):
                parts = []
                for n in names:
                    o = (by.get((w, t, n)) or {}).get("of_ceiling")
                    if o:
                        parts.append(f"{SHORT[n]} {o['ratio']:.2f} [{o['low']:.2f}-{o['high']:.2f}]")
                print(f"{t:>4}  " + ", ".join(parts))
        print(
            f"{'R':>4} " + "".join(f"{SHORT[n] + ' p50/p99':>24}" for n in names[:5]) + "  straggler gap (space_only)"
        )
        for t in sorted({r["tenants"] for r in rows if r["workload"]["name"] == w}):
            cells = []
            for n in names[:5]:
                row = by.get((w, t, n))
                lat = row and row.get("latency_ms")
                cells.append(f"{lat['p50']:11.2f}/{lat['p99']:<11.2f}" if lat else f"{'':>24}")
            so = by.get((w, t, "space_only"))
            gap = so and so.get("straggler")
            g = f"{gap['gap_ms']:.2f} ms ({gap['gap_ratio']:.0%})" if gap and gap.get("gap_ratio") is not None else ""
            print(f"{t:>4} " + "".join(cells) + f"  {g}")
    print("\nTable 1: space-time throughput over the next best of time-only and space-only, R in [2, 120]")
    print(f"{'workload':<16}{'geomean':>9}  {'next best':<12}{'per R: paired speed-up [95% interval]'}")
    for entry in report["table1"]:
        gm = entry["speedup_geomean"]
        sig = entry.get("significant") or {}
        per = ", ".join(
            f"R={p['tenants']}: {p['ratio']['ratio']:.2f}x [{p['ratio']['low']:.2f}-{p['ratio']['high']:.2f}]"
            + ("" if p["ratio"]["verdict"] != "within noise" else " noise")
            for p in entry["per_tenants"]
        )
        per += f"  -> above 1 at {sig.get('above', 0)}, below at {sig.get('below', 0)}, within noise at {sig.get('within noise', 0)}"
        print(
            f"{entry['workload']['name']:<16}{(f'{gm:.2f}x' if gm else 'n/a'):>9}  {entry['next_best'] or '-':<12}{per}"
        )
        for peer, p in entry["peers"].items():
            print(f"{'':<16}{p['speedup_geomean']:>8.2f}x  {p['next_best']:<12}({peer} instead of space_time)")
    for entry in report.get("clblast_pass", {}).get("table1", []):
        p = entry["peers"].get("space_time_clblast")
        if p:
            print(
                f"{entry['workload']['name']:<16}{p['speedup_geomean']:>8.2f}x  {p['next_best']:<12}"
                f"(CLBlast's batched GEMM, its own pass, R <= {max(q['tenants'] for q in p['per_tenants'])}; "
                f"ours in that pass: {entry['speedup_geomean']:.2f}x)"
            )
    bad = [r for r in rows if r["status"] == "ok" and r["checks"].get("correct") is False]
    bound = [r for r in rows if r["status"] == "memory_bound"]
    print(f"\n{len(bad)} rows whose outputs failed the check; {len(bound)} memory-bound rows; {report['wall_s']:.0f} s")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default="512x1x512,256x128x1152,256x256x256", help="MxNxK, comma-separated")
    p.add_argument("--tenants", type=_ints, default=(1, 2, 4, 8, 10, 16, 20, 32, 64, 120), help="R values")
    p.add_argument("--networks", default="", help="zoo names, comma-separated (e.g. mobilenet_v2,resnet18)")
    p.add_argument("--runs", type=int, default=15, help="kept interleaved rounds per R")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--clblast-max-tenants", type=int, default=16, help="largest R for CLBlast's pass (0: none)")
    p.add_argument("--seed", type=int, default=0)
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
