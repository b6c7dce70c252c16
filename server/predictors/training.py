"""Training a predictor row: its data, the paper's evaluation, the final predictor.

Data comes from one of two places: a team's stored timings of one device and scenario (host
CPU or OpenCL; ``records.scenario_records``), or the measurements imported for a qed phone
(``qed_import.qed_samples``). The kernel deducer follows the device kind: the host CPU
runtime's rules are learned from its records (``CpuDeducer.learn``, with the probe graphs when
the team profiled them), the OpenCL backend's plan is its own code (``OpenclDeducer``), and a
qed phone's TFLite GPU delegate is deduced for its GPU family (``TfliteGpuDeducer``).

Evaluation, as paper 001 (section 5) does it:

* stored timings: 20 % of the networks (seeded) are held out; end-to-end MAPE and MAPE per
  kernel type on them, the predicted vs measured points, and MAPE vs training size (30, 100
  and all training networks, where there are that many). The deducer is learned on the
  training split only, so the held-out networks are unseen by every rule and model.
* qed phones (67 networks): cross-validation grouped by network (5 folds), and the same with
  each fold's training set cut to 30 networks for the training-size curve.

The final predictor then trains on all the data.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.evaluate import Report, evaluate, grouped_cv
from devicelab.predict.kernels import Deducer
from devicelab.predict.noise import noise_floor
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.records import ProfileRecord
from devicelab.predict.samples import Sample
from server.devices.models import DeviceKind
from server.predictors.models import Predictor, PredictorSource
from server.predictors.qed_import import qed_device_of, qed_samples
from server.predictors.records import is_probe, merged_by_network, scenario_records

MIN_NETWORKS = 5  # fewer leaves nothing to hold out
HOLDOUT = 0.2
TRAINING_SIZES = (30, 100)
CV_FOLDS = 5
# The qed data lists no element-wise, reshape, split or pad kernels: their time is in the
# end-to-end latency only, so it is learned as overhead (paper 001, section 4.2, Fig. 10).
QED_OVERHEAD_KINDS = ("elementwise", "reshape", "split", "pad")
POINTS_LIMIT = 2000  # predicted vs measured points kept in the evaluation

Progress = Callable[[str], object]


class TrainingDataError(PredictorError):
    """The stored data cannot train this predictor (none, too little, wrong device)."""


@dataclass
class Outcome:
    """What training produced: the final predictor and its evaluation."""

    predictor: ScenarioPredictor
    evaluation: dict[str, Any]
    meta: dict[str, Any]
    n_train: int


def _report_dict(report: Report, protocol: str) -> dict[str, Any]:
    return {
        "protocol": protocol,
        "e2e_mape": report.e2e_mape,
        "n_test": report.n_networks,
        "kernel_mape": report.kernel_mape,
        "kernel_count": report.kernel_count,
        "missing": report.missing,
        "points": [
            {"name": name, "predicted_ms": p, "measured_ms": m} for name, p, m in report.predictions[:POINTS_LIMIT]
        ],
    }


def fitter(row: Predictor, scenario: Scenario) -> Callable[[Sequence[Sample], Deducer], ScenarioPredictor]:
    """``fit(samples, deducer)`` with the row's method, seed, search and overhead."""
    params = row.params or {}
    overhead_kinds = QED_OVERHEAD_KINDS if row.source == PredictorSource.QED else ()

    def fit(samples: Sequence[Sample], deducer: Deducer) -> ScenarioPredictor:
        return train_predictor(
            samples,
            deducer,
            scenario,
            row.method,
            seed=int(params.get("seed", 0)),
            search=str(params.get("search", "paper")),
            overhead_kinds=overhead_kinds,
            overhead=str(params.get("overhead", "constant")),
        )

    return fit


def _split(groups: Sequence[int], seed: int) -> tuple[list[int], set[int]]:
    """Networks in a seeded order, and the held-out 20 % of them."""
    order = sorted(set(groups))
    random.Random(seed).shuffle(order)
    n_test = max(1, round(HOLDOUT * len(order)))
    return order[n_test:], set(order[:n_test])


def train_from_timings(row: Predictor, progress: Progress) -> Outcome:
    """Holdout evaluation and the final predictor from the team's stored timings."""
    params = row.params or {}
    seed = int(params.get("seed", 0))
    if row.team is None:
        raise TrainingDataError("a predictor trained on stored timings belongs to a team; this one has none")
    progress("reading stored timings")
    stored = scenario_records(
        row.team,
        row.device,
        int(params.get("threads", 1)),
        [int(c) for c in params.get("cores", [])],
        str(params.get("precision", "fp32")),
    )
    probes = [s.record for s in stored.records if is_probe(s.record)]
    data = merged_by_network([s for s in stored.records if not is_probe(s.record)])
    networks = len(data)
    if networks < MIN_NETWORKS:
        raise TrainingDataError(
            f"team {row.team.name!r} has {networks} network(s) measured on device {row.device.name!r} "
            f"(#{row.device_id}) in scenario {row.scenario_key}; a predictor needs at least {MIN_NETWORKS} "
            "(latencylab trainset build profiles a training set)"
        )
    scenario = Scenario.from_dict({**row.scenario, "runtime": stored.runtime})
    fit = fitter(row, scenario)

    def deducer_for(records: Sequence[ProfileRecord]) -> CpuDeducer | OpenclDeducer:
        if row.device.kind == DeviceKind.CPU:
            return CpuDeducer.learn([*records, *probes], seed=seed)
        return OpenclDeducer()

    order, test_ids = _split([s.model_id for s in data], seed)
    train = [s for s in data if s.model_id not in test_ids]
    test = [s for s in data if s.model_id in test_ids]
    progress(f"evaluating: {len(order)} training / {len(test_ids)} held-out networks")
    deducer = deducer_for([s.record for s in train])
    by_model: dict[int, list[Sample]] = {}
    for s, sample in zip(train, deducer.samples([s.record for s in train])):
        by_model.setdefault(s.model_id, []).append(sample)
    test_samples = deducer.samples([s.record for s in test])
    train_samples = [x for m in order for x in by_model[m]]
    report = evaluate(fit(train_samples, deducer), test_samples, on_missing="zero")
    evaluation = _report_dict(report, "holdout 20%")
    if isinstance(deducer, CpuDeducer):
        evaluation["deduction"] = deducer.agreement([s.record for s in test])
    # how steady the held-out networks' truth is, from their rounds (repeated jobs)
    rounds: dict[int, list[float]] = {}
    for s in stored.records:
        if s.model_id in test_ids and not is_probe(s.record):
            rounds.setdefault(s.model_id, []).append(s.record.e2e_ms())
    evaluation["noise_floor"] = noise_floor(list(rounds.values()))
    curve = []
    for n in TRAINING_SIZES:
        if n < len(order):
            progress(f"evaluating: training on {n} networks")
            subset = [x for m in order[:n] for x in by_model[m]]
            curve.append({"n": n, "e2e_mape": evaluate(fit(subset, deducer), test_samples, on_missing="zero").e2e_mape})
    curve.append({"n": len(order), "e2e_mape": report.e2e_mape})
    evaluation["by_training_size"] = curve

    progress(f"training the final predictor on {networks} networks")
    final_deducer = deducer_for([s.record for s in data])
    samples = final_deducer.samples([s.record for s in data])
    predictor = fit(samples, final_deducer)
    meta = {
        "source": PredictorSource.TIMINGS,
        "networks": networks,
        "records": len([s for s in stored.records if not is_probe(s.record)]),  # jobs, repeats included
        "probe_records": len(probes),
        "jobs": sorted(s.job_id for s in stored.records)[:5000],
        "skipped": stored.skipped,
        "runtime": stored.runtime,
    }
    return Outcome(predictor, evaluation, meta, len(samples))


def _subsample(samples: Sequence[Sample], n: int, seed: int) -> list[Sample]:
    names = sorted({s.name for s in samples})
    random.Random(seed).shuffle(names)
    keep = set(names[:n])
    return [s for s in samples if s.name in keep]


def train_from_qed(row: Predictor, progress: Progress) -> Outcome:
    """Grouped cross-validation and the final predictor from a qed phone's imported data."""
    params = row.params or {}
    seed = int(params.get("seed", 0))
    name = qed_device_of(row.device)
    progress("reading imported measurements")
    samples = qed_samples(row.device)
    networks = len({s.name for s in samples})
    if networks < MIN_NETWORKS:
        raise TrainingDataError(
            f"device {row.device.name!r} (#{row.device_id}) has {networks} imported network(s); a predictor needs "
            f"at least {MIN_NETWORKS} (run latencylab qed import)"
        )
    from devicelab.predict import qed

    deducer = TfliteGpuDeducer(qed.DEVICES[name][1])
    scenario = Scenario.from_dict(row.scenario)
    fit = fitter(row, scenario)
    folds = min(CV_FOLDS, networks)
    progress(f"evaluating: grouped {folds}-fold cross-validation over {networks} networks")

    def train(tr: Sequence[Sample]) -> ScenarioPredictor:
        return fit(tr, deducer)

    report = grouped_cv(samples, train, folds=folds, seed=seed)
    evaluation = _report_dict(report, f"grouped {folds}-fold cv")
    smallest_fold_train = networks - -(-networks // folds)
    curve = []
    for n in TRAINING_SIZES:
        if n < smallest_fold_train:
            progress(f"evaluating: cross-validation with {n} training networks")

            def train_on_n(tr: Sequence[Sample], n: int = n) -> ScenarioPredictor:
                return fit(_subsample(tr, n, seed), deducer)

            rep = grouped_cv(samples, train_on_n, folds=folds, seed=seed)
            curve.append({"n": n, "e2e_mape": rep.e2e_mape})
    curve.append({"n": smallest_fold_train, "e2e_mape": report.e2e_mape})
    evaluation["by_training_size"] = curve
    progress(f"training the final predictor on {networks} networks")
    predictor = fit(samples, deducer)
    meta = {"source": PredictorSource.QED, "networks": networks, "qed_device": name}
    return Outcome(predictor, evaluation, meta, len(samples))


def train_and_evaluate(row: Predictor, progress: Progress = lambda message: None) -> Outcome:
    """Evaluate and train the predictor a row asks for."""
    if row.source == PredictorSource.QED:
        return train_from_qed(row, progress)
    return train_from_timings(row, progress)


__all__ = [
    "MIN_NETWORKS",
    "QED_OVERHEAD_KINDS",
    "Outcome",
    "TrainingDataError",
    "train_and_evaluate",
    "train_from_qed",
    "train_from_timings",
]
