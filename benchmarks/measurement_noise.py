"""Benchmark: how steady the host CPU backend's measurements are on this machine.

Profiles N synthetic NAS networks in R rounds (a round profiles every network once, so one
network's profiles lie a round apart in time) and prints, for the median and the min statistic:

* the round-to-round spread of a network's end-to-end time and of its kernel sum (median over
  networks of the standard deviation of the log, i.e. roughly a relative SD);
* how far end-to-end time and kernel sum of the *same* profile disagree (the within-network SD
  of log(end-to-end / kernel sum), root mean square over networks): what a perfect kernel
  predictor could not explain;
* the coefficient of variation of the runs inside one profile (median).

A lab admin reads from it whether a machine is quiet enough to train predictors on; the
predictor benchmark's perfect-kernel bound follows the second number. Writes
``<var>/benchmarks/measurement_noise.json``.

    python benchmarks/measurement_noise.py                  # 40 networks x 3 rounds, 1 thread
    python benchmarks/measurement_noise.py --n 60 --rounds 5 --threads 2
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/measurement_noise.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.backends import cpu  # noqa: E402
from devicelab.backends.base import ProfileSettings  # noqa: E402
from devicelab.graph import nas  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "measurement_noise.json"
SEED = 7  # not the predictor benchmark's seed: other networks than its training set
STATISTICS = ("median", "min")


def profile_rounds(n: int, rounds: int, settings: ProfileSettings) -> list[list[dict[str, float]]]:
    """``[network][round]`` -> end-to-end and kernel-sum statistics of one profile."""
    device = cpu.discover()[0]
    graphs = nas.sample("synthetic", n, SEED)
    out: list[list[dict[str, float]]] = [[] for _ in graphs]
    for rnd in range(rounds):
        t0 = time.perf_counter()
        for i, g in enumerate(graphs):
            r = cpu.profile(device, g, settings)
            timed = [o.stats for o in r.ops if o.stats is not None]
            out[i].append(
                {
                    "e2e_median": r.e2e.median,
                    "e2e_min": r.e2e.min,
                    "kernels_median": float(sum(s.median for s in timed)),
                    "kernels_min": float(sum(s.min for s in timed)),
                    "cv": r.e2e.cv,
                }
            )
        print(f"round {rnd + 1}/{rounds}: {n} networks in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def noise(per_network: list[list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    """The spreads the module's docstring lists, per statistic (fractions)."""
    result: dict[str, dict[str, float]] = {}
    for st in STATISTICS:
        e = np.log([[p[f"e2e_{st}"] for p in rounds] for rounds in per_network])
        k = np.log([[p[f"kernels_{st}"] for p in rounds] for rounds in per_network])
        result[st] = {
            "e2e_round_sd": float(np.median(np.std(e, axis=1, ddof=1))),
            "kernel_sum_round_sd": float(np.median(np.std(k, axis=1, ddof=1))),
            "e2e_vs_kernel_sum_sd": float(np.sqrt(np.mean(np.var(e - k, axis=1, ddof=1)))),
        }
    result["runs"] = {"median_cv": float(np.median([p["cv"] for rounds in per_network for p in rounds]))}
    return result


def main() -> None:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40, help="synthetic networks (default 40)")
    ap.add_argument("--rounds", type=int, default=3, help="profiles per network, a round apart (default 3)")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if args.rounds < 2:
        raise SystemExit("--rounds must be at least 2: the spread is between rounds")
    online = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    cores = (
        tuple(online[-args.threads :]) if len(online) >= args.threads else ()
    )  # the last cores, as the predictor benchmark
    settings = ProfileSettings(threads=args.threads, cores=cores, runs=args.runs, warmup_runs=args.warmup)
    started = time.perf_counter()
    result = {
        "settings": {**vars(args), "cores": list(cores), "blocks": cpu.BLOCKS},
        "platform": platform.platform(),
        "noise": noise(profile_rounds(args.n, args.rounds, settings)),
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"\nhost CPU measurement noise: {args.n} networks x {args.rounds} rounds, {args.threads} thread(s), %")
    print(f"{'statistic':10} {'e2e round SD':>13} {'kernel sum SD':>14} {'e2e vs kernels':>15}")
    for st in STATISTICS:
        v = result["noise"][st]
        print(
            f"{st:10} {100 * v['e2e_round_sd']:13.2f} {100 * v['kernel_sum_round_sd']:14.2f} "
            f"{100 * v['e2e_vs_kernel_sum_sd']:15.2f}"
        )
    print(f"runs inside one profile: median CV {100 * result['noise']['runs']['median_cv']:.2f} %")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print(f"\nwrote {OUT.relative_to(ROOT)} ({result['seconds']} s)")


if __name__ == "__main__":
    main()
