"""Benchmark: phone predictors on the qed networks they never saw, and the overhead model's share of the error.

Per phone and method, a predictor trains on the 67 networks of our training file
(``../shared/data``) and predicts the 35 other networks of the public dataset as published
(qed-usc/mobile-ml-benchmark@40ba833, ``dataset/tflite_cnn_*.csv``: give its folder, or a clone
of the repository, with ``--published``; nothing of it is copied here). It prints, per phone:

* how far the end-to-end latency lies above the sum of the listed kernels (mean of the ratios,
  and ratio of the sums), on the training and on the unseen networks;
* a perfect kernel predictor's end-to-end MAPE on the unseen networks (their measured kernel
  sums through the affine overhead fitted on the training networks): the overhead model's own
  error;
* each method's end-to-end MAPE (and share within +-10 %) on the unseen networks with the affine
  and calibrated overheads, *before* (without the activation-traffic term) and *after* (with it,
  ``devicelab/predict/traffic.py``; what ``train_predictor`` fits for the qed phones).

Writes ``<var>/benchmarks/qed_unseen_overhead.json``.

    python benchmarks/qed_unseen_overhead.py --published ~/src/mobile-ml-benchmark
    python benchmarks/qed_unseen_overhead.py --published DIR --methods rf --devices s10
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/qed_unseen_overhead.py` without an install
    sys.path.insert(0, str(ROOT))

from devicelab.predict import qed  # noqa: E402
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer  # noqa: E402
from devicelab.predict.errors import PredictorError  # noqa: E402
from devicelab.predict.models import METHODS  # noqa: E402
from devicelab.predict.predictor import (  # noqa: E402
    Scenario,
    ScenarioPredictor,
    fit_affine_overhead,
    train_predictor,
    with_overhead,
)
from devicelab.predict.samples import Sample  # noqa: E402
from devicelab.predict.traffic import fit_traffic, kernels_moved  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "qed_unseen_overhead.json"
OVERHEADS = ("affine", "calibrated")


def log(msg: str) -> None:
    """Progress to stderr (tables go to stdout)."""
    print(msg, file=sys.stderr, flush=True)


def errors(predicted: Sequence[float] | np.ndarray, samples: Sequence[Sample]) -> dict[str, float]:
    """End-to-end MAPE and the share of networks within +-10 % of their measured latency."""
    rel = np.abs(np.asarray(predicted) - [s.e2e_ms for s in samples]) / [s.e2e_ms for s in samples]
    return {"mape": float(rel.mean()), "within_10": float((rel <= 0.10).mean())}


def ratios(samples: Sequence[Sample]) -> dict[str, float]:
    """End-to-end over listed kernel sum: mean of the networks' ratios, and ratio of the sums."""
    e = np.asarray([s.e2e_ms for s in samples])
    k = np.asarray([s.kernel_sum_ms for s in samples])
    return {"mean_ratio": float((e / k).mean()), "ratio_of_sums": float(e.sum() / k.sum())}


def oracle(train: Sequence[Sample], unseen: Sequence[Sample]) -> dict[str, dict[str, float]]:
    """A perfect kernel predictor: the unseen networks' measured kernels through the affine
    overhead fitted on the training networks, without and with the traffic term."""

    def terms(samples: Sequence[Sample]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        listed = [[k for k in s.measured if k.latency_ms] for s in samples]
        return (
            np.asarray([s.kernel_sum_ms for s in samples]),
            np.asarray([len(ks) for ks in listed], dtype=np.float64),
            np.asarray([kernels_moved(ks) for ks in listed]),
        )

    t_const = float(np.mean([s.e2e_ms - s.kernel_sum_ms for s in train]))
    a, c, t = fit_affine_overhead(train, t_const)
    s_tr, n_tr, m_tr = terms(train)
    a2, _, c2, d2, t2 = fit_traffic(s_tr, n_tr, m_tr, [s.e2e_ms for s in train], (a, 1.0, c, t), fit_power=False)
    s_un, n_un, m_un = terms(unseen)
    return {
        "before": errors(a * (s_un + c * n_un) + t, unseen),
        "after": errors(a2 * (s_un + c2 * n_un + d2 * m_un) + t2, unseen),
    }


def method_errors(
    train: Sequence[Sample], unseen: Sequence[Sample], device: str, method: str, search: str, seed: int, mlp_trials: int
) -> dict[str, Any]:
    """One method's kernel models trained once; each overhead fitted before / after on them."""
    gpu, family = qed.DEVICES[device]
    scenario = Scenario("tflite_gpu", device, precision="fp16", runtime="tflite gpu delegate (qed data)", gpu=gpu)
    started = time.perf_counter()
    base = train_predictor(
        train,
        TfliteGpuDeducer(family),
        scenario,
        method,
        seed=seed,
        search=search,
        overhead_kinds=qed.OVERHEAD_KINDS,
        mlp_trials=mlp_trials,
    )
    out: dict[str, Any] = {"train_seconds": round(time.perf_counter() - started, 1)}
    inputs = [s.prediction_input() for s in unseen]
    for overhead in OVERHEADS:
        out[overhead] = {}
        for when, traffic in (("before", False), ("after", True)):
            p: ScenarioPredictor = with_overhead(base, train, overhead, traffic=traffic)
            predicted = [x.latency_ms for x in p.predict_kernels(inputs, [s.name for s in unseen])]
            out[overhead][when] = {
                **errors(predicted, unseen),
                "a": p.kernel_scale,
                "b": p.kernel_power,
                "c_ms": p.per_kernel_ms,
                "d_ms_per_million": p.per_element_ms * 1e6,
                "t_ms": p.t_overhead_ms,
            }
    return out


def pct(x: float | None) -> str:
    """A share as a percentage with two decimals ("-" for none)."""
    return "-" if x is None else f"{100 * x:.2f}"


def print_tables(result: dict[str, Any], methods: Sequence[str]) -> None:
    """What the run measured, phone by phone."""
    phones = result["phones"]
    print(f"qed networks never seen in training: {result['unseen']} (trained on {result['train']})")
    print("\nend-to-end / listed kernel sum (mean of ratios; ratio of sums), training -> unseen")
    for dev, r in phones.items():
        tr, un = r["ratio"]["train"], r["ratio"]["unseen"]
        print(
            f"  {dev:9} {tr['mean_ratio']:.2f}x -> {un['mean_ratio']:.2f}x;  "
            f"{tr['ratio_of_sums']:.2f}x -> {un['ratio_of_sums']:.2f}x"
        )
    print("\nend-to-end MAPE % on the unseen networks, before -> after the traffic term")
    cols = ["perfect kernels (affine)"] + [f"{m} {o}" for m in methods for o in OVERHEADS]
    print(f"{'phone':9} " + " ".join(f"{c:>24}" for c in cols))
    means: dict[str, list[tuple[float, float]]] = {c: [] for c in cols}
    for dev, r in phones.items():
        cells = [(r["oracle"]["before"]["mape"], r["oracle"]["after"]["mape"])]
        cells += [
            (r["methods"][m][o]["before"]["mape"], r["methods"][m][o]["after"]["mape"])
            for m in methods
            for o in OVERHEADS
        ]
        for c, v in zip(cols, cells, strict=True):
            means[c].append(v)
        print(f"{dev:9} " + " ".join(f"{pct(b) + ' -> ' + pct(a):>24}" for b, a in cells))
    print(
        f"{'mean':9} "
        + " ".join(
            f"{pct(float(np.mean([b for b, _ in v]))) + ' -> ' + pct(float(np.mean([a for _, a in v]))):>24}"
            for v in means.values()
        )
    )
    print("\nshare of unseen networks within +-10 %, before -> after")
    for dev, r in phones.items():
        shares = [
            f"{m} {o} {pct(r['methods'][m][o]['before']['within_10'])} -> {pct(r['methods'][m][o]['after']['within_10'])}"
            for m in methods
            for o in OVERHEADS
        ]
        print(f"  {dev:9} " + "; ".join(shares))


def main() -> None:
    """Run the benchmark."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--published",
        default=os.environ.get("LATENCYLAB_QED_PUBLISHED"),
        help="folder with the published tflite_cnn_ops_gpu.csv and tflite_cnn_e2e.csv, or a clone of "
        "qed-usc/mobile-ml-benchmark at 40ba833 (default: $LATENCYLAB_QED_PUBLISHED)",
    )
    ap.add_argument("--methods", default="rf,gbdt,mlp")
    ap.add_argument("--devices", default=",".join(qed.DEVICES))
    ap.add_argument("--search", choices=("paper", "fast"), default="fast", help="hyper-parameter search")
    ap.add_argument("--mlp-trials", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if not args.published:
        ap.error("give the published qed data with --published DIR (or $LATENCYLAB_QED_PUBLISHED)")
    methods = [m for m in args.methods.split(",") if m]
    devices = [d for d in args.devices.split(",") if d]
    for name, known, allowed in (("method", methods, METHODS), ("device", devices, qed.DEVICES)):
        unknown = [x for x in known if x not in allowed]
        if unknown:
            ap.error(f"unknown {name}(s) {unknown}; choose from {list(allowed)}")
    try:
        ops_path, e2e_path = qed.find_files(args.published)
        published_rows, published_e2e = qed.read_ops(ops_path), qed.read_e2e(e2e_path)
        train_names = set(qed.by_model(qed.read_ops()))
    except PredictorError as exc:
        sys.exit(f"error: {exc}")
    unseen_names = sorted(set(qed.by_model(published_rows)) - train_names)
    if not unseen_names:
        sys.exit(f"error: {ops_path} holds no network outside the training file: is it the published file?")
    started = time.perf_counter()
    result: dict[str, Any] = {
        "settings": {**vars(args), "published": str(ops_path.parent)},
        "files": [str(ops_path), str(e2e_path)],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "train": len(train_names),
        "unseen": len(unseen_names),
        "unseen_networks": unseen_names,
        "phones": {},
    }
    for dev in devices:
        samples = qed.gpu_samples(dev, published_rows, published_e2e)
        train = [s for s in samples if s.name in train_names]
        unseen = [s for s in samples if s.name not in train_names]
        phone: dict[str, Any] = {
            "networks": {"train": len(train), "unseen": len(unseen)},
            "ratio": {"train": ratios(train), "unseen": ratios(unseen)},
            "oracle": oracle(train, unseen),
            "methods": {},
        }
        for method in methods:
            phone["methods"][method] = method_errors(
                train, unseen, dev, method, args.search, args.seed, args.mlp_trials
            )
            row = phone["methods"][method]
            log(
                f"{dev} {method}: "
                + ", ".join(
                    f"{o} {pct(row[o]['before']['mape'])} -> {pct(row[o]['after']['mape'])} %" for o in OVERHEADS
                )
                + f" ({row['train_seconds']} s)"
            )
        result["phones"][dev] = phone
    result["seconds"] = round(time.perf_counter() - started, 1)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1))
    print_tables(result, methods)
    print(f"\nwrote {OUT.relative_to(ROOT)} ({result['seconds']} s)")


if __name__ == "__main__":
    main()
