"""The four methods fit, search their hyper-parameters, and predict through our own numpy code."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.predict.errors import PredictorError
from devicelab.predict.models import METHODS, FittedModel, fit, mspe


def _data(n: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Latency-like data: a product of sizes plus a floor, spanning two orders of magnitude."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1, 10, size=(n, 3))
    y = 0.05 + 0.02 * x[:, 0] * x[:, 1] + 0.1 * x[:, 2]
    return x, y * rng.lognormal(0, 0.01, n)


@pytest.mark.parametrize("method", METHODS)
def test_each_method_learns_and_generalizes(method: str) -> None:
    x, y = _data()
    model = fit(method, x[:200], y[:200], seed=1, search="fast", mlp_trials=2)
    pred = model.predict(x[200:])
    relative = np.mean(np.abs(pred - y[200:]) / y[200:])
    assert relative < {"lasso": 0.25, "rf": 0.12, "gbdt": 0.08, "mlp": 0.15}[method]
    assert model.n_train == 200
    assert model.hyper  # the search chose something


@pytest.mark.parametrize("method", METHODS)
def test_stored_model_predicts_the_same(method: str) -> None:
    x, y = _data(120)
    model = fit(method, x, y, seed=3, search="fast", mlp_trials=1)
    again = FittedModel.from_dict(model.to_dict())
    assert np.array_equal(again.predict(x), model.predict(x))


def test_lasso_minimizes_equation_1_with_non_negative_weights() -> None:
    from scipy.optimize import minimize

    x, y = _data(150)
    x = np.column_stack([x, -x[:, 0]])  # a feature that falls as latency rises: its weight must be 0
    model = fit("lasso", x, y, seed=0)
    coef = np.asarray(model.params["coef"])
    assert np.all(coef >= 0)
    assert coef[3] == 0
    z = model.standardize(x)
    alpha = model.hyper["alpha"]

    def eq1(v: np.ndarray) -> float:
        w, b = v[:-1], v[-1]
        return float(np.mean(((z @ w + b - y) / y) ** 2) + alpha * np.abs(w).sum())

    ours = eq1(np.append(coef, model.params["intercept"]))
    start = np.append(np.full(4, 0.01), y.mean())
    best = minimize(
        eq1,
        start,
        bounds=[(0, None)] * 4 + [(None, None)],
        method="L-BFGS-B",
        options={"maxiter": 20000, "ftol": 1e-15},
    )
    assert ours <= best.fun + 1e-6


def test_alpha_search_picks_by_cross_validation() -> None:
    x, y = _data(80)
    model = fit("lasso", x, y, seed=0)
    assert 1e-5 <= model.hyper["alpha"] <= 1e2
    assert model.cv_mspe is not None and model.cv_mspe < 0.1


def test_tree_searches_use_the_paper_ranges() -> None:
    x, y = _data(100)
    rf = fit("rf", x, y, seed=0, search="fast")
    gbdt = fit("gbdt", x, y, seed=0, search="fast")
    assert 1 <= rf.hyper["n_estimators"] <= 10 and 2 <= rf.hyper["min_samples_split"] <= 50
    assert 1 <= gbdt.hyper["n_estimators"] <= 200 and 2 <= gbdt.hyper["min_samples_split"] <= 7


def test_tiny_training_sets_fall_back_to_the_best_constant() -> None:
    x = np.array([[1.0], [2.0]])
    y = np.array([1.0, 3.0])
    model = fit("gbdt", x, y)
    assert model.method == "constant"
    c = model.predict(x)[0]
    assert c == pytest.approx((1 / 1 + 1 / 3) / (1 / 1 + 1 / 9))
    assert mspe(np.full(2, c), y) <= mspe(np.full(2, c * 1.01), y)


@pytest.mark.parametrize("method", ["rf", "gbdt", "mlp"])
def test_kernel_types_with_few_rows_get_lasso(method: str) -> None:
    # 30 rows of a latency proportional to the work (column 0; column 1 is noise): a forest or
    # an MLP fitted on them would predict a 4x larger kernel at about the largest latency seen,
    # Lasso keeps growing with the work.
    rng = np.random.default_rng(4)
    x = rng.uniform(1, 10, size=(30, 2))
    y = (0.02 + 0.05 * x[:, 0]) * rng.lognormal(0, 0.01, 30)
    model = fit(method, x, y, seed=0, search="fast", mlp_trials=1)
    assert model.method == "lasso" and model.hyper["instead_of"] == method
    assert model.predict(np.array([[40.0, 5.0]]))[0] == pytest.approx(0.02 + 0.05 * 40, rel=0.1)
    # with enough rows the method itself is fitted
    x, y = _data(60, seed=4)
    assert fit(method, x, y, seed=0, search="fast", mlp_trials=1).method == method
    assert fit(method, x, y, seed=0, search="fast", mlp_trials=1, few_rows=61).method == "lasso"


@pytest.mark.parametrize("method", ["lasso", "gbdt"])
def test_kernel_types_too_few_to_cross_validate_are_fitted_on_their_work_alone(method: str) -> None:
    # Five grouped convolutions whose output size (column 1) happens to rise with their time as
    # well as their work (column 0): the full Lasso may follow either; a large output of little
    # work must be priced by the work.
    work = np.array([3.0, 20.0, 25.0, 40.0, 1570.0])  # MFLOPs
    out = np.array([7.0, 25.0, 31.0, 50.0, 1000.0])  # output elements (thousands)
    y = 0.002 + 0.0127 * work
    x = np.column_stack([work, out])
    model = fit(method, x, y, seed=0, search="fast", work=0)
    assert model.method == "lasso" and model.hyper["work_only"] == 0
    assert model.params["coef"][1] == 0.0 and model.params["coef"][0] > 0
    big_output_little_work = np.array([[29.0, 200.0]])
    assert model.predict(big_output_little_work)[0] == pytest.approx(0.002 + 0.0127 * 29, rel=0.1)
    assert FittedModel.from_dict(model.to_dict()).predict(big_output_little_work) == pytest.approx(
        model.predict(big_output_little_work)
    )
    if method != "lasso":
        assert model.hyper["instead_of"] == method
    # with enough rows to cross-validate, every feature is the model's again
    x10, y10 = _data(12, seed=5)
    assert "work_only" not in fit(method, x10, y10, seed=0, search="fast", work=0).hyper
    # without a work column (callers outside the predictor), the full Lasso
    assert "work_only" not in fit(method, x, y, seed=0, search="fast").hyper


def test_bad_training_data_is_refused() -> None:
    with pytest.raises(PredictorError, match="positive"):
        fit("lasso", np.ones((5, 2)), np.array([1, 2, 0, 3, 4.0]))
    with pytest.raises(PredictorError, match="unknown method"):
        fit("svm", np.ones((5, 2)), np.ones(5))
    with pytest.raises(PredictorError, match="features per row"):
        fit("lasso", np.ones((5, 2)), np.arange(1, 6.0)).predict(np.ones((2, 3)))
