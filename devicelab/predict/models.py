"""The four latency models of the paper (001, section 4.2) with their hyper-parameter searches,
stored in a form that needs no machine-learning library to predict.

Every model minimizes the mean squared *percentage* error of eq. (1) on standardized
features (``x_hat = (x - mu) / sigma`` with the training mean and population standard
deviation). How each method gets there:

* **Lasso** (eq. 1 with ``w >= 0``): ``sum(((w.x + b - y) / y)^2)`` is least squares weighted
  by ``1 / y^2``, so scikit-learn's ``Lasso(positive=True)`` is fitted with
  ``sample_weight = 1 / y^2``. Its intercept is free and unpenalized (the weighted centering
  scikit-learn does); its objective is ``(1 / 2 sum(s)) sum(s r^2) + a ||w||_1`` once it rescales
  the weights to sum to N, so eq. (1)'s ``alpha`` is passed as ``a = alpha N / (2 sum(s))``.
  ``alpha`` is searched on a log grid over [1e-5, 1e2] by 5-fold cross-validation.
  (``search="fast"``, for tests and quick benchmarks, uses 3 folds and coarser grids.)
* **GBDT**: ``sample_weight = 1 / y^2`` as well. With weights, each stage's squared-error
  split criterion and leaf values (weighted means of the residuals) minimize exactly the
  weighted squared error of eq. (1). Stages 1..200 x minimum samples to split 2..7 by 5-fold
  CV, each model fitted once per fold and scored at every stage.
* **Random forest**: fitted on ``log y``. Squared error on ``log y`` is eq. (1) to first order
  (``log f - log y ~ (f - y) / y``). The exact weighting does not work for a forest: with
  ``1 / y^2`` spanning six orders of magnitude, every greedy split serves the fastest kernels
  and the slow ones, which dominate end-to-end latency, get leaves from far-away neighbours.
  Each leaf then predicts a geometric mean. Trees 1..10 x minimum samples to split 2..50 by 5-fold CV,
  each forest fitted once per fold and scored for every prefix of its trees.
* **MLP**: ReLU layers, Adam, fitted on standardized ``log y`` (first-order eq. 1, as for the
  forest, and the scale a network trains well on; scikit-learn's early stopping then watches
  the same loss on the held-out data). 20 % of the data held out, training stopped after 50
  epochs without improvement (the paper's protocol). The paper's grid (1-6 layers of 64-512
  units, three learning rates, three weight decays: 216 configurations) is sampled: a seeded
  random subset of ``mlp_trials`` configurations, the best on the held-out data wins
  (``search="fast"`` samples up to 3 layers of up to 256 units, the two larger learning rates,
  and at most 300 epochs). Predictions stay within 10x of the training latencies.

A kernel type with fewer than ``FEW_ROWS`` (50) training rows gets Lasso whatever the method
(``hyper["instead_of"]`` says so): a forest or boosted trees on a few dozen rows predict from a
handful of leaves and cannot follow the work beyond the largest kernel they saw, and an MLP
extrapolates without bound. With fewer than ``MIN_ROWS_FOR_SEARCH`` (10) rows, too few to
cross-validate, that Lasso sees only the group's work feature (``features.WORK``: FLOPs, or the
elements a data-moving kernel moves; ``fit_work_lasso``).

Fitted models keep only numbers: Lasso weights, trees as arrays (``trees.TreeArrays``), MLP
weights and biases. ``FittedModel.predict`` evaluates them with numpy.
"""

from __future__ import annotations

import itertools
import random
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devicelab.predict.errors import PredictorError
from devicelab.predict.trees import TreeArrays, from_sklearn

METHODS = ("lasso", "rf", "gbdt", "mlp")
SEARCHES = ("paper", "fast")

LASSO_ALPHAS = tuple(float(a) for a in np.logspace(-5, 2, 15))
RF_TREES = tuple(range(1, 11))
RF_MIN_SPLIT = (2, 5, 10, 20, 35, 50)
GBDT_STAGES = 200
GBDT_MIN_SPLIT = (2, 3, 4, 5, 6, 7)
MLP_LAYERS = (1, 2, 3, 4, 5, 6)
MLP_WIDTHS = (64, 128, 256, 512)
MLP_LEARNING_RATES = (5e-3, 5e-4, 5e-5)
MLP_WEIGHT_DECAYS = (1e-3, 1e-4, 1e-5)
MLP_MAX_EPOCHS = 1000
MLP_FAST_MAX_EPOCHS = 300
LOG10 = float(np.log(10.0))
MIN_ROWS_FOR_SEARCH = 10  # fewer rows than this: no cross-validation (and Lasso on the work alone)
DEFAULT_ALPHA = 1e-3  # Lasso's alpha when there are too few rows to search it
FEW_ROWS = 50  # fewer rows than this for a kernel type: Lasso, whatever the method (see ``fit``)
CV_FOLDS = 5
FAST_FOLDS = 3


def mspe(pred: np.ndarray, y: np.ndarray) -> float:
    """Mean squared percentage error (eq. 1 without the penalty)."""
    return float(np.mean(((pred - y) / y) ** 2))


@dataclass
class FittedModel:
    """One kernel type's latency model: standardization, method, parameters as plain numbers."""

    method: str  # lasso | rf | gbdt | mlp | constant (fewer than 3 training rows)
    mean: np.ndarray
    std: np.ndarray
    params: dict[str, Any]
    hyper: dict[str, Any] = field(default_factory=dict)
    cv_mspe: float | None = None
    n_train: int = 0
    _trees: TreeArrays | None = field(default=None, repr=False)

    @property
    def row_by_row(self) -> bool:
        """Whether a row's prediction is the same whatever other rows it is predicted with: tree
        walks and constants are; a matrix product (Lasso, MLP) may round its last bits differently."""
        return self.method in ("constant", "rf", "gbdt")

    def standardize(self, x: np.ndarray) -> np.ndarray:
        """Features scaled with the training mean and standard deviation."""
        scaled: np.ndarray = (np.asarray(x, dtype=np.float64) - self.mean) / self.std
        return scaled

    def predict(self, x: np.ndarray) -> np.ndarray:
        """Latencies (ms, >= 0) for raw feature rows of this kernel type's Table 3 group."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != len(self.mean):
            raise PredictorError(f"expected {len(self.mean)} features per row, got shape {x.shape}")
        z = self.standardize(x)
        m = self.method
        if m == "constant":
            out = np.full(len(z), float(self.params["value"]))
        elif m == "lasso":
            out = z @ np.asarray(self.params["coef"]) + float(self.params["intercept"])
        elif m in ("rf", "gbdt"):
            leaves = self.trees.leaf_values(z)
            if m == "rf":
                out = np.exp(leaves.mean(axis=1))  # trees of log latency
            else:
                out = float(self.params["init"]) + float(self.params["learning_rate"]) * leaves.sum(axis=1)
        elif m == "mlp":
            h = z
            weights, biases = self.params["weights"], self.params["biases"]
            for i, (w, b) in enumerate(zip(weights, biases)):
                h = h @ np.asarray(w) + np.asarray(b)
                if i < len(weights) - 1:
                    h = np.maximum(h, 0.0)
            log_out = h[:, 0] * float(self.params["log_std"]) + float(self.params["log_mean"])
            # ReLU networks extrapolate linearly, and exp() of that explodes far from the data:
            # predictions stay within a factor of 10 of the latencies seen in training.
            lo, hi = self.params.get("log_range", (-np.inf, np.inf))
            out = np.exp(np.clip(log_out, float(lo) - LOG10, float(hi) + LOG10))
        else:
            raise PredictorError(f"unknown model method {m!r}")
        # A latency is never negative; a linear model can dip below zero far from its data.
        clipped: np.ndarray = np.maximum(out, 0.0)
        return clipped

    @property
    def trees(self) -> TreeArrays:
        """The tree ensemble of an RF / GBDT model."""
        if self._trees is None:
            self._trees = TreeArrays.from_dict(self.params["trees"])
            self._trees.validate(len(self.mean))
        return self._trees

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return {
            "method": self.method,
            "mean": self.mean.tolist(),
            "std": self.std.tolist(),
            "params": self.params,
            "hyper": self.hyper,
            "cv_mspe": self.cv_mspe,
            "n_train": self.n_train,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FittedModel:
        """From ``to_dict`` data, checked so a broken model fails here and not mid-prediction."""
        m = cls(
            str(d["method"]),
            np.asarray(d["mean"], dtype=np.float64),
            np.asarray(d["std"], dtype=np.float64),
            dict(d["params"]),
            dict(d.get("hyper", {})),
            d.get("cv_mspe"),
            int(d.get("n_train", 0)),
        )
        n = len(m.mean)
        if len(m.std) != n or not np.all(np.isfinite(m.mean)) or not np.all(m.std > 0):
            raise PredictorError("the standardization arrays are inconsistent")
        if m.method == "lasso":
            coef = np.asarray(m.params["coef"], dtype=np.float64)
            if coef.shape != (n,) or np.any(coef < 0) or not np.isfinite(float(m.params["intercept"])):
                raise PredictorError("the Lasso weights are not n non-negative numbers")
        elif m.method in ("rf", "gbdt"):
            m.trees  # noqa: B018 - parse and validate now
        elif m.method == "mlp":
            width = n
            for w, b in zip(m.params["weights"], m.params["biases"]):
                w, b = np.asarray(w, dtype=np.float64), np.asarray(b, dtype=np.float64)
                if w.ndim != 2 or w.shape[0] != width or b.shape != (w.shape[1],):
                    raise PredictorError("the MLP layer shapes do not chain")
                width = w.shape[1]
            if width != 1 or len(m.params["weights"]) != len(m.params["biases"]):
                raise PredictorError("the MLP does not end in one output")
        elif m.method != "constant":
            raise PredictorError(f"unknown model method {m.method!r}")
        return m


def standardization(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Training mean and population standard deviation (a constant feature gets sigma = 1)."""
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    return mean, np.where(std > 0, std, 1.0)


def _folds(n: int, seed: int, search: str = "paper") -> list[tuple[np.ndarray, np.ndarray]]:
    """The paper's 5-fold cross-validation (3 folds for ``search="fast"``)."""
    from sklearn.model_selection import KFold

    k = CV_FOLDS if search == "paper" else FAST_FOLDS
    return list(KFold(n_splits=min(k, n), shuffle=True, random_state=seed).split(np.zeros(n)))


def _constant(x: np.ndarray, y: np.ndarray) -> FittedModel:
    """The constant minimizing eq. (1): sum(1/y) / sum(1/y^2)."""
    mean, std = standardization(x)
    value = float(np.sum(1 / y) / np.sum(1 / y**2))
    return FittedModel("constant", mean, std, {"value": value}, {}, None, len(y))


def _fit_lasso(z: np.ndarray, y: np.ndarray, alpha: float, seed: int) -> Any:
    from sklearn.linear_model import Lasso

    s = 1.0 / y**2
    model = Lasso(
        alpha=alpha * len(y) / (2.0 * s.sum()),
        positive=True,
        fit_intercept=True,
        max_iter=100_000,
        tol=1e-8,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence chatter on the extreme alphas of the grid
        model.fit(z, y, sample_weight=s)
    return model


def fit_lasso(x: np.ndarray, y: np.ndarray, seed: int, search: str = "paper") -> FittedModel:
    """Eq. (1) with ``w >= 0``; ``alpha`` by 5-fold CV on MSPE."""
    mean, std = standardization(x)
    z = (x - mean) / std
    alphas = LASSO_ALPHAS if search == "paper" else LASSO_ALPHAS[::2]
    best_alpha, best = DEFAULT_ALPHA, None
    if len(y) >= MIN_ROWS_FOR_SEARCH:
        scores = []
        for a in alphas:
            errs = []
            for tr, va in _folds(len(y), seed, search):
                errs.append(mspe(_fit_lasso(z[tr], y[tr], a, seed).predict(z[va]), y[va]))
            scores.append(float(np.mean(errs)))
        i = int(np.argmin(scores))
        best_alpha, best = alphas[i], scores[i]
    model = _fit_lasso(z, y, best_alpha, seed)
    params = {"coef": [float(c) for c in model.coef_], "intercept": float(model.intercept_)}
    return FittedModel("lasso", mean, std, params, {"alpha": best_alpha}, best, len(y))


def fit_work_lasso(x: np.ndarray, y: np.ndarray, work: int, seed: int) -> FittedModel:
    """Eq. (1) with ``w >= 0`` on one feature, the work (``features.WORK``): time grows with it
    from an intercept. For a kernel type with too few rows to cross-validate anything: the full
    Lasso then fits a handful of rows with whichever of its ten or so features happens to line
    up with them, and extrapolates along it."""
    mean, std = standardization(x)
    z = (x - mean) / std
    model = _fit_lasso(z[:, [work]], y, DEFAULT_ALPHA, seed)
    coef = [0.0] * x.shape[1]
    coef[work] = float(model.coef_[0])
    params = {"coef": coef, "intercept": float(model.intercept_)}
    return FittedModel("lasso", mean, std, params, {"alpha": DEFAULT_ALPHA, "work_only": work}, None, len(y))


def _rf(n_trees: int, min_split: int, seed: int) -> Any:
    from sklearn.ensemble import RandomForestRegressor

    return RandomForestRegressor(n_estimators=n_trees, min_samples_split=min_split, random_state=seed, n_jobs=1)


def fit_rf(x: np.ndarray, y: np.ndarray, seed: int, search: str = "paper") -> FittedModel:
    """Random forest on ``log y``: trees 1..10 and minimum samples to split 2..50 by 5-fold CV."""
    mean, std = standardization(x)
    z = (x - mean) / std
    ly = np.log(y)
    splits = RF_MIN_SPLIT if search == "paper" else (2, 10, 35)
    best: tuple[float | None, int, int] = (None, 10, 2)
    if len(y) >= MIN_ROWS_FOR_SEARCH:
        scores = np.zeros((len(splits), len(RF_TREES)))
        folds = _folds(len(y), seed, search)
        for si, m in enumerate(splits):
            for tr, va in folds:
                forest = _rf(max(RF_TREES), m, seed).fit(z[tr], ly[tr])
                per_tree = np.stack([t.predict(z[va].astype(np.float32)) for t in forest.estimators_], axis=1)
                prefix = np.cumsum(per_tree, axis=1) / np.arange(1, per_tree.shape[1] + 1)
                for ti, n in enumerate(RF_TREES):
                    scores[si, ti] += mspe(np.exp(prefix[:, n - 1]), y[va]) / len(folds)
        si, ti = (int(v) for v in np.unravel_index(int(np.argmin(scores)), scores.shape))
        best = (float(scores[si, ti]), RF_TREES[ti], splits[si])
    cv, n_trees, min_split = best
    forest = _rf(n_trees, min_split, seed).fit(z, ly)
    trees = from_sklearn(forest.estimators_)
    fitted = FittedModel(
        "rf",
        mean,
        std,
        {"trees": trees.to_dict(), "target": "log"},
        {"n_estimators": n_trees, "min_samples_split": min_split},
        cv,
        len(y),
        trees,
    )
    _check_same(fitted, np.exp(forest.predict(z)), z, x)
    return fitted


def _gbdt(min_split: int, seed: int, stages: int = GBDT_STAGES) -> Any:
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(
        n_estimators=stages, min_samples_split=min_split, learning_rate=0.1, max_depth=3, random_state=seed
    )


def fit_gbdt(x: np.ndarray, y: np.ndarray, seed: int, search: str = "paper") -> FittedModel:
    """Gradient-boosted trees: stages 1..200 and minimum samples to split 2..7 by 5-fold CV."""
    mean, std = standardization(x)
    z = (x - mean) / std
    w = 1.0 / y**2
    splits = GBDT_MIN_SPLIT if search == "paper" else (2, 5)
    best: tuple[float | None, int, int] = (None, 100, 2)
    if len(y) >= MIN_ROWS_FOR_SEARCH:
        scores = np.zeros((len(splits), GBDT_STAGES))
        folds = _folds(len(y), seed, search)
        for si, m in enumerate(splits):
            for tr, va in folds:
                g = _gbdt(m, seed).fit(z[tr], y[tr], sample_weight=w[tr])
                for stage, pred in enumerate(g.staged_predict(z[va])):
                    scores[si, stage] += mspe(pred, y[va]) / len(folds)
        si, stage = (int(v) for v in np.unravel_index(int(np.argmin(scores)), scores.shape))
        best = (float(scores[si, stage]), stage + 1, splits[si])
    cv, stages, min_split = best
    g = _gbdt(min_split, seed, stages).fit(z, y, sample_weight=w)
    trees = from_sklearn([e[0] for e in g.estimators_])
    # The initial prediction (the weighted mean) is read back from the fitted model, not from
    # its private attributes: prediction minus the stages' contribution.
    contrib = g.learning_rate * trees.leaf_values(z[:1]).sum(axis=1)
    init = float(g.predict(z[:1])[0] - contrib[0])
    fitted = FittedModel(
        "gbdt",
        mean,
        std,
        {"trees": trees.to_dict(), "init": init, "learning_rate": float(g.learning_rate)},
        {"n_estimators": stages, "min_samples_split": min_split},
        cv,
        len(y),
        trees,
    )
    _check_same(fitted, g.predict(z), z, x)
    return fitted


def _mlp_configs(seed: int, trials: int, search: str = "paper") -> list[dict[str, Any]]:
    if search == "paper":
        grid = list(itertools.product(MLP_LAYERS, MLP_WIDTHS, MLP_LEARNING_RATES, MLP_WEIGHT_DECAYS))
    else:  # the smaller and faster-learning corner of the grid
        grid = list(itertools.product(MLP_LAYERS[:3], MLP_WIDTHS[:3], MLP_LEARNING_RATES[:2], MLP_WEIGHT_DECAYS))
    picks = random.Random(f"mlp/{seed}").sample(grid, min(trials, len(grid)))
    return [{"layers": a, "width": b, "learning_rate": c, "weight_decay": d} for a, b, c, d in picks]


def fit_mlp(
    x: np.ndarray, y: np.ndarray, seed: int, search: str = "paper", trials: int = 8, max_epochs: int = MLP_MAX_EPOCHS
) -> FittedModel:
    """MLP on standardized ``log y``: a seeded sample of the paper's grid; the best on the 20 %
    held-out data wins."""
    from sklearn.neural_network import MLPRegressor

    mean, std = standardization(x)
    z = (x - mean) / std
    ly = np.log(y)
    log_mean, log_std = float(ly.mean()), float(ly.std()) or 1.0
    t = (ly - log_mean) / log_std
    if len(y) < MIN_ROWS_FOR_SEARCH:
        return _constant(x, y)
    configs = _mlp_configs(seed, trials, search)
    epochs = max_epochs if search == "paper" else min(max_epochs, MLP_FAST_MAX_EPOCHS)
    best_model, best_score, best_cfg = None, -np.inf, configs[0]
    for cfg in configs:
        m = MLPRegressor(
            hidden_layer_sizes=(cfg["width"],) * cfg["layers"],
            activation="relu",
            solver="adam",
            learning_rate_init=cfg["learning_rate"],
            alpha=cfg["weight_decay"],
            early_stopping=True,
            validation_fraction=0.2,
            n_iter_no_change=50,
            max_iter=epochs,
            random_state=seed,
            batch_size=min(200, len(y)),
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ConvergenceWarning at max_epochs
            m.fit(z, t)
        score = float(m.best_validation_score_)
        if best_model is None or score > best_score:
            best_model, best_score, best_cfg = m, score, cfg
    assert best_model is not None
    params = {
        "weights": [c.tolist() for c in best_model.coefs_],
        "biases": [b.tolist() for b in best_model.intercepts_],
        "log_mean": log_mean,
        "log_std": log_std,
        "log_range": [float(ly.min()), float(ly.max())],
        "target": "log",
    }
    pred = np.exp(np.clip(best_model.predict(z) * log_std + log_mean, ly.min() - LOG10, ly.max() + LOG10))
    fitted = FittedModel("mlp", mean, std, params, {**best_cfg, "epochs": int(best_model.n_iter_)}, None, len(y))
    fitted.hyper["validation_r2"] = best_score
    _check_same(fitted, pred, z, x)
    return fitted


def _check_same(fitted: FittedModel, library_pred: np.ndarray, z: np.ndarray, x: np.ndarray) -> None:
    """Our numpy evaluation must reproduce the library's predictions on the training rows."""
    ours = fitted.predict(x)
    ref = np.maximum(np.asarray(library_pred, dtype=np.float64), 0.0)
    if not np.allclose(ours, ref, rtol=1e-9, atol=1e-12):
        worst = float(np.max(np.abs(ours - ref)))
        raise PredictorError(f"the exported {fitted.method} model differs from the library's by {worst:g} ms")


def fit(
    method: str,
    x: np.ndarray,
    y: np.ndarray,
    seed: int = 0,
    search: str = "paper",
    mlp_trials: int = 8,
    few_rows: int = FEW_ROWS,
    work: int | None = None,
) -> FittedModel:
    """Fit one kernel type's model by ``method`` with the paper's hyper-parameter search.

    A kernel type with fewer than ``few_rows`` training rows gets a Lasso model whatever the
    method (``hyper["instead_of"]`` names the method it stands in for): with a few dozen rows
    a tree ensemble has a handful of leaves to cover the type's whole range and an MLP
    extrapolates without bound, while Lasso's non-negative weights on work-like features keep
    the prediction growing with the work (the paper, too, finds Lasso best on small training
    sets). With fewer than ``MIN_ROWS_FOR_SEARCH`` rows and ``work`` (the column of the
    group's work feature) given, that Lasso sees the work alone (``fit_work_lasso``). Fewer
    than 3 rows: the constant minimizing eq. (1)."""
    if method not in METHODS:
        raise PredictorError(f"unknown method {method!r}; the methods are {list(METHODS)}")
    if search not in SEARCHES:
        raise PredictorError(f"unknown search {search!r}; use one of {list(SEARCHES)}")
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or len(x) != len(y) or len(y) == 0:
        raise PredictorError(f"cannot fit on features of shape {x.shape} and {len(y)} latencies")
    if not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)) or np.any(y <= 0):
        raise PredictorError("training latencies must be positive and finite, features finite")
    if len(y) < 3:
        return _constant(x, y)
    if method == "lasso" or len(y) < few_rows:
        if len(y) < MIN_ROWS_FOR_SEARCH and work is not None:
            fitted = fit_work_lasso(x, y, work, seed)
        else:
            fitted = fit_lasso(x, y, seed, search)
        if method != "lasso":
            fitted.hyper["instead_of"] = method
        return fitted
    if method == "rf":
        return fit_rf(x, y, seed, search)
    if method == "gbdt":
        return fit_gbdt(x, y, seed, search)
    return fit_mlp(x, y, seed, search, trials=mlp_trials)


__all__ = ["METHODS", "SEARCHES", "FittedModel", "fit", "fit_work_lasso", "mspe", "standardization"]
