"""Benchmark: the library predicting 1,000 architectures at once, graphs built or read included.

Two predictors, both GBDT with the quick search (``--methods`` for others): the host CPU one
(trained on cached measurements of ``predictor_accuracy.py`` when present, else on 30 networks
measured here) and a TFLite GPU one trained on the qed data (Mali G76, s10). Every round draws
fresh architectures (a new seed: no answer of an earlier round can be reused; the per-operator
memo tables are warm after the first round, as in a server that has answered before) and times,
in one process with the collector paused (as the server answers a batch), in a rotating order:

* ``synthetic built``: ``nas.sample`` builds 1,000 synthetic NAS graphs and ``predict`` answers them;
* ``graph JSON``: ``batch.answer_items`` reads 1,000 graph JSON documents and answers them (the
  API's work for graph JSON in one process, its HTTP and JSON text aside);
* ``NB-201``: ``answer_items`` of 1,000 cell strings: kernels deduced on three cells per stage
  (``nb201_kernels``), predicted;
* ``NB-201 five-cell graphs``: the same cells built whole by ``nb201_cells``, deduced and
  ``predict``-ed: the reference, how NB-201 batches were answered before ``nb201_kernels``;
* ``NB-201 general builder``: the same cells built by ``nb201.from_string`` and ``predict``-ed:
  how they were answered before ``nb201_cells``.

Every round checks that the three NB-201 paths answer the same latencies to the last bit.
``--all-cells`` also compares, for each predictor's deducer, the kernels ``nb201_kernels`` gives
for every one of the 15,625 cells with the five-cell graph's (types and features, in order).

Prints, per predictor and path, the median and the spread (min-max) over the rounds, the ratios
NB-201 / five-cell graphs and NB-201 / general builder (median of the per-round ratios with a
bootstrap 95 % interval), the load average, and the goal each path is held to (< 0.5 s for 1,000:
the API's goal, which it cannot meet unless the library does). Writes ``predict_batch.json`` under
``$LATENCYLAB_VAR_DIR/benchmarks/`` (default ``var/benchmarks/``)::

    .venv/bin/python benchmarks/predict_batch.py [--rounds 7] [--all-cells]
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/predict_batch.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.graph import graph_to_dict, nas  # noqa: E402
from devicelab.graph.nas import nb201, nb201_cells  # noqa: E402
from devicelab.measure.stats import median_interval  # noqa: E402
from devicelab.predict import nb201_kernels, qed  # noqa: E402
from devicelab.predict.batch import answer_items  # noqa: E402
from devicelab.predict.cpu_learning import learn_cpu_deducer  # noqa: E402
from devicelab.predict.cpu_probes import probe_graphs  # noqa: E402
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer  # noqa: E402
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor  # noqa: E402
from devicelab.predict.records import ProfileRecord, record_from_result  # noqa: E402

N = 1000
GOAL_S = 0.5


def var_dir() -> Path:
    """Where benchmarks write: ``$LATENCYLAB_VAR_DIR/benchmarks`` (default ``<checkout>/var/benchmarks``)."""
    return Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var").resolve() / "benchmarks"


def spread(values: list[float]) -> dict[str, Any]:
    """Median and range of timings (s)."""
    return {
        "n": len(values),
        "median_s": round(statistics.median(values), 4),
        "min_s": round(min(values), 4),
        "max_s": round(max(values), 4),
        "values_s": [round(v, 4) for v in values],
    }


def ratio(numerator: list[float], denominator: list[float]) -> dict[str, Any]:
    """Per-round ratios: their median and its bootstrap 95 % interval."""
    ratios = [a / b for a, b in zip(numerator, denominator, strict=True)]
    low, high = median_interval(ratios)
    return {"median": round(statistics.median(ratios), 3), "ci95": [round(low, 3), round(high, 3)]}


def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds of one call with the collector paused (as the server answers a batch), and its result."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        out = fn()
        return time.perf_counter() - start, out
    finally:
        gc.enable()


def cpu_records() -> list[ProfileRecord]:
    """Cached 1-thread records of the accuracy benchmark, else 30 networks measured now."""
    cache = var_dir() / "cache" / "predictor_accuracy"
    dirs = sorted(cache.glob("*-t1-r*")) if cache.exists() else []
    recs = [
        ProfileRecord.from_dict(json.loads(p.read_text()))
        for d in dirs
        for p in sorted(d.glob("synthetic-*.json"))[:300]
    ]
    if recs:
        probes = [
            ProfileRecord.from_dict(json.loads(p.read_text()))
            for d in sorted(cache.glob("*-t1-r1"))
            for p in sorted(d.glob("probe-*.json"))
        ]
        return recs + probes
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings

    device = cpu.discover()[0]
    settings = ProfileSettings(threads=1, runs=3, warmup_runs=1)
    graphs = nas.sample("synthetic", 30, 1) + probe_graphs()
    return [record_from_result(g, cpu.profile(device, g, settings)) for g in graphs]


def predictors(methods: list[str]) -> dict[str, ScenarioPredictor]:
    """The host CPU and the qed s10 predictors of each method."""
    recs = cpu_records()
    train = [r for r in recs if not r.graph.name.startswith("probe")]
    deducer = learn_cpu_deducer(recs)
    samples = deducer.samples(train)
    qed_samples = qed.gpu_samples("s10")
    out = {}
    for method in methods:
        out[f"cpu/{method}"] = train_predictor(
            samples, deducer, Scenario("cpu", "host"), method, search="fast", mlp_trials=1
        )
        out[f"tflite_gpu/{method}"] = train_predictor(
            qed_samples,
            TfliteGpuDeducer("mali"),
            Scenario("tflite_gpu", "s10"),
            method,
            search="fast",
            mlp_trials=1,
            overhead_kinds=("elementwise", "reshape", "split", "pad"),
        )
    return out


PATHS = ("synthetic built", "graph JSON", "NB-201", "NB-201 five-cell graphs", "NB-201 general builder")
REFERENCES = ("NB-201 five-cell graphs", "NB-201 general builder")


def one_round(p: ScenarioPredictor, seed: int, order: list[str]) -> dict[str, float]:
    """Every path once on fresh architectures drawn with ``seed``, in ``order``."""
    docs = [{"name": f"g{i}", "graph": graph_to_dict(g)} for i, g in enumerate(nas.sample("synthetic", N, seed))]
    cells = nb201.sample_strings(N, seed)

    def synthetic() -> Any:
        return p.predict(nas.sample("synthetic", N, seed + 10**6), on_missing="zero")

    def graph_json() -> Any:
        return answer_items(p, list(enumerate(docs)))

    def fast() -> Any:
        return answer_items(p, [(i, {"name": f"c{i}", "nb201": c}) for i, c in enumerate(cells)])

    def five_cells() -> Any:
        graphs = [nb201_cells.from_cell(nb201.parse(c), name=f"c{i}") for i, c in enumerate(cells)]
        return p.predict(graphs, on_missing="zero")

    def general() -> Any:
        return p.predict([nb201.from_string(c, name=f"c{i}") for i, c in enumerate(cells)], on_missing="zero")

    paths = {
        "synthetic built": synthetic,
        "graph JSON": graph_json,
        "NB-201": fast,
        "NB-201 five-cell graphs": five_cells,
        "NB-201 general builder": general,
    }
    seconds: dict[str, float] = {}
    answers: dict[str, Any] = {}
    for name in order:
        seconds[name], answers[name] = timed(paths[name])
    # the fast paths answer exactly what the general one did
    answered, errors = answers["NB-201"]
    assert not errors, errors[:3]
    for reference in REFERENCES:
        assert [answered[i]["latency_ms"] for i in range(N)] == [x.latency_ms for x in answers[reference]], reference
    return seconds


def check_all_cells(preds: dict[str, ScenarioPredictor]) -> dict[str, Any]:
    """Per predictor: the cells (of all 15,625) whose ``nb201_kernels`` kernels differ from the
    five-cell graph's, and how long the comparison took."""
    cells = list(itertools.product(nb201.OPS, repeat=len(nb201.EDGES)))
    out = {}
    for name, p in preds.items():
        start = time.perf_counter()
        differ = nb201_kernels.agrees(p.deducer, cells)  # type: ignore[arg-type]
        out[name] = {"cells": len(cells), "different": len(differ), "examples": differ[:5]}
        print(
            f"{name}: nb201_kernels vs five-cell graphs on all {len(cells)} cells: {len(differ)} different "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )
    return out


def main() -> None:
    """Run the benchmark, print the table and write the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--methods", nargs="+", default=["gbdt"], choices=["lasso", "rf", "gbdt", "mlp"])
    parser.add_argument("--all-cells", action="store_true", help="compare nb201_kernels on all 15,625 cells first")
    args = parser.parse_args()
    load_before = load_average()
    preds = predictors(args.methods)
    all_cells = check_all_cells(preds) if args.all_cells else None
    rng = random.Random(5)
    times: dict[str, dict[str, list[float]]] = {name: {path: [] for path in PATHS} for name in preds}
    for p in preds.values():  # a round to warm imports and memo tables, not counted
        one_round(p, 999, list(PATHS))
    loads = []
    for r in range(args.rounds):
        for name, p in preds.items():
            order = list(PATHS)
            rng.shuffle(order)
            for path, s in one_round(p, 1000 + r, order).items():
                times[name][path].append(s)
        loads.append(load_average()[0])
        print(f"round {r + 1}/{args.rounds} done, load average {loads[-1]}", file=sys.stderr, flush=True)
    result: dict[str, Any] = {
        "architectures": N,
        "rounds": args.rounds,
        "goal_s": GOAL_S,
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_rounds": loads,
        "all_cells": all_cells,
        "results": {},
    }
    print(
        f"{N} architectures per batch, {args.rounds} rounds of fresh architectures, one process; "
        f"load average {min(loads):.1f}-{max(loads):.1f} during the rounds"
    )
    print("| predictor | path | median s | min-max s | goal < 0.5 s |")
    print("| --- | --- | --- | --- | --- |")
    for name in preds:
        rows: dict[str, Any] = {}
        for path in PATHS:
            st = rows[path] = spread(times[name][path])
            verdict = "" if path in REFERENCES else ("met" if st["median_s"] < GOAL_S else "not met")
            print(f"| {name} | {path} | {st['median_s']:.3f} | {st['min_s']:.3f}-{st['max_s']:.3f} | {verdict} |")
        for reference in REFERENCES:
            rows[f"NB-201 / {reference}"] = ratio(times[name]["NB-201"], times[name][reference])
        result["results"][name] = rows
    for name, rows in result["results"].items():
        for reference in REFERENCES:
            r = rows[f"NB-201 / {reference}"]
            print(f"{name}: NB-201 (nb201_kernels) / {reference} = {r['median']} (95 % interval {r['ci95']})")
    out = var_dir() / "predict_batch.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
