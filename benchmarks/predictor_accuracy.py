"""Benchmark: accuracy of the latency predictors, as the paper's figures 13, 18 and 21 report it.

(a) qed GPU data (real phones, ``../shared/data``): kernel deduction against the kernel names
    each phone recorded (share of operators whose deduced kernel matches, per device; fused
    chains of zoo networks against their qed counterparts), then cross-validation grouped by
    network: end-to-end and per-kernel-type MAPE per device and method, with the paper's
    constant overhead and with the affine one.
(b) host CPU (ONNX Runtime, 1 and 2 threads): N synthetic NAS samples, the zoo, and the probe
    graphs are profiled (cached under ``<var>/benchmarks/cache/`` so re-runs are cheap); the
    fusion rules are learned from the training samples and the probes; then
    synthetic -> synthetic (train on up to 900, test on the last 100), synthetic -> zoo, and
    training sizes 30 / 100 / 900, per method.

Prints the tables and writes ``<var>/benchmarks/predictor_accuracy.json``. Targets (issue #6):
GBDT end-to-end MAPE <= 2.4 % synthetic -> synthetic on the host CPU with 900 training networks;
Lasso trained on 30 <= 6.5 % on the zoo; qed GPU end-to-end MAPE per device <= 8.3 %.

    python benchmarks/predictor_accuracy.py                  # N = 300, fast searches
    python benchmarks/predictor_accuracy.py --n-synthetic 1000 --search paper
    python benchmarks/predictor_accuracy.py --measure-only   # fill the cache, no training
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/predictor_accuracy.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.predict import qed  # noqa: E402
from devicelab.predict.cpu_probes import probe_graphs  # noqa: E402
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer  # noqa: E402
from devicelab.predict.deducers import RecordDeducer, learn_deducer  # noqa: E402
from devicelab.predict.errors import PredictorError  # noqa: E402
from devicelab.predict.evaluate import (  # noqa: E402
    OverheadReport,
    grouped_cv,
    holdout_steps,
    oracle_bound,
    overhead_reports,
    training_sizes,
)
from devicelab.predict.models import METHODS  # noqa: E402
from devicelab.predict.noise import noise_floor  # noqa: E402
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor, with_overhead  # noqa: E402
from devicelab.predict.records import ProfileRecord, merge_rounds, record_from_result  # noqa: E402
from devicelab.predict.samples import Sample  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "predictor_accuracy.json"
CACHE = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "cache" / "predictor_accuracy"
SYNTHETIC_SEED = 2023
TEST_SIZE = 100
TRAIN_SIZES = (30, 100, 900)


def log(msg: str) -> None:
    """Progress to stderr (tables go to stdout)."""
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# (a) qed GPU data


def qed_deduction() -> dict[str, Any]:
    """Kernel selection per operator row, and fused chains of zoo counterparts, per device."""
    rows = qed.read_ops()
    out: dict[str, Any] = {"kernel_match": {}, "fusion_match": {}}
    for dev, (_, family) in qed.DEVICES.items():
        m, n = qed.kernel_match(rows, dev, family)
        out["kernel_match"][dev] = {"matched": m, "rows": n, "share": m / n}
        out["fusion_match"][dev] = qed.fusion_match(rows, dev, family)
    return out


_TRAINED: dict[tuple[str, str, tuple[str, ...]], ScenarioPredictor] = {}


def _qed_trainer(
    family: str, scenario: Scenario, method: str, overhead: str, search: str, seed: int, mlp_trials: int
) -> Callable[[Sequence[Sample]], ScenarioPredictor]:
    """Trains on a fold; the other overhead models reuse the fold's kernel models (same splits,
    same seed) and only refit the overhead, as ``train_predictor(overhead=...)`` would."""

    def train(samples: Sequence[Sample]) -> ScenarioPredictor:
        key = (scenario.device, method, tuple(s.name for s in samples))
        base = _TRAINED.get(key)
        if base is None:
            base = _TRAINED[key] = train_predictor(
                samples,
                TfliteGpuDeducer(family),
                scenario,
                method,
                seed=seed,
                search=search,
                overhead_kinds=qed.OVERHEAD_KINDS,
                mlp_trials=mlp_trials,
            )
        return base if overhead == "constant" else with_overhead(base, samples, overhead)

    return train


def qed_accuracy(methods: list[str], search: str, seed: int, mlp_trials: int) -> dict[str, Any]:
    """Grouped 5-fold CV by network per device, method and overhead model."""
    rows, e2e = qed.read_ops(), qed.read_e2e()
    out: dict[str, Any] = {}
    for dev, (gpu, family) in qed.DEVICES.items():
        samples = qed.gpu_samples(dev, rows, e2e)
        scenario = Scenario("tflite_gpu", dev, precision="fp16", runtime="tflite gpu delegate (qed data)", gpu=gpu)
        for method in methods:
            for overhead in ("constant", "affine", "calibrated"):
                t0 = time.perf_counter()
                rep = grouped_cv(
                    samples,
                    _qed_trainer(family, scenario, method, overhead, search, seed, mlp_trials),
                    folds=5,
                    seed=seed,
                )
                out.setdefault(dev, {}).setdefault(method, {})[overhead] = {
                    "e2e_mape": rep.e2e_mape,
                    "kernel_mape": rep.kernel_mape,
                    "kernel_count": rep.kernel_count,
                    "networks": rep.n_networks,
                    "seconds": round(time.perf_counter() - t0, 1),
                }
                log(f"qed {dev} {method} {overhead}: e2e {100 * rep.e2e_mape:.2f}%")
    return out


# ---------------------------------------------------------------------------------------------
# (b) host CPU


def _cache_path(
    device: str, threads: int, cores: Sequence[int], runs: int, rnd: int, name: str, protocol: str = ""
) -> Path:
    dev = hashlib.sha256(device.encode()).hexdigest()[:12]
    pin = "-c" + "_".join(str(c) for c in cores) if cores else ""
    tag = f"-{protocol}" if protocol else ""
    return CACHE / f"{dev}-t{threads}{pin}-r{runs}{tag}" / f"round{rnd}" / f"{name.replace('/', '_')}.json"


def consistent(rec: ProfileRecord, max_cv: float, max_gap: float) -> bool:
    """A measurement undisturbed by other load: steady end-to-end runs, and end-to-end and
    per-operator phases (run one after the other) that agree."""
    cv, ratio = rec.consistency()
    return cv <= max_cv and abs(ratio - 1) <= max_gap


def measure(
    graphs: list[Any],
    backend: str,
    threads: int,
    cores: Sequence[int],
    runs: int,
    warmup: int,
    rounds: int,
    statistic: str,
) -> list[ProfileRecord]:
    """Profile each graph in ``rounds`` rounds (``measure_rounds``) and merge each graph's rounds
    (``merge_rounds``: every row from the round it was fastest in)."""
    per_graph = measure_rounds(graphs, backend, threads, cores, runs, warmup, rounds)
    return [merge_rounds(recs, statistic) for recs in per_graph]


def measure_rounds(
    graphs: list[Any],
    backend: str,
    threads: int,
    cores: Sequence[int],
    runs: int,
    warmup: int,
    rounds: int,
) -> list[list[ProfileRecord]]:
    """Profile each graph on the host CPU in ``rounds`` rounds (or read them from the cache): one
    list of records per graph, in round order.

    The machine is shared and interference comes in bursts of seconds, so a round profiles
    every graph once before the next round starts: the rounds of one graph lie minutes apart,
    and a burst rarely hits all of them."""
    from devicelab.backends.base import ProfileSettings
    from devicelab.backends.registry import backend_for

    runner = backend_for(backend)
    device = runner.discover()[0]
    settings = ProfileSettings(backend=backend, threads=threads, cores=tuple(cores), runs=runs, warmup_runs=warmup)
    # With one thread the CPU backend's timed runs alternate between its two sessions in blocks;
    # the cache key names that protocol so profiles of the older one (plain runs first, then
    # profiled ones) are never mixed in. With more threads the phases run one after the other.
    protocol = ""
    if backend == "cpu" and threads == 1:
        from devicelab.backends import cpu

        protocol = f"alt{cpu.BLOCKS}"
    per_graph: list[list[ProfileRecord]] = [[] for _ in graphs]
    stats = {"cached": 0, "measured": 0}
    t0 = time.perf_counter()
    for rnd in range(rounds):
        for i, g in enumerate(graphs):
            path = _cache_path(device.identity, threads, cores, runs, rnd, g.name, protocol)
            rec = None
            if path.exists():
                try:
                    rec = ProfileRecord.from_dict(json.loads(path.read_text()))
                except (ValueError, KeyError, PredictorError):
                    rec = None  # a broken cache entry is measured again
                if rec is not None and rec.graph != g:
                    rec = None  # a graph of that name that has changed since (e.g. the probes)
                    stats["stale"] = stats.get("stale", 0) + 1
                elif rec is not None:
                    stats["cached"] += 1
            if rec is None:
                rec = record_from_result(g, runner.profile(device, g, settings))
                stats["measured"] += 1
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(rec.to_dict()))
                if stats["measured"] % 50 == 0:
                    log(
                        f"  round {rnd + 1}/{rounds}, {i + 1}/{len(graphs)} ({threads} thread(s)), "
                        f"{time.perf_counter() - t0:.0f} s, {stats}"
                    )
            per_graph[i].append(rec)
    log(f"  {len(graphs)} graphs x {rounds} rounds, {threads} thread(s): {stats}")
    return per_graph


def _cores_for(threads: int, how: str) -> tuple[int, ...]:
    """The cores ``threads`` threads are pinned to: the last ones (leaving core 0, where the OS
    and other work tend to run, for last), or none."""
    if how == "any":
        return ()
    if how != "last":
        raise SystemExit(f"--cores must be 'last' or 'any', not {how!r}")
    online = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return tuple(online[-threads:]) if len(online) >= threads else ()


def cpu_graphs(n_synthetic: int, zoo_names: str = "all") -> tuple[list[Any], list[Any], list[Any]]:
    """Synthetic samples, zoo networks (all, or the comma-separated names), probe graphs."""
    from devicelab.graph import nas, zoo

    synthetic = nas.sample("synthetic", n_synthetic, SYNTHETIC_SEED)
    names = sorted(zoo.entries()) if zoo_names == "all" else [n for n in zoo_names.split(",") if n]
    zoo_graphs = [zoo.build(name) for name in names]
    return synthetic, zoo_graphs, probe_graphs()


def _method_entry(by: dict[str, OverheadReport]) -> dict[str, Any]:
    """One method's results at one training size, as ``predictor_accuracy.json`` stores them."""
    const, affine, cal = (by[o].reports for o in ("constant", "affine", "calibrated"))
    calibrated = by["calibrated"].predictor
    return {
        "synthetic": {"e2e_mape": const["synthetic"].e2e_mape, "kernel_mape": const["synthetic"].kernel_mape},
        "zoo": {
            "e2e_mape": const["zoo"].e2e_mape,
            "kernel_mape": const["zoo"].kernel_mape,
            "per_network": {n: [p, m] for n, p, m in const["zoo"].predictions},
        },
        "affine": {
            "synthetic": {"e2e_mape": affine["synthetic"].e2e_mape},
            "zoo": {"e2e_mape": affine["zoo"].e2e_mape},
        },
        "calibrated": {
            "synthetic": {"e2e_mape": cal["synthetic"].e2e_mape},
            "zoo": {"e2e_mape": cal["zoo"].e2e_mape, "per_network": {n: [p, m] for n, p, m in cal["zoo"].predictions}},
            "a_b_c_t": [
                calibrated.kernel_scale,
                calibrated.kernel_power,
                calibrated.per_kernel_ms,
                calibrated.t_overhead_ms,
            ],
        },
        "t_overhead_ms": by["constant"].predictor.t_overhead_ms,
    }


def host_accuracy(
    records: dict[str, list[ProfileRecord]],
    backend: str,
    threads: int,
    methods: list[str],
    search: str,
    seed: int,
    statistic: str,
    mlp_trials: int,
) -> dict[str, Any]:
    """Synthetic -> synthetic and synthetic -> zoo on this machine (the CPU through ONNX Runtime,
    or the OpenCL backend), per training size and method: ``devicelab.predict.evaluate``'s holdout
    protocol with the last synthetic networks and the zoo held out."""
    syn, zoo_recs, probes = records["synthetic"], records["zoo"], records["probes"]
    n_test = min(TEST_SIZE, max(1, len(syn) // 5))
    test, pool = syn[-n_test:], syn[:-n_test]
    sizes = training_sizes(len(pool), TRAIN_SIZES, whole=False)
    out: dict[str, Any] = {
        "n_synthetic": len(syn),
        "n_test": n_test,
        "n_zoo": len(zoo_recs),
        "sizes": sizes,
        "statistic": statistic,
    }
    r0 = zoo_recs[0] if zoo_recs else syn[0]
    cores = tuple(int(c) for c in r0.settings.get("cores", ()))
    scenario = Scenario(backend, r0.device, threads=threads, cores=cores, precision="fp32", runtime=r0.runtime)

    def learn(recs: Sequence[ProfileRecord]) -> RecordDeducer:
        return learn_deducer(backend, recs, probes, seed=seed)

    for step in holdout_steps(pool, {"synthetic": test, "zoo": zoo_recs}, learn, sizes, statistic):
        size = step.n
        agreement = {}  # none for a deducer that is the backend's own plan (OpenCL): it agrees by construction
        for key, where in (("synthetic_test", "synthetic"), ("zoo", "zoo")):
            found = step.agreement(where)
            if found is not None:
                agreement[key] = found
        oracle = oracle_bound(step.train, step.held_out)
        entry: dict[str, Any] = {"deduction": agreement, "oracle": oracle}
        log(
            f"{backend} {threads}t n={size} oracle (measured kernels): synthetic "
            f"{100 * (oracle['constant']['synthetic'] or 0):.2f}% (calibrated "
            f"{100 * (oracle['calibrated']['synthetic'] or 0):.2f}%)  zoo {100 * (oracle['constant']['zoo'] or 0):.2f}%"
        )
        for method in methods:
            t0 = time.perf_counter()
            pred = train_predictor(
                step.train, step.deducer, scenario, method, seed=seed, search=search, mlp_trials=mlp_trials
            )
            by = overhead_reports(pred, step.train, step.held_out)
            entry[method] = {**_method_entry(by), "seconds": round(time.perf_counter() - t0, 1)}
            on_syn = {o: 100 * r.reports["synthetic"].e2e_mape for o, r in by.items()}
            on_zoo = {o: 100 * r.reports["zoo"].e2e_mape for o, r in by.items()}
            log(
                f"{backend} {threads}t n={size} {method}: synthetic {on_syn['constant']:.2f}% "
                f"(affine {on_syn['affine']:.2f}%, calibrated {on_syn['calibrated']:.2f}%)  "
                f"zoo {on_zoo['constant']:.2f}% (affine {on_zoo['affine']:.2f}%, calibrated {on_zoo['calibrated']:.2f}%)"
            )
        out[str(size)] = entry
    return out


# ---------------------------------------------------------------------------------------------
# Tables


def pct(v: float | None) -> str:
    """A fraction as a percentage cell."""
    return "   -  " if v is None else f"{100 * v:6.2f}"


def print_tables(result: dict[str, Any], methods: list[str]) -> None:
    """Figure-13/21-style tables on stdout."""
    if "qed_deduction" in result:
        d = result["qed_deduction"]
        print("\n(a) qed GPU data: kernel deduction vs the kernels each phone ran")
        print(f"{'device':10} {'rows':>6} {'kernel match':>13} {'fused chains (kind)':>20} {'(kind+fused count)':>19}")
        for dev, km in d["kernel_match"].items():
            fm = d["fusion_match"][dev]
            print(
                f"{dev:10} {km['rows']:6d} {100 * km['share']:12.2f}% {100 * fm['kind_share']:19.2f}% "
                f"{100 * fm['kind_and_fused_count_share']:18.2f}%"
            )
    if "qed" in result:
        q = result["qed"]
        for overhead in ("constant", "affine", "calibrated"):
            print(f"\n(a) qed GPU, grouped 5-fold CV by network: end-to-end MAPE % ({overhead} overhead)")
            print(f"{'device':10}" + "".join(f"{m:>9}" for m in methods))
            for dev in q:
                print(
                    f"{dev:10}"
                    + "".join(f"{pct(q[dev][m][overhead]['e2e_mape'] if m in q[dev] else None):>9}" for m in methods)
                )
            means = [
                sum(q[d][m][overhead]["e2e_mape"] for d in q) / len(q) if all(m in q[d] for d in q) else None
                for m in methods
            ]
            print(f"{'mean':10}" + "".join(f"{pct(v):>9}" for v in means))
        first = next(m for m in methods if all(m in q[d] for d in q)) if q else methods[0]
        types = sorted({t for dev in q for t in q[dev][first]["constant"]["kernel_mape"]})
        print(f"\n(a) qed GPU, kernel MAPE % per kernel type ({first}, grouped CV)")
        print(f"{'device':10}" + "".join(f"{t[:10]:>11}" for t in types))
        for dev in q:
            km = q[dev][first]["constant"]["kernel_mape"]
            print(f"{dev:10}" + "".join(f"{pct(km.get(t)):>11}" for t in types))
    for key, m in result.get("measurements", {}).items():
        print(
            f"\nmeasurements, {key}: "
            + ", ".join(
                f"{part} {v['used']} used of {v['measured']} ({v['consistent']} undisturbed)" for part, v in m.items()
            )
        )
    for key, r in result.get("repeatability", {}).items():
        print(
            f"\nrepeatability, {key}: the {r['networks']} test networks measured twice (fastest of "
            f"{r['rounds_per_half']} round(s) each) differ by {100 * r['mape_half_vs_half']:.2f} % MAPE"
        )
        if "oracle_mape" in r:
            print(
                f"  a perfect predictor would score {100 * r['oracle_mape']:.2f} % MAPE against the fastest of "
                f"{r['rounds_in_truth']} rounds (noise model fitted to the rounds: jitter SD "
                f"{100 * r['jitter_sd']:.1f} %, slowdown uniform up to {100 * r.get('slowdown_width', 0):.0f} %, bursts "
                f"{100 * r['interference_mean']:.1f} % on average)"
            )
    for key, cpu in result.get("host", {}).items():
        print(f"\n(b) {key}: end-to-end MAPE % (synthetic test {cpu['n_test']} / zoo {cpu['n_zoo']})")
        print(f"{'train':>6} {'test':9}" + "".join(f"{m:>9}" for m in methods) + "   op-match syn / zoo")
        for size in cpu["sizes"]:
            e = cpu[str(size)]
            for where in ("synthetic", "zoo"):
                agree = e["deduction"].get("synthetic_test" if where == "synthetic" else "zoo")
                print(
                    f"{size:6d} {where:9}"
                    + "".join(f"{pct(e[m][where]['e2e_mape'] if m in e else None):>9}" for m in methods)
                    + (f"   {100 * agree['operator_match']:6.2f}%" if agree else "   (the backend's own plan)")
                )
        print(f"(b) {key}: the same kernel models with the affine overhead")
        for size in cpu["sizes"]:
            e = cpu[str(size)]
            for where in ("synthetic", "zoo"):
                cells = "".join(
                    f"{pct(e[m]['affine'][where]['e2e_mape'] if m in e and 'affine' in e[m] else None):>9}"
                    for m in methods
                )
                print(f"{size:6d} {where:9}" + cells)
        print(f"(b) {key}: the same kernel models with the calibrated overhead (a * (P + c n)**b + T)")
        for size in cpu["sizes"]:
            e = cpu[str(size)]
            for where in ("synthetic", "zoo"):
                cells = "".join(
                    f"{pct(e[m]['calibrated'][where]['e2e_mape'] if m in e and 'calibrated' in e[m] else None):>9}"
                    for m in methods
                )
                print(f"{size:6d} {where:9}" + cells)
        print(
            f"(b) {key}: a perfect kernel predictor (measured kernels summed), constant / affine / calibrated overhead"
        )
        for size in cpu["sizes"]:
            o = cpu[str(size)].get("oracle")
            if o:
                cells = "".join(
                    f"{pct(o[k][w] if k in o else None):>9}"
                    for w in ("synthetic", "zoo")
                    for k in ("constant", "affine", "calibrated")
                )
                print(f"{size:6d} {'syn / zoo':9}" + cells)
        big = cpu[str(cpu["sizes"][-1])]
        types = sorted({t for m in methods if m in big for t in big[m]["synthetic"]["kernel_mape"]})
        print(f"\n(b) {key}: kernel MAPE % on the synthetic test set, trained on {cpu['sizes'][-1]}")
        print(f"{'kernel type':26}" + "".join(f"{m:>9}" for m in methods))
        for t in types:
            print(
                f"{t:26}"
                + "".join(f"{pct(big[m]['synthetic']['kernel_mape'].get(t) if m in big else None):>9}" for m in methods)
            )


def main() -> None:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-synthetic", type=int, default=300, help="synthetic NAS samples to profile (default 300)")
    ap.add_argument(
        "--n-synthetic-multi",
        type=int,
        default=None,
        help="synthetic samples for thread counts above 1 (default: --n-synthetic)",
    )
    ap.add_argument("--runs", type=int, default=15, help="timed runs per profile (default 15)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", default="1,2", help="CPU thread counts, comma-separated")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument(
        "--search",
        choices=("paper", "fast"),
        default="fast",
        help="hyper-parameter grids: the paper's, or a smaller one (default)",
    )
    ap.add_argument("--mlp-trials", type=int, default=4)
    ap.add_argument("--statistic", default="median", choices=("median", "mean", "min"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-qed", action="store_true")
    ap.add_argument(
        "--backend",
        choices=("cpu", "opencl"),
        default="cpu",
        help="what part (b) measures: the CPU through ONNX Runtime, or the OpenCL backend (PoCL here); "
        "OpenCL takes one thread count per process",
    )
    ap.add_argument(
        "--zoo",
        default="all",
        help="zoo networks for synthetic -> real-world: all (default) or comma-separated names "
        "(OpenCL on PoCL compiles each new kernel shape, minutes per large network)",
    )
    ap.add_argument(
        "--test-rounds",
        type=int,
        default=None,
        help="rounds for the synthetic test networks and the zoo (default: --rounds; more rounds give a lower "
        "fastest-round time than the training networks had, a bias the predictor is then charged with)",
    )
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--measure-only", action="store_true", help="profile into the cache and stop")
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="rounds of profiles per graph, spread over time and merged fastest-row-wins (default 3)",
    )
    ap.add_argument(
        "--cores",
        default="last",
        help="pin t threads to the last t cores ('last', default), let the OS choose ('any')",
    )
    ap.add_argument(
        "--keep-noisy",
        action="store_true",
        help="keep measurements that stayed disturbed after their retries (default: drop them)",
    )
    args = ap.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    threads = [int(t) for t in args.threads.split(",") if t]
    result: dict[str, Any] = {
        "settings": vars(args),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    started = time.perf_counter()
    if not args.skip_cpu:
        synthetic, zoo_graphs, probes = cpu_graphs(args.n_synthetic, args.zoo)
        measured = {}
        rounds_of: dict[int, dict[str, list[ProfileRecord]]] = {}  # per thread count: graph name -> its rounds
        for t in threads:
            n = args.n_synthetic if t == 1 or args.n_synthetic_multi is None else args.n_synthetic_multi
            cores = _cores_for(t, args.cores) if args.backend == "cpu" else ()
            n_test = min(TEST_SIZE, max(1, n // 5))
            log(
                f"{args.backend}: profiling {n} synthetic + {len(zoo_graphs)} zoo + {len(probes)} probe graphs, "
                f"{t} thread(s)"
            )
            rounds = (args.runs, args.warmup, args.rounds, args.statistic)
            # The test networks and the zoo are measured as the training networks are: a network's
            # time is its fastest round, and the fastest of more rounds lies lower, a gap the
            # predictor would be charged with (docs/predictors.md, "Measuring in rounds").
            test_rounds = (
                args.runs,
                args.warmup,
                args.rounds if args.test_rounds is None else args.test_rounds,
                args.statistic,
            )
            measured[t] = {
                "probes": measure(probes, args.backend, t, cores, 1, 0, 1, args.statistic)
                if args.backend == "cpu"
                else [],
            }
            per_graph = measure_rounds(synthetic[: n - n_test], args.backend, t, cores, *rounds[:3])
            per_graph += measure_rounds(synthetic[n - n_test : n], args.backend, t, cores, *test_rounds[:3])
            measured[t]["synthetic"] = [merge_rounds(recs, args.statistic) for recs in per_graph]
            measured[t]["zoo"] = measure(zoo_graphs, args.backend, t, cores, *test_rounds)
            rounds_of[t] = {recs[0].graph.name: recs for recs in per_graph}
        if args.measure_only:
            log("measured; cache under " + str(CACHE))
            return
    if not args.skip_qed:
        result["qed_deduction"] = qed_deduction()
        result["qed"] = qed_accuracy(methods, args.search, args.seed, args.mlp_trials)
    if not args.skip_cpu:
        for t in threads:
            # Drop the measurements still disturbed after their retries (the lab flags noisy
            # samples rather than learning from them), unless asked to keep them.
            for part in ("synthetic", "zoo"):
                recs = measured[t][part]
                kept = recs if args.keep_noisy else [r for r in recs if consistent(r, 0.10, 0.2)]
                if len(kept) < 0.6 * len(recs):  # mostly disturbed (e.g. all cores busy): keep all, say so
                    kept = recs
                result.setdefault("measurements", {}).setdefault(f"{args.backend}, {t} thread(s)", {})[part] = {
                    "measured": len(recs),
                    "consistent": sum(consistent(r, 0.10, 0.2) for r in recs),
                    "used": len(kept),
                }
                measured[t][part] = kept
            # how steady the truth of the networks scored as the synthetic test set is
            syn = measured[t]["synthetic"]
            test_names = [r.graph.name for r in syn[-min(TEST_SIZE, max(1, len(syn) // 5)) :]]
            floor = noise_floor([[rec.e2e_ms(args.statistic) for rec in rounds_of[t][name]] for name in test_names])
            if floor is not None:
                result.setdefault("repeatability", {})[f"{args.backend}, {t} thread(s)"] = floor
        result["host"] = {
            f"{args.backend}, {t} thread{'s' if t > 1 else ''}": host_accuracy(
                measured[t], args.backend, t, methods, args.search, args.seed, args.statistic, args.mlp_trials
            )
            for t in threads
        }
    result["seconds"] = round(time.perf_counter() - started, 1)
    if OUT.exists():  # keep the parts this run skipped from the previous run
        try:
            previous = json.loads(OUT.read_text())
        except ValueError:
            previous = {}
        for part in ("qed_deduction", "qed"):
            if part not in result and part in previous:
                result[part] = previous[part]
                result.setdefault("kept_from_previous_run", []).append(part)
        for part in ("host", "measurements", "repeatability"):  # scenarios (backend, threads) this run did not measure
            for key, value in previous.get(part, {}).items():
                if key not in result.setdefault(part, {}):
                    result[part][key] = value
                    result.setdefault("kept_from_previous_run", []).append(f"{part}: {key}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print_tables(result, methods)
    print(f"\nwrote {OUT.relative_to(ROOT)} ({result['seconds']} s)")


if __name__ == "__main__":
    main()
