"""Evaluation as the latency paper does it (001, section 5): MAPE per kernel type and end to end,
train / test splits, and cross-validation grouped by network."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devicelab.predict.errors import PredictorError
from devicelab.predict.features import feature_group, feature_matrix
from devicelab.predict.predictor import ScenarioPredictor
from devicelab.predict.samples import Sample


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


__all__ = ["Report", "evaluate", "grouped_cv", "kernel_errors", "mape"]
