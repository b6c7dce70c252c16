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
* **Interleaved.** Within a round, a pair's sequential launches and its fused kernels (rounded,
  unrounded) run one after another in each of ``--runs`` timed iterations, the order rotating,
  after ``--warmup`` dropped ones; the round's ratio is the median over iterations of sequential
  / fused device time of the same iteration (the host clock's is recorded too).
* **Rounds.** ``--rounds`` rounds, each over every pair, so a pair's rounds lie minutes apart and
  see the machine's drift. The ratio printed is the median over rounds, the noise the spread
  between rounds (min..max) and the median within-round standard deviation of the per-iteration
  ratios. A pair is called a **gain** only when every round's ratio is above 1, a **loss** only
  when every round's is below 1, and nothing otherwise: one lucky run or round decides nothing.
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

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "fusion_pairs.json"
VARIANTS = ("rounded", "unrounded")


def columns(layouts: list[str]) -> list[str]:
    """The report's columns: ``<layout asked for>/<variant>``."""
    return [f"{layout}/{v}" for layout in layouts for v in VARIANTS]


def verdict(per_round: list[float]) -> str:
    """``gain`` when every round's ratio is above 1, ``loss`` when every one is below, else ``-``
    (two rounds at least)."""
    if len(per_round) < 2:
        return "-"
    if min(per_round) > 1.0:
        return "gain"
    if max(per_round) < 1.0:
        return "loss"
    return "-"


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
    # pair -> column -> per-round values
    ratios: dict[str, dict[str, list[float]]] = {}
    walls: dict[str, dict[str, list[float]]] = {}
    within: dict[str, dict[str, list[float]]] = {}
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
                assert row.throughput is not None and row.throughput_noise is not None
                ratios.setdefault(pair, {c: [] for c in cols})[col].append(row.throughput)
                within.setdefault(pair, {c: [] for c in cols})[col].append(row.throughput_noise)
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
            entry[c] = {
                "ratio": float(np.median(values)),
                "rounds": values,  # per round (and instance, with --instances)
                "min": min(values),
                "max": max(values),
                "within_round_sd": float(np.median(within[pair][c])),
                "wall_ratio": float(np.median(walls[pair][c])) if walls.get(pair, {}).get(c) else None,
                "verdict": verdict(values),
                "layout_used": sorted(used[pair][c]),
                "padding_fraction": float(np.median(padding[pair][c])) if padding.get(pair, {}).get(c) else None,
            }
        pairs[pair] = entry
    summary: dict[str, Any] = {}
    for c in cols:
        medians = [e[c]["ratio"] for e in pairs.values() if c in e]
        if medians:
            summary[c] = {
                "pairs": len(medians),
                "median": float(np.median(medians)),
                "mean": float(np.mean(medians)),
                "min": min(medians),
                "max": max(medians),
                "above_1": sum(1 for m in medians if m > 1.0),
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
        "ratio": "sequential time / fused time (device clock), median over a round's interleaved runs; "
        "printed: the median over rounds",
        "verdict": "gain: every round above 1; loss: every round below 1; '-': neither",
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
        return f"{'n/a':>27}"
    return (
        f"{entry['ratio']:5.2f} [{entry['min']:4.2f}..{entry['max']:4.2f}] "
        f"±{entry['within_round_sd']:4.2f} {entry['verdict']:>4}"
    )


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
    print("median over rounds [min..max of rounds] ±median within-round SD of per-run ratios, verdict")
    print(f"{'pair':<14}{'MFLOPs':>16} | " + " | ".join(f"{c:^27}" for c in cols))
    for pair, entry in report["pairs"].items():
        mf = "+".join(f"{x:.1f}" for x in entry["mflops"][0]) if entry["mflops"] else ""
        print(f"{pair:<14}{mf:>16} | " + " | ".join(_cell(entry.get(c)) for c in cols))
    kinds = [k for k in KINDS if any(k in p.split("+") for p in report["pairs"])]
    print(f"\nfigure 8a ({cols[0]}, median over rounds):")
    print(f"{'':8}" + "".join(f"{k:>8}" for k in kinds))
    for a in kinds:
        cells = []
        for b in kinds:
            i, j = sorted((KINDS.index(a), KINDS.index(b)))
            entry = report["pairs"].get(f"{KINDS[i]}+{KINDS[j]}", {}).get(cols[0])
            cells.append(f"{entry['ratio']:8.2f}" if entry else f"{'':>8}")
        print(f"{a:8}" + "".join(cells))
    print()
    for c, s in report["summary"].items():
        verdicts = [e[c]["verdict"] for e in report["pairs"].values() if c in e]
        print(
            f"{c:<20} over {s['pairs']} pairs: median {s['median']:.2f}, mean {s['mean']:.2f}, "
            f"range {s['min']:.2f}-{s['max']:.2f}, {s['above_1']} above 1; "
            f"{verdicts.count('gain')} gains, {verdicts.count('loss')} losses, {verdicts.count('-')} neither"
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
        raise SystemExit("--rounds must be at least 2: a verdict needs agreeing rounds")
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
