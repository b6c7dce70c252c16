"""Benchmark: predicting the end-to-end latency of 1,000 synthetic NAS architectures at once.

Predictors: the host CPU one (trained on cached measurements of ``predictor_accuracy.py`` when
present, else on 30 networks measured here with 3 runs) and a TFLite GPU one trained on the qed
data (Mali G76), each with every method. Times ``predict(graphs)`` (kernel deduction, features,
models) on 1,000 prebuilt graphs, several repetitions; building the graphs is timed apart.
Prints the numbers and writes ``var/benchmarks/predict_batch.json``. Target: well under 1 s.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/predict_batch.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.graph import nas  # noqa: E402
from devicelab.measure.stats import summarize  # noqa: E402
from devicelab.predict import qed  # noqa: E402
from devicelab.predict.cpu_learning import learn_cpu_deducer  # noqa: E402
from devicelab.predict.cpu_probes import probe_graphs  # noqa: E402
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer  # noqa: E402
from devicelab.predict.models import METHODS  # noqa: E402
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor  # noqa: E402
from devicelab.predict.records import ProfileRecord, record_from_result  # noqa: E402

N = 1000
REPETITIONS = 5
TARGET_S = 1.0
OUT = ROOT / "var" / "benchmarks" / "predict_batch.json"
CACHE = ROOT / "var" / "benchmarks" / "cache" / "predictor_accuracy"


def cpu_records() -> list[ProfileRecord]:
    """Cached 1-thread records of the accuracy benchmark, else 30 networks measured now."""
    dirs = sorted(CACHE.glob("*-t1-r*")) if CACHE.exists() else []
    recs = [
        ProfileRecord.from_dict(json.loads(p.read_text()))
        for d in dirs
        for p in sorted(d.glob("synthetic-*.json"))[:300]
    ]
    if recs:
        probes = [
            ProfileRecord.from_dict(json.loads(p.read_text()))
            for d in sorted(CACHE.glob("*-t1-r1"))
            for p in sorted(d.glob("probe-*.json"))
        ]
        return recs + probes
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings

    device = cpu.discover()[0]
    settings = ProfileSettings(threads=1, runs=3, warmup_runs=1)
    graphs = nas.sample("synthetic", 30, 1) + probe_graphs()
    return [record_from_result(g, cpu.profile(device, g, settings)) for g in graphs]


def calibration_s() -> float:
    """Seconds for a fixed pure-Python workload (a million dict stores): how fast, and how busy,
    this machine is; a typical idle laptop core takes about 0.05 s."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        d: dict[int, int] = {}
        for i in range(1_000_000):
            d[i % 100] = i
        times.append(time.perf_counter() - t0)
    return min(times)


def time_predict(pred: ScenarioPredictor, graphs: list[Any]) -> dict[str, Any]:
    """Seconds for ``predict(graphs)``, over several repetitions."""
    pred.predict(graphs[:10])  # warm caches (imports, memo tables) as a server would be
    times = []
    for _ in range(REPETITIONS):
        t0 = time.perf_counter()
        out = pred.predict(graphs)
        times.append(time.perf_counter() - t0)
    s = summarize(times)
    return {
        "median_s": s.median,
        "min_s": s.min,
        "max_s": s.max,
        "per_network_us": s.median / len(graphs) * 1e6,
        "predicted": len(out),
    }


def main() -> None:
    """Run the benchmark."""
    t0 = time.perf_counter()
    graphs = nas.sample("synthetic", N, 4242)
    build_s = time.perf_counter() - t0
    ops = sum(len(g.operators) for g in graphs)
    result: dict[str, Any] = {
        "networks": N,
        "operators": ops,
        "build_graphs_s": build_s,
        "platform": platform.platform(),
        "results": {},
    }
    recs = cpu_records()
    train = [r for r in recs if not r.graph.name.startswith("probe")]
    deducer = learn_cpu_deducer(recs)
    samples = deducer.samples(train)
    qed_samples = qed.gpu_samples("s10")
    for method in METHODS:
        cpu_pred = train_predictor(samples, deducer, Scenario("cpu", "host"), method, search="fast", mlp_trials=1)
        gpu_pred = train_predictor(
            qed_samples,
            TfliteGpuDeducer("mali"),
            Scenario("tflite_gpu", "s10"),
            method,
            search="fast",
            mlp_trials=1,
            overhead_kinds=("elementwise", "reshape", "split", "pad"),
        )
        result["results"][f"cpu/{method}"] = time_predict(cpu_pred, graphs)
        result["results"][f"tflite_gpu/{method}"] = time_predict(gpu_pred, graphs)
    result["python_calibration_s"] = calibration_s()
    worst = max(r["median_s"] for r in result["results"].values())
    result["worst_median_s"] = worst
    result["target_s"] = TARGET_S
    result["meets_target"] = worst < TARGET_S
    print(f"{N} synthetic networks, {ops} operators (building the graphs: {build_s:.2f} s, not timed below)")
    print(f"{'predictor':22} {'median s':>9} {'min s':>8} {'us/network':>11}")
    for name, r in result["results"].items():
        print(f"{name:22} {r['median_s']:9.3f} {r['min_s']:8.3f} {r['per_network_us']:11.0f}")
    print(f"worst median {worst:.3f} s; target < {TARGET_S} s: {'met' if worst < TARGET_S else 'NOT met'}")
    print(f"machine calibration: 1M dict stores in {result['python_calibration_s']:.3f} s (idle laptop core ~0.05 s)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
