"""Benchmark: does the regression detection find level shifts, and how often does it cry wolf?

Two parts:

1. **A real series, measured here.** A zoo model is profiled on the host CPU ``--real`` times
   with two threads, then as many times with one (a real slowdown with a known cause and known
   operators). The online detection must flag the first one-thread result (within its
   confirmation delay) and name the changed setting and the operators that moved; the offline
   change points must find the same place. The two-thread half also measures this machine's
   noise: the between-run spread of a result's median (robust sigma of the logs), the CV within
   a result, and the share of results flagged noisy (the bursts).
2. **Simulated series where the truth is known** (``devicelab.history.simulate``): ``--series``
   series of ``--length`` results per setting, half with a shift of each size at a random place,
   half flat, at the measured noise and at fixed noise levels. Prints recall (a shift flagged
   within 6 results), false alarms per 100 results, precision and the delay for the online
   detection and the offline change points.

The detection's parameters were chosen on seed 1 (``--seed 1``), never on the seeds reported
(the default, 1000). Writes ``$LATENCYLAB_VAR_DIR/benchmarks/regression_detection.json``.

    python benchmarks/regression_detection.py                    # 12+12 real results, 200 series
    python benchmarks/regression_detection.py --real 0 --series 400
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from devicelab.history.changepoints import change_points  # noqa: E402
from devicelab.history.detect import DetectionPolicy, scan  # noqa: E402
from devicelab.history.series import Point, log_levels, point_from_result, robust_sigma  # noqa: E402
from devicelab.history.simulate import Noise, offline_detector, online_detector, score, simulate  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "regression_detection.json"
SHIFTS = (0.05, 0.10, 0.20)
FIXED_NOISE = (0.01, 0.02, 0.03)


def real_series(model: str, n: int, runs: int) -> list[Point]:
    """``n`` results with two threads, then ``n`` with one."""
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings
    from devicelab.graph import zoo

    device = cpu.discover()[0]
    graph = zoo.build(model)
    points: list[Point] = []
    for threads in (2, 1):
        settings = ProfileSettings(threads=threads, runs=runs, warmup_runs=3)
        for _ in range(n):
            points.append(point_from_result(f"t{threads}-{len(points)}", cpu.profile(device, graph, settings)))
    return points


def measured_noise(points: list[Point], samples: int) -> Noise:
    """The noise of one level's results: between-run sigma of the logged medians, within-run CV,
    share flagged noisy."""
    clean = [p for p in points if p.clean]
    between = robust_sigma(log_levels(clean)) if len(clean) > 2 else 0.02
    within = float(np.median([np.std(p.samples_ms, ddof=1) / np.mean(p.samples_ms) for p in points]))
    bursts = 1 - len(clean) / len(points)
    return Noise(between_cv=max(between, 0.002), within_cv=within, samples=samples, burst_rate=bursts)


def simulated(noise: Noise, shift: float, count: int, length: int, seed: int) -> dict[str, Any]:
    """Online and offline scores on ``count`` shifted and ``count`` flat series."""
    rng = np.random.default_rng(seed)
    shifted = [
        simulate(rng, length, noise, int(rng.integers(length // 3, 2 * length // 3)), shift * rng.choice([-1, 1]))
        for _ in range(count)
    ]
    flat = [simulate(rng, length, noise) for _ in range(count)]
    out: dict[str, Any] = {}
    for name, detector in (("online", online_detector()), ("offline", offline_detector())):
        t0 = time.perf_counter()
        found = score(shifted, detector)
        quiet = score(flat, detector)
        everything = score([*shifted, *flat], detector)
        out[name] = {
            "recall": found.recall,
            "false_alarms_per_100": everything.false_alarms_per_100,
            "false_alarms_per_100_flat": quiet.false_alarms_per_100,
            "precision": everything.precision,
            "delay_median": float(np.median(found.delays)) if found.delays else None,
            "delay_p90": float(np.percentile(found.delays, 90)) if found.delays else None,
            "seconds": time.perf_counter() - t0,
        }
    return out


def main() -> int:
    """Run both parts, print, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="mobilenet_v1_0.25")
    ap.add_argument("--real", type=int, default=12, help="results per thread count of the real series (0: skip)")
    ap.add_argument("--runs", type=int, default=20, help="warm runs per real result")
    ap.add_argument("--series", type=int, default=200, help="simulated series per setting (half shifted)")
    ap.add_argument("--length", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args()
    report: dict[str, Any] = {"policy": DetectionPolicy().__dict__, "load_average": os.getloadavg(), "seed": args.seed}
    noises = [("fixed", Noise(between_cv=b, samples=args.runs)) for b in FIXED_NOISE]
    if args.real:
        points = real_series(args.model, args.real, args.runs)
        noise = measured_noise(points[: args.real], args.runs)
        noises.insert(0, ("measured here", noise))
        flags = scan(points)
        cps = change_points(points)
        report["real"] = {
            "model": args.model,
            "medians_ms": [p.central_ms for p in points],
            "clean": [p.clean for p in points],
            "first_one_thread_result": args.real,
            "flags": [
                {
                    "at": f.at,
                    "confirmed_by": list(f.confirmed_by),
                    "change": f.change,
                    "changed": {k: [str(a), str(b)] for k, (a, b) in f.changed.items()},
                    "operators": [[s.name, s.before_ms, s.after_ms] for s in f.operators[:5]],
                }
                for f in flags
            ],
            "change_points": [{"at": c.at, "index": c.index, "change": c.change} for c in cps],
            "noise": noise.__dict__,
        }
        print(f"real series: {args.model}, {args.real} results with 2 threads then {args.real} with 1")
        print(
            f"  measured noise: between-run {noise.between_cv:.2%}, within-run CV {noise.within_cv:.2%}, "
            f"noisy results {noise.burst_rate:.0%} (load average {os.getloadavg()[0]:.2f})"
        )
        for f in flags:
            moved = ", ".join(f"{s.name} {s.before_ms:.3f}->{s.after_ms:.3f} ms" for s in f.operators[:3])
            print(
                f"  flag at {f.at} ({f.change:+.1%}, confirmed by {f.confirmed_by[-1]}); changed: "
                f"{', '.join(f.changed) or 'nothing'}; operators: {moved}"
            )
        for c in cps:
            print(f"  change point at {c.at} ({c.change:+.1%})")
    rows = []
    for label, noise in noises:
        for shift in SHIFTS:
            result = simulated(noise, shift, args.series // 2, args.length, args.seed)
            rows.append({"noise": label, "between_cv": noise.between_cv, "shift": shift, **result})
            for name in ("online", "offline"):
                r = result[name]
                print(
                    f"{label:>13} between {noise.between_cv:5.2%} shift {shift:4.0%} {name:>7}: recall "
                    f"{r['recall']:.2f}  false alarms/100 {r['false_alarms_per_100']:.2f} "
                    f"(flat {r['false_alarms_per_100_flat']:.2f})  precision {r['precision']:.2f}  "
                    f"delay median {r['delay_median']}  p90 {r['delay_p90']}"
                )
    report["simulated"] = rows
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
