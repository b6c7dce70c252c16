"""Evaluation as the latency paper does it (001, section 5): MAPE per kernel type and end to end,
held-out networks, cross-validation grouped by network, and learning curves over training sizes.

One protocol, which the server's training (``server/predictors/training.py``) and the accuracy
benchmark (``benchmarks/predictor_accuracy.py``) both run:

* **Networks measured here** (host CPU, OpenCL): networks are held out of training
  (``holdout_split``: 20 %, seeded); for each training size the deducer is learned on that
  size's training networks only, so the held-out networks are unseen by every rule and model
  (``holdout_steps``); end-to-end MAPE and MAPE per kernel type on the held-out networks
  (``evaluate``), how well the deduction reproduces their measured kernels
  (``HoldoutStep.agreement``), and how steady their measurements are (``noise.noise_floor``).
* **Networks measured elsewhere** (the qed phones: samples, no records): cross-validation grouped
  by network (``grouped_cv``), and the learning curve with each fold's training set cut to fewer
  networks (``grouped_cv_curve``).

``oracle_bound`` and ``overhead_reports`` put a predictor's error in context: what a perfect
kernel predictor would score, and what each overhead model makes of the same kernel models.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

import numpy as np

from devicelab.predict.deducers import RecordDeducer, deduction_agreement
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import feature_group, feature_matrix
from devicelab.predict.predictor import (
    OVERHEADS,
    ScenarioPredictor,
    fit_affine_overhead,
    fit_calibration,
    with_overhead,
)
from devicelab.predict.records import ProfileRecord
from devicelab.predict.samples import Sample

HOLDOUT = 0.2  # share of the networks held out of training
TRAINING_SIZES = (30, 100)  # the learning curve's training sizes below "all the training networks"
CV_FOLDS = 5


def mape(pred: Sequence[float] | np.ndarray, true: Sequence[float] | np.ndarray) -> float:
    """Mean absolute percentage error, as a fraction (0.05 = 5 %)."""
    p = np.asarray(pred, dtype=np.float64)
    t = np.asarray(true, dtype=np.float64)
    if p.shape != t.shape or t.size == 0:
        raise PredictorError(f"cannot compare {p.shape} predictions with {t.shape} measurements")
    if np.any(t <= 0):
        raise PredictorError("measured latencies must be positive to compute a percentage error")
    return float(np.mean(np.abs(p - t) / t))


@dataclass
class Report:
    """Errors of one predictor on one test set."""

    e2e_mape: float
    n_networks: int
    kernel_mape: dict[str, float] = field(default_factory=dict)  # kernel type -> MAPE
    kernel_count: dict[str, int] = field(default_factory=dict)
    predictions: list[tuple[str, float, float]] = field(default_factory=list)  # (network, predicted, measured)
    missing: dict[str, int] = field(default_factory=dict)  # kernel type without a model -> networks

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return {
            "e2e_mape": self.e2e_mape,
            "n_networks": self.n_networks,
            "kernel_mape": self.kernel_mape,
            "kernel_count": self.kernel_count,
            "predictions": [list(p) for p in self.predictions],
            "missing": self.missing,
        }


def kernel_errors(predictor: ScenarioPredictor, samples: Sequence[Sample]) -> tuple[dict[str, float], dict[str, int]]:
    """MAPE per kernel type of the measured kernels (each predicted by its type's model)."""
    by_type: dict[str, list[tuple[tuple[float, ...], float]]] = {}
    for s in samples:
        for k in s.measured:
            if k.latency_ms and k.latency_ms > 0:
                by_type.setdefault(k.type, []).append((k.raw, k.latency_ms))
    errors, counts = {}, {}
    for ktype, rows in sorted(by_type.items()):
        target = predictor.resolve(ktype)
        if target is None or target == "overhead":
            continue
        x = feature_matrix(feature_group(target), [r for r, _ in rows])
        y = np.asarray([v for _, v in rows])
        errors[ktype] = mape(predictor.models[target].predict(x), y)
        counts[ktype] = len(rows)
    return errors, counts


def evaluate(predictor: ScenarioPredictor, samples: Sequence[Sample], on_missing: str = "error") -> Report:
    """End-to-end MAPE (deduced kernels + ``T_overhead``) and MAPE per kernel type."""
    if not samples:
        raise PredictorError("no test samples")
    preds = predictor.predict_kernels(
        [s.prediction_input() for s in samples], [s.name for s in samples], on_missing=on_missing
    )
    p = [x.latency_ms for x in preds]
    t = [s.e2e_ms for s in samples]
    errors, counts = kernel_errors(predictor, samples)
    missing: dict[str, int] = {}
    for x in preds:
        for ktype in x.missing:
            missing[ktype] = missing.get(ktype, 0) + 1
    return Report(
        mape(p, t),
        len(samples),
        errors,
        counts,
        [(s.name, float(a), float(b)) for s, a, b in zip(samples, p, t)],
        missing,
    )


Trainer = Callable[[Sequence[Sample]], ScenarioPredictor]


def grouped_cv(
    samples: Sequence[Sample],
    train: Trainer,
    folds: int = 5,
    seed: int = 0,
    groups: Sequence[str] | None = None,
    on_missing: str = "zero",
) -> Report:
    """Cross-validation grouped by network (a network's kernels never sit in both train and
    test): every network is predicted once by the model trained on the other folds; returns
    the pooled errors. A kernel type that only the held-out networks run counts 0 (and is
    listed in ``Report.missing``) unless ``on_missing="error"``."""
    from sklearn.model_selection import GroupKFold

    names = list(groups) if groups is not None else [s.name for s in samples]
    n_groups = len(set(names))
    if n_groups < 2:
        raise PredictorError("grouped cross-validation needs at least two networks")
    splitter = GroupKFold(n_splits=min(folds, n_groups), shuffle=True, random_state=seed)
    predicted: dict[int, float] = {}
    missing: dict[str, int] = {}
    kernel_pairs: dict[str, list[tuple[float, float]]] = {}
    for tr, te in splitter.split(np.zeros(len(samples)), groups=names):
        predictor = train([samples[i] for i in tr])
        test = [samples[i] for i in te]
        preds = predictor.predict_kernels(
            [s.prediction_input() for s in test], [s.name for s in test], on_missing=on_missing
        )
        for i, p in zip(te, preds):
            predicted[int(i)] = p.latency_ms
            for ktype in p.missing:
                missing[ktype] = missing.get(ktype, 0) + 1
        for s in test:
            for k in s.measured:
                if not k.latency_ms or k.latency_ms <= 0:
                    continue
                target = predictor.resolve(k.type)
                if target is None or target == "overhead":
                    continue
                x = feature_matrix(feature_group(target), [k.raw])
                kernel_pairs.setdefault(k.type, []).append(
                    (float(predictor.models[target].predict(x)[0]), k.latency_ms)
                )
    order = sorted(predicted)
    pred_e2e = [predicted[i] for i in order]
    true_e2e = [samples[i].e2e_ms for i in order]
    errors = {k: mape([a for a, _ in v], [b for _, b in v]) for k, v in sorted(kernel_pairs.items())}
    counts = {k: len(v) for k, v in sorted(kernel_pairs.items())}
    return Report(
        mape(pred_e2e, true_e2e),
        len(order),
        errors,
        counts,
        [(samples[i].name, predicted[i], samples[i].e2e_ms) for i in order],
        missing,
    )


class CurvePoint(TypedDict):
    """One point of a learning curve: end-to-end MAPE when trained on ``n`` networks."""

    n: int
    e2e_mape: float


def smallest_fold_train(networks: int, folds: int) -> int:
    """Training networks of the smallest fold's training set in grouped ``folds``-fold CV."""
    return networks - -(-networks // folds)


def subsample(samples: Sequence[Sample], n: int, seed: int) -> list[Sample]:
    """The samples of ``n`` networks drawn (seeded) from those present, in their order."""
    names = sorted({s.name for s in samples})
    random.Random(seed).shuffle(names)
    keep = set(names[:n])
    return [s for s in samples if s.name in keep]


def grouped_cv_curve(
    samples: Sequence[Sample],
    train: Trainer,
    folds: int = CV_FOLDS,
    seed: int = 0,
    sizes: Sequence[int] = TRAINING_SIZES,
    progress: Callable[[int], object] | None = None,
) -> tuple[Report, list[CurvePoint]]:
    """Grouped cross-validation (``grouped_cv``) and its learning curve: the same folds with each
    training set cut to ``n`` networks for each of ``sizes`` below the smallest fold's, then the
    full folds. ``progress(n)`` is called before each cut run."""
    networks = len({s.name for s in samples})
    folds = min(folds, networks)
    report = grouped_cv(samples, train, folds=folds, seed=seed)
    largest = smallest_fold_train(networks, folds)
    curve: list[CurvePoint] = []
    for n in sizes:
        if n < largest:
            if progress is not None:
                progress(n)

            def train_on_n(tr: Sequence[Sample], n: int = n) -> ScenarioPredictor:
                return train(subsample(tr, n, seed))

            curve.append({"n": n, "e2e_mape": grouped_cv(samples, train_on_n, folds=folds, seed=seed).e2e_mape})
    curve.append({"n": largest, "e2e_mape": report.e2e_mape})
    return report, curve


G = TypeVar("G", int, str)


def holdout_split(groups: Sequence[G], seed: int = 0, fraction: float = HOLDOUT) -> tuple[list[G], set[G]]:
    """The networks (``groups``: one id per record, repeats allowed) in a seeded order, and the
    held-out ``fraction`` of them (at least one): (training networks in that order, held out)."""
    order = sorted(set(groups))
    random.Random(seed).shuffle(order)
    n_test = max(1, round(fraction * len(order)))
    return order[n_test:], set(order[:n_test])


def training_sizes(available: int, sizes: Sequence[int] = TRAINING_SIZES, whole: bool = True) -> list[int]:
    """The training sizes of a learning curve: each of ``sizes`` (at most the ``available``
    networks) and, with ``whole``, all of them."""
    out = {min(n, available) for n in sizes}
    if whole:
        out.add(available)
    return sorted(out)


Learner = Callable[[Sequence[ProfileRecord]], RecordDeducer]


@dataclass
class HoldoutStep:
    """One training size of a holdout evaluation: the deducer learned on its training networks,
    the training samples, and each held-out set's samples as that deducer deduces them."""

    n: int  # training networks
    deducer: RecordDeducer
    train: list[Sample]
    held_out: dict[str, list[Sample]]
    held_out_records: Mapping[str, Sequence[ProfileRecord]]

    def agreement(self, name: str) -> dict[str, float] | None:
        """How well this step's deducer reproduces the held-out set ``name`` as measured; None
        for a deducer that is the backend's own plan (it agrees by construction)."""
        return deduction_agreement(self.deducer, self.held_out_records[name])


def holdout_steps(
    train: Sequence[ProfileRecord],
    held_out: Mapping[str, Sequence[ProfileRecord]],
    learn: Learner,
    sizes: Sequence[int],
    statistic: str = "median",
) -> Iterator[HoldoutStep]:
    """For each training size ``n``: the deducer learned on the first ``n`` training networks
    (one record each, in the order smaller training sets take them) and the samples it gives for
    them and for every held-out set. Held-out networks teach no rule and no model."""
    for n in sizes:
        part = train[:n]
        deducer = learn(part)
        yield HoldoutStep(
            n,
            deducer,
            deducer.samples(part, statistic),
            {name: deducer.samples(records, statistic) for name, records in held_out.items()},
            held_out,
        )


@dataclass
class OverheadReport:
    """One overhead model over a predictor's kernel models, and its errors on each held-out set."""

    predictor: ScenarioPredictor
    reports: dict[str, Report]  # held-out set -> errors


def overhead_reports(
    predictor: ScenarioPredictor,
    train: Sequence[Sample],
    held_out: Mapping[str, Sequence[Sample]],
    overheads: Sequence[str] = OVERHEADS,
) -> dict[str, OverheadReport]:
    """Each overhead model fitted on ``train`` over the same kernel models (``with_overhead``),
    evaluated on every held-out set."""
    out: dict[str, OverheadReport] = {}
    for overhead in overheads:
        p = with_overhead(predictor, train, overhead)
        out[overhead] = OverheadReport(p, {name: evaluate(p, s, on_missing="zero") for name, s in held_out.items()})
    return out


def oracle_bound(
    train: Sequence[Sample], held_out: Mapping[str, Sequence[Sample]]
) -> dict[str, dict[str, float | None]]:
    """End-to-end MAPE of a perfect kernel predictor: each network's *measured* kernels summed,
    with the constant overhead (the mean gap of the training networks), the affine one and the
    calibration, fitted on the training networks' measured sums: overhead -> set -> MAPE (None
    for an empty set). No per-kernel model does better with the same overhead model; what is
    left is the gap between the profiled kernels and the unprofiled runs, network by network.
    It reads the kernels of the same profile as the end-to-end time, so it shares that profile's
    noise: it is no noise floor (``noise.noise_floor`` is)."""
    t_const = float(sum(s.e2e_ms - s.kernel_sum_ms for s in train) / len(train))
    a, b, c, t = fit_calibration(
        [s.kernel_sum_ms for s in train], [len(s.measured) for s in train], [s.e2e_ms for s in train], t_const
    )
    aff_a, aff_c, aff_t = fit_affine_overhead(train, t_const)
    models: dict[str, Callable[[Sample], float]] = {
        "constant": lambda s: s.kernel_sum_ms + t_const,
        "affine": lambda s: aff_a * (s.kernel_sum_ms + aff_c * len(s.measured)) + aff_t,
        "calibrated": lambda s: a * (s.kernel_sum_ms + c * len(s.measured)) ** b + t,
    }
    return {
        overhead: {
            name: mape([f(s) for s in samples], [s.e2e_ms for s in samples]) if samples else None
            for name, samples in held_out.items()
        }
        for overhead, f in models.items()
    }


__all__ = [
    "CV_FOLDS",
    "HOLDOUT",
    "TRAINING_SIZES",
    "CurvePoint",
    "HoldoutStep",
    "OverheadReport",
    "Report",
    "evaluate",
    "grouped_cv",
    "grouped_cv_curve",
    "holdout_split",
    "holdout_steps",
    "kernel_errors",
    "mape",
    "oracle_bound",
    "overhead_reports",
    "smallest_fold_train",
    "subsample",
    "training_sizes",
]
