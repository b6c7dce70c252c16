"""Benchmark: ParallelFusion's pairs of operator kinds on this machine's OpenCL device (figure 8a).

For every pair of operator kinds (C, C_1x1, S, P, DWC, DWC_s1, FC, EW; a kind with itself too)
it fuses real operators of the six Table-1 networks (``devicelab.fusion.sweep``) and prints the
fused throughput relative to sequential execution (sequential time / fused time: > 1 means the
fused kernel is faster), with and without rounding to the wave, in each layout asked for
(``--layout``: the default ``auto``, which packs wherever that is exact, ``packed``, ``paper``,
or several, comma-separated, measured interleaved), with its noise beside it.

How it measures:

* **Same operators every round.** The networks are loaded once; every round is one sweep with
  the same seed, so a pair fuses the same operators in every round, and each round's programs
  come from the cache the first round filled.
* **Interleaved.** Within a round, each fused variant and its sequential side (each operator's
  kernel rewritten alone in that variant: ``devicelab.fusion.sweep``) run one after another in
  each of ``--runs`` timed iterations, the order rotating, after ``--warmup`` dropped ones.
* **Rounds, paired.** ``--rounds`` rounds, each over every pair, so a pair's rounds lie minutes
  apart and see the machine's drift. A pair's ratio is ``paired_ratio`` over every timed
  iteration of every round (the median of the per-iteration log ratios, a 95 % bootstrap
  interval): a **gain** when the interval lies above 1, a **loss** below 1, **within noise**
  otherwise. Each round's own estimate is kept, and the correlation of the pairs' ratios
  between the first two rounds says how far one sweep's ranking of pairs can be trusted.
* **Correct first.** Every fused kernel is checked against the sequential run once per round
  (bit for bit or within 1e-6 relative); the count of failures is printed and recorded.

Writes ``<var>/benchmarks/fusion_pairs.json``.

    python benchmarks/fusion_pairs.py                        # 6 networks, 3 rounds of 20 runs
    python benchmarks/fusion_pairs.py --layout auto,paper    # the default layout beside the paper's
    python benchmarks/fusion_pairs.py --rounds 5 --runs 40 --models mobilenet_v2,squeezenet_1_0
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/fusion_pairs.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.fusion.fuse import LAYOUTS  # noqa: E402
from devicelab.fusion.pool import table1_models  # noqa: E402
from devicelab.fusion.spec import KINDS  # noqa: E402
from devicelab.measure.ratios import paired_ratio  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "fusion_pairs.json"
VARIANTS = ("rounded", "unrounded")


def columns(layouts: list[str]) -> list[str]:
    """The report's columns: ``<layout asked for>/<variant>``."""
    return [f"{layout}/{v}" for layout in layouts for v in VARIANTS]


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Load the networks, run the rounds and put the report together."""
    from devicelab.backends.opencl import devices
    from devicelab.fusion.pool import load_pool
    from devicelab.fusion.sweep import SweepSpec, run_sweep
    from devicelab.graph import zoo

    found = next(iter(devices.list_devices().values()))
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    spec = SweepSpec(
        sizes=(2,),
        identical_counts=(),
        representatives=args.representatives,
        instances=args.instances,
        warmup=args.warmup,
        runs=args.runs,
        seed=args.seed,
        layouts=tuple(args.layouts),
    )
    cols = columns(args.layouts)
    # pair -> column -> per-round point estimates, and every timed iteration's paired times
    ratios: dict[str, dict[str, list[float]]] = {}
    walls: dict[str, dict[str, list[float]]] = {}
    times: dict[str, dict[str, dict[str, list[float]]]] = {}
    operators: dict[str, list[list[str]]] = {}
    mflops: dict[str, list[list[float]]] = {}
    used: dict[str, dict[str, set[str]]] = {}  # pair -> column -> the layouts the fuser used
    padding: dict[str, dict[str, list[float]]] = {}
    incorrect: list[str] = []
    refused: list[str] = []
    rounds_s: list[float] = []
    with load_pool(found, [zoo.build(m) for m in args.models]) as pool:
        load_s = time.perf_counter() - t0
        for rnd in range(args.rounds):
            t1 = time.perf_counter()
            result = run_sweep(pool, spec)
            rounds_s.append(time.perf_counter() - t1)
            for row in result.rows:
                pair = "+".join(row.kinds)
                col = f"{row.requested_layout}/{row.variant}"
                where = f"round {rnd + 1}: {pair} {col}"
                if row.error:
                    refused.append(f"{where}: {row.error}")
                    continue
                if row.correct is False:
                    incorrect.append(f"{where}: {row.check.note if row.check else ''}")
                assert row.throughput is not None and row.sequential is not None and row.fused is not None
                ratios.setdefault(pair, {c: [] for c in cols})[col].append(row.throughput)
                paired = times.setdefault(pair, {}).setdefault(col, {k: [] for k in ("seq", "fused", "bs", "bf")})
                paired["seq"] += row.sequential.device_samples_ms
                paired["fused"] += row.fused.device_samples_ms
                paired["bs"] += row.sequential.busy_samples_ms
                paired["bf"] += row.fused.busy_samples_ms
                if row.throughput_wall is not None:
                    walls.setdefault(pair, {c: [] for c in cols})[col].append(row.throughput_wall)
                used.setdefault(pair, {c: set() for c in cols})[col].add(row.layout)
                if row.padding_fraction is not None:
                    padding.setdefault(pair, {c: [] for c in cols})[col].append(row.padding_fraction)
                if rnd == 0 and row.rounded and col == cols[0]:
                    operators.setdefault(pair, []).append([f"{o.model}/{o.name}" for o in row.operators])
                    mflops.setdefault(pair, []).append(list(row.mflops))
            print(
                f"round {rnd + 1}/{args.rounds}: {len(result.rows)} rows in {rounds_s[-1]:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        per_kind = dict(result.operators_per_kind)
        notes = list(result.notes)
    pairs: dict[str, Any] = {}
    for pair, by_column in ratios.items():
        entry: dict[str, Any] = {"operators": operators.get(pair, []), "mflops": mflops.get(pair, [])}
        for c in cols:
            values = by_column[c]
            if not values:
                continue
            paired = times[pair][c]
            span = paired_ratio(paired["seq"], paired["fused"])
            busy = paired_ratio(paired["bs"], paired["bf"]) if paired["bf"] else None
            entry[c] = {
                "ratio": span.ratio,
                "low": span.low,
                "high": span.high,
                "verdict": span.verdict,
                "busy": None if busy is None else busy.as_dict(),
                "iterations": span.rounds,
                "rounds": values,  # each round's own paired estimate (and instance, with --instances)
                "min": min(values),
                "max": max(values),
                "wall_ratio": float(np.median(walls[pair][c])) if walls.get(pair, {}).get(c) else None,
                "layout_used": sorted(used[pair][c]),
                "padding_fraction": float(np.median(padding[pair][c])) if padding.get(pair, {}).get(c) else None,
            }
        pairs[pair] = entry
    summary: dict[str, Any] = {}
    for c in cols:
        medians = [e[c]["ratio"] for e in pairs.values() if c in e]
        if medians:
            verdicts = [e[c]["verdict"] for e in pairs.values() if c in e]
            first_two = [e[c]["rounds"][:2] for e in pairs.values() if c in e and len(e[c]["rounds"]) >= 2]
            busy_values = [e[c]["busy"]["ratio"] for e in pairs.values() if c in e and e[c]["busy"]]
            summary[c] = {
                "pairs": len(medians),
                "median": float(np.median(medians)),
                "min": min(medians),
                "max": max(medians),
                "above_1": verdicts.count("above"),
                "below_1": verdicts.count("below"),
                "within_noise": verdicts.count("within noise"),
                "median_busy": float(np.median(busy_values)) if busy_values else None,
                # how well one round ranks the pairs as another does (the 0.26)
                "round_correlation": float(np.corrcoef(np.array(first_two).T)[0, 1]) if len(first_two) > 2 else None,
            }
    return {
        "benchmark": "fusion_pairs",
        "python": platform.python_version(),
        "machine": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "device": found.limits.name,
        "platform": found.limits.platform,
        "wave_size": found.limits.wave_size,
        "threads_env": devices.runtime_environment().get(devices.THREADS_ENV),
        "models": list(args.models),
        "operators_per_kind": per_kind,
        "layouts": list(args.layouts),
        "columns": cols,
        "rounds": args.rounds,
        "runs": args.runs,
        "warmup": args.warmup,
        "seed": args.seed,
        "ratio": "sequential time / fused time (device span), paired over every timed iteration of every round "
        "(devicelab.measure.ratios.paired_ratio); busy: the same on the kernels' own times",
        "verdict": "above / below: the 95 % bootstrap interval lies wholly above / below 1; else within noise",
        "load_average_1min": [load_before[0], os.getloadavg()[0]],
        "load_s": load_s,
        "rounds_s": rounds_s,
        "incorrect": incorrect,
        "refused": refused,
        "notes": notes,
        "summary": summary,
        "pairs": pairs,
    }


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return f"{'n/a':>36}"
    busy = f"{entry['busy']['ratio']:4.2f}" if entry.get("busy") else " n/a"
    verdict = {"above": "gain", "below": "loss"}.get(entry["verdict"], "~1")
    return f"{entry['ratio']:5.2f} [{entry['low']:4.2f}-{entry['high']:4.2f}] busy {busy} {verdict:>4}"


def print_report(report: dict[str, Any]) -> None:
    """One line per pair, figure 8a's matrix (the first layout, rounded), then each column's
    median and range over pairs."""
    cols = report["columns"]
    print(
        f"{report['device']} ({report['platform']}), wave {report['wave_size']}; {report['rounds']} rounds x "
        f"{report['runs']} interleaved runs; load average {report['load_average_1min'][0]:.1f} -> "
        f"{report['load_average_1min'][1]:.1f} on {report['cpus']} CPUs"
    )
    print("throughput relative to sequential = sequential time / fused time (> 1: fusion wins);")
    print("span ratio paired over every iteration [95 % interval], busy ratio, gain / loss / ~1 (within noise)")
    print(f"{'pair':<14}{'MFLOPs':>16} | " + " | ".join(f"{c:^36}" for c in cols))
    for pair, entry in report["pairs"].items():
        mf = "+".join(f"{x:.1f}" for x in entry["mflops"][0]) if entry["mflops"] else ""
        print(f"{pair:<14}{mf:>16} | " + " | ".join(_cell(entry.get(c)) for c in cols))
    kinds = [k for k in KINDS if any(k in p.split("+") for p in report["pairs"])]
    print(f"\nfigure 8a ({cols[0]}, paired ratio; * where the interval excludes 1):")
    print(f"{'':8}" + "".join(f"{k:>8}" for k in kinds))
    for a in kinds:
        cells = []
        for b in kinds:
            i, j = sorted((KINDS.index(a), KINDS.index(b)))
            entry = report["pairs"].get(f"{KINDS[i]}+{KINDS[j]}", {}).get(cols[0])
            mark = "*" if entry and entry["verdict"] != "within noise" else " "
            cells.append(f"{entry['ratio']:7.2f}{mark}" if entry else f"{'':>8}")
        print(f"{a:8}" + "".join(cells))
    print()
    for c, s in report["summary"].items():
        corr = "n/a" if s["round_correlation"] is None else f"{s['round_correlation']:.2f}"
        busy = "n/a" if s["median_busy"] is None else f"{s['median_busy']:.2f}"
        print(
            f"{c:<20} over {s['pairs']} pairs: median span {s['median']:.2f} (busy {busy}), "
            f"range {s['min']:.2f}-{s['max']:.2f}; significantly above 1: {s['above_1']} "
            f"({s['above_1'] / s['pairs']:.0%}), below: {s['below_1']}, within noise: {s['within_noise']}; "
            f"round 1 vs 2 correlation {corr}"
        )
    print(f"{len(report['incorrect'])} incorrect fused kernels, {len(report['refused'])} refused")
    for note in report["notes"]:
        print(f"note: {note}")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="all", help="comma-separated zoo names, or all (Table 1)")
    p.add_argument("--rounds", type=int, default=3, help="sweeps over every pair, a round apart (default 3)")
    p.add_argument("--runs", type=int, default=20, help="interleaved timed runs per pair and round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--representatives", type=int, default=3, help="operators drawn per kind")
    p.add_argument("--instances", type=int, default=1, help="operator draws per pair")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--layout",
        default="auto",
        help=f"fused layouts, comma-separated, of {', '.join(LAYOUTS)} (default auto: packed where exact)",
    )
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    args.layouts = [x for x in args.layout.split(",") if x]
    if not args.layouts or set(args.layouts) - set(LAYOUTS) or len(set(args.layouts)) != len(args.layouts):
        raise SystemExit(f"--layout takes some of {', '.join(LAYOUTS)}, comma-separated, once each")
    if args.rounds < 2:
        raise SystemExit("--rounds must be at least 2: rounds minutes apart are what the interval must cover")
    known = table1_models()
    args.models = known if args.models == "all" else [m for m in args.models.split(",") if m]
    from devicelab.graph import zoo

    unknown = [m for m in args.models if m not in zoo.entries()]
    if unknown:
        raise SystemExit(f"unknown zoo models: {unknown}; Table 1: {known}")
    report = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print_report(report)
    print(f"-> {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
