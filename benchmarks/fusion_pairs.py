"""Benchmark: ParallelFusion's pairs of operator kinds on this machine's OpenCL device (figure 8a).

For every pair of operator kinds (C, C_1x1, S, P, DWC, DWC_s1, FC, EW; a kind with itself too)
it fuses real operators of the six Table-1 networks (``devicelab.fusion.sweep``) and prints the
fused throughput relative to sequential execution (sequential time / fused time: > 1 means the
fused kernel is faster), with and without rounding to the wave, with its noise beside it.

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

Writes ``var/benchmarks/fusion_pairs.json``.

    python benchmarks/fusion_pairs.py                        # 6 networks, 3 rounds of 20 runs
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

from devicelab.fusion.kinds import KINDS  # noqa: E402
from devicelab.fusion.pool import table1_models  # noqa: E402

OUT = ROOT / "var" / "benchmarks" / "fusion_pairs.json"
VARIANTS = ("rounded", "unrounded")


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
    )
    # pair -> variant -> per-round values
    ratios: dict[str, dict[str, list[float]]] = {}
    walls: dict[str, dict[str, list[float]]] = {}
    within: dict[str, dict[str, list[float]]] = {}
    operators: dict[str, list[list[str]]] = {}
    mflops: dict[str, list[list[float]]] = {}
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
                where = f"round {rnd + 1}: {pair} {row.variant}"
                if row.error:
                    refused.append(f"{where}: {row.error}")
                    continue
                if row.correct is False:
                    incorrect.append(f"{where}: {row.check.note if row.check else ''}")
                assert row.throughput is not None and row.throughput_noise is not None
                ratios.setdefault(pair, {v: [] for v in VARIANTS})[row.variant].append(row.throughput)
                within.setdefault(pair, {v: [] for v in VARIANTS})[row.variant].append(row.throughput_noise)
                if row.throughput_wall is not None:
                    walls.setdefault(pair, {v: [] for v in VARIANTS})[row.variant].append(row.throughput_wall)
                if rnd == 0 and row.rounded:
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
    for pair, by_variant in ratios.items():
        entry: dict[str, Any] = {"operators": operators.get(pair, []), "mflops": mflops.get(pair, [])}
        for v in VARIANTS:
            values = by_variant[v]
            if not values:
                continue
            entry[v] = {
                "ratio": float(np.median(values)),
                "rounds": values,  # per round (and instance, with --instances)
                "min": min(values),
                "max": max(values),
                "within_round_sd": float(np.median(within[pair][v])),
                "wall_ratio": float(np.median(walls[pair][v])) if walls.get(pair, {}).get(v) else None,
                "verdict": verdict(values),
            }
        pairs[pair] = entry
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
    """One line per pair, then figure 8a's matrix (rounded)."""
    print(
        f"{report['device']} ({report['platform']}), wave {report['wave_size']}; {report['rounds']} rounds x "
        f"{report['runs']} interleaved runs; load average {report['load_average_1min'][0]:.1f} -> "
        f"{report['load_average_1min'][1]:.1f} on {report['cpus']} CPUs"
    )
    print("throughput relative to sequential = sequential time / fused time (> 1: fusion wins);")
    print("median over rounds [min..max of rounds] ±median within-round SD of per-run ratios, verdict")
    print(f"{'pair':<14}{'MFLOPs':>16} | {'rounded':^27} | {'unrounded':^27}")
    for pair, entry in report["pairs"].items():
        mf = "+".join(f"{x:.1f}" for x in entry["mflops"][0]) if entry["mflops"] else ""
        print(f"{pair:<14}{mf:>16} | {_cell(entry.get('rounded'))} | {_cell(entry.get('unrounded'))}")
    kinds = [k for k in KINDS if any(k in p.split("+") for p in report["pairs"])]
    print("\nfigure 8a (rounded, median over rounds):")
    print(f"{'':8}" + "".join(f"{k:>8}" for k in kinds))
    for a in kinds:
        cells = []
        for b in kinds:
            i, j = sorted((KINDS.index(a), KINDS.index(b)))
            entry = report["pairs"].get(f"{KINDS[i]}+{KINDS[j]}", {}).get("rounded")
            cells.append(f"{entry['ratio']:8.2f}" if entry else f"{'':>8}")
        print(f"{a:8}" + "".join(cells))
    counted = [e[v]["verdict"] for e in report["pairs"].values() for v in VARIANTS if v in e]
    print(
        f"\nverdicts: {counted.count('gain')} gains, {counted.count('loss')} losses, "
        f"{counted.count('-')} neither; {len(report['incorrect'])} incorrect fused kernels, "
        f"{len(report['refused'])} refused"
    )
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
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
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
