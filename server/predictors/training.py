"""Training a predictor row: its data, the paper's evaluation, the final predictor.

Data comes from one of two places: a team's stored timings of one device and scenario (host
CPU, OpenCL, or one delegate of a phone; ``records.scenario_records``), or the measurements
imported for a qed phone (``qed_import.qed_samples``). The kernel deducer follows the scenario's
backend (``devicelab.predict.deducers.learn_deducer``: the host CPU runtime's rules learned from
its records, with the probe graphs when the team profiled them; the OpenCL backend's own plan; a
phone's TFLite CPU rules learned from its records; the TFLite GPU deduction for the phone's GPU
family), and a qed phone's TFLite GPU delegate is deduced for its GPU family (``TfliteGpuDeducer``).

A phone's GPU delegate times whole partitions, not kernels: the samples' kernel latencies are
shares of the partitions' measured times (``devicelab.predict.tflite_gpu_records``), so such a
predictor's evaluation has no kernel MAPE (``kernel_latencies`` says why); its end-to-end error
is measured like any other.

The evaluation is ``devicelab.predict.evaluate``'s protocol, the one the accuracy benchmark runs:

* stored timings: 20 % of the networks (seeded) are held out; end-to-end MAPE and MAPE per
  kernel type on them, the predicted vs measured points, the deduction's agreement with their
  measured kernels, their noise floor, and MAPE vs training size (30, 100 and all training
  networks, where there are that many; each size's deducer learned on its own networks).
* qed phones (67 networks): cross-validation grouped by network (5 folds), and the same with
  each fold's training set cut to 30 networks for the training-size curve.

The final predictor then trains on all the data.

Before any of that, the whole training set's kernel types are checked against
``LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL`` (``devicelab.predict.coverage``): a type seen in
fewer networks is predicted by a model of its kind or feature group, and when there is none the
training fails naming each such type and its count of networks. Every model (the evaluation's
too) is trained with that minimum, so the evaluation measures the predictor that is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from devicelab.predict import qed
from devicelab.predict.coverage import plan_models
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.deducers import RecordDeducer, kernels_measured, learn_deducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.evaluate import (
    CV_FOLDS,
    TRAINING_SIZES,
    HoldoutStep,
    Report,
    evaluate,
    grouped_cv_curve,
    holdout_split,
    holdout_steps,
    training_sizes,
)
from devicelab.predict.kernels import Deducer
from devicelab.predict.noise import noise_floor
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.records import ProfileRecord
from devicelab.predict.samples import Sample
from server.predictors.models import Predictor, PredictorSource
from server.predictors.qed_import import qed_device_of, qed_samples
from server.predictors.records import is_probe, merged_by_network, scenario_records

MIN_NETWORKS = 5  # fewer leaves nothing to hold out
QED_OVERHEAD_KINDS = qed.OVERHEAD_KINDS  # kernel kinds the qed data leaves in the overhead
POINTS_LIMIT = 2000  # predicted vs measured points kept in the evaluation
APPORTIONED = (
    "not measured: the GPU delegate times whole partitions; each kernel's latency is its share of its "
    "partition's measured time (a share model fitted on the training networks), so only the end-to-end "
    "error is a measured error"
)

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
            min_networks=settings.LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL,
        )

    return fit


def check_coverage(samples: Sequence[Sample], where: str) -> None:
    """``TrainingDataError`` naming every kernel type of the training set that too few networks
    ran and that no model of its kind or feature group can stand in for."""
    minimum = settings.LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL
    plan = plan_models(samples, minimum)
    if plan.uncovered:
        raise TrainingDataError(
            f"training refused: {where}, {len(plan.uncovered)} kernel type(s) ran in fewer than {minimum} training "
            f"networks, and no model of their kind or feature group can stand in for them: {plan.uncovered_text()}. "
            "A model learned from so few networks knows those networks, not the kernel type: profile more "
            "networks that run them, or lower LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL"
        )


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
        str(params.get("delegate", "")),
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

    def learn(records: Sequence[ProfileRecord]) -> RecordDeducer:
        return learn_deducer(scenario.backend, records, probes, seed=seed, gpu=scenario.gpu)

    # the final predictor's data first: a training set that leaves a kernel type uncovered is
    # refused before minutes of evaluation
    progress("checking which kernel types the training networks cover")
    final_deducer = learn([s.record for s in data])
    samples = final_deducer.samples([s.record for s in data])
    check_coverage(samples, f"among the {networks} networks measured on device {row.device.name!r}")
    order, test_ids = holdout_split([s.model_id for s in data], seed)
    by_model = {s.model_id: s.record for s in data}  # one merged record per network
    test = [s.record for s in data if s.model_id in test_ids]
    progress(f"evaluating: {len(order)} training / {len(test_ids)} held-out networks")
    reports: list[tuple[HoldoutStep, Report]] = []
    sizes = training_sizes(len(order), TRAINING_SIZES)
    for step in holdout_steps([by_model[m] for m in order], {"test": test}, learn, sizes):
        if step.n < len(order):
            progress(f"evaluating: training on {step.n} networks")
        reports.append((step, evaluate(fit(step.train, step.deducer), step.held_out["test"], on_missing="zero")))
    final, report = reports[-1]  # trained on every training network
    evaluation = _report_dict(report, "holdout 20%")
    if not kernels_measured(final.deducer):
        # the "measured" kernels are shares of a partition's time: an error against them is no
        # measured error, so none is reported
        evaluation["kernel_mape"] = {}
        evaluation["kernel_latencies"] = APPORTIONED
    agreement = final.agreement("test")
    if agreement is not None:
        evaluation["deduction"] = agreement
    # how steady the held-out networks' truth is, from their rounds (repeated jobs)
    rounds: dict[int, list[float]] = {}
    for s in stored.records:
        if s.model_id in test_ids and not is_probe(s.record):
            rounds.setdefault(s.model_id, []).append(s.record.e2e_ms())
    evaluation["noise_floor"] = noise_floor(list(rounds.values()))
    evaluation["by_training_size"] = [{"n": step.n, "e2e_mape": r.e2e_mape} for step, r in reports]

    progress(f"training the final predictor on {networks} networks")
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
    if not kernels_measured(final_deducer):
        meta["kernel_latencies"] = APPORTIONED
    return Outcome(predictor, evaluation, meta, len(samples))


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
    check_coverage(samples, f"among the {networks} networks imported for device {row.device.name!r}")
    deducer = TfliteGpuDeducer(qed.DEVICES[name][1])
    scenario = Scenario.from_dict(row.scenario)
    fit = fitter(row, scenario)
    folds = min(CV_FOLDS, networks)
    progress(f"evaluating: grouped {folds}-fold cross-validation over {networks} networks")

    def train(tr: Sequence[Sample]) -> ScenarioPredictor:
        return fit(tr, deducer)

    report, curve = grouped_cv_curve(
        samples,
        train,
        folds=folds,
        seed=seed,
        progress=lambda n: progress(f"evaluating: cross-validation with {n} training networks"),
    )
    evaluation = _report_dict(report, f"grouped {folds}-fold cv")
    evaluation["by_training_size"] = curve
    progress(f"training the final predictor on {networks} networks")
    predictor = fit(samples, deducer)
    meta = {"source": PredictorSource.QED, "networks": networks, "qed_device": name}
    return Outcome(predictor, evaluation, meta, len(samples))


def train_and_evaluate(row: Predictor, progress: Progress = lambda message: None) -> Outcome:
    """Evaluate and train the predictor a row asks for."""
    if row.source == PredictorSource.ADAPTED:
        from server.predictors.adapt import train_adapted  # it loads predictor rows: imported when needed

        return Outcome(*train_adapted(row, progress))
    if row.source == PredictorSource.QED:
        return train_from_qed(row, progress)
    return train_from_timings(row, progress)


__all__ = [
    "MIN_NETWORKS",
    "QED_OVERHEAD_KINDS",
    "Outcome",
    "TrainingDataError",
    "check_coverage",
    "train_and_evaluate",
    "train_from_qed",
    "train_from_timings",
]
