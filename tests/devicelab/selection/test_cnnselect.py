"""CNNSelect (seed 002 section 5) as printed (``policy="paper"``): figure 11's walkthrough, each
equation's edges, the fallback, the probabilities and their draw, and the inputs it refuses. The
lab's reading is tested in test_lab_policy.py."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from devicelab.selection import ModelProfile, time_range
from devicelab.selection import select_model as _select_model
from devicelab.selection.cnnselect import select_batch as _select_batch

# Every test here is of the algorithm as printed, the reading the lab keeps as policy="paper".
select_model = functools.partial(_select_model, policy="paper")
select_batch = functools.partial(_select_batch, policy="paper")

# Figure 11 draws three profiles and states only A(m3) > A(m1) > A(m2), base m3 and M_E = {m2, m3}.
# Numbers consistent with it: m1 fast and fairly accurate, m3 the most accurate with T_L inside
# its left half, m2 slower than m3 and just under T_U.
M1 = ModelProfile("m1", 70.0, 100.0, 10.0)
M2 = ModelProfile("m2", 60.0, 180.0, 5.0)
M3 = ModelProfile("m3", 78.0, 170.0, 16.0)
WALK = dict(sla_ms=300.0, input_ms=50.0, threshold_ms=40.0)  # T_budget = T_U = 200, T_L = 160


def test_figure_11_walkthrough():
    s = select_model([M1, M2, M3], **WALK, rng=0)
    assert (s.t_budget, s.t_upper, s.t_lower) == (200.0, 200.0, 160.0)
    assert s.base == "m3" and not s.fallback
    # T_L = 160 <= mu(m3) = 170: the second case, [2 T_L - mu + sigma, mu + sigma] = [166, 186].
    assert s.t_explore == (166.0, 186.0)
    assert s.exploration == ("m2", "m3")
    # Equation 4: U(m3) = 78 (200 - 186) / |160 - 170| = 109.2, U(m2) = 60 (200 - 185) / |160 - 180| = 45.
    assert s.utilities == pytest.approx({"m2": 45.0, "m3": 109.2})
    assert s.probabilities == pytest.approx({"m1": 0.0, "m2": 45.0 / 154.2, "m3": 109.2 / 154.2})
    assert s.chosen in {"m2", "m3"}
    assert "m3" in s.why and "M_E = {m2, m3}" in s.why and "T_L <= mu(m*)" in s.why
    as_dict = s.as_dict()
    assert as_dict["exploration"] == ["m2", "m3"] and as_dict["t_explore"] == [166.0, 186.0]


def test_m1_meets_both_constraints_but_is_less_accurate_and_outside_t_e():
    s = select_model([M1, M2, M3], **WALK, rng=0)
    assert M1.mu_ms + M1.sigma_ms < s.t_upper and M1.mu_ms - M1.sigma_ms < s.t_lower
    assert s.t_explore is not None and not s.t_explore[0] <= M1.mu_ms <= s.t_explore[1]
    # m2 is in M_E although stage 1 could not pick it: mu - sigma = 175 is not < T_L (equation 3).
    assert M2.mu_ms - M2.sigma_ms >= s.t_lower and "m2" in s.exploration


def test_equation_2_is_strict():
    # T_U = 200: a model with mu + sigma == 200 does not qualify, one just below does.
    at = ModelProfile("at", 90.0, 190.0, 10.0)
    below = ModelProfile("below", 80.0, 189.0, 10.0)
    s = select_model([at, below], sla_ms=300, input_ms=50, threshold_ms=0, rng=0)
    assert s.base == "below"
    s = select_model([at], sla_ms=300, input_ms=50, threshold_ms=0, rng=0)
    assert s.fallback and s.base == "at"


def test_equation_3_as_printed_keeps_models_whose_optimistic_time_is_below_t_l():
    # mu - sigma < T_L, printed as "<": a fast model passes, a model with mu - sigma == T_L does not.
    # T_U = 200, T_L = 150.
    fast = ModelProfile("fast", 70.0, 60.0, 5.0)
    edge = ModelProfile("edge", 90.0, 160.0, 10.0)  # mu + sigma = 170 < 200 (eq. 2), mu - sigma = 150 == T_L
    s = select_model([fast, edge], sla_ms=300, input_ms=50, threshold_ms=50, rng=0)
    assert s.base == "fast"
    loose = ModelProfile("loose", 90.0, 160.0, 10.01)  # mu - sigma = 149.99 < T_L
    assert select_model([fast, loose], sla_ms=300, input_ms=50, threshold_ms=50, rng=0).base == "loose"


def test_equation_1_picks_the_most_accurate_and_breaks_ties_by_speed():
    a = ModelProfile("a", 75.0, 50.0, 1.0)
    b = ModelProfile("b", 75.0, 40.0, 1.0)
    c = ModelProfile("c", 60.0, 20.0, 1.0)
    assert select_model([a, b, c], sla_ms=500, input_ms=10, threshold_ms=0, rng=0).base == "b"


def test_fallback_is_the_fastest_model_with_certainty():
    # T_budget = 100 - 2 x 45 = 10 ms: no model fits, so the fastest runs (section 5.1, stage 1).
    models = [ModelProfile("slow", 80.0, 50.0, 2.0), ModelProfile("quick", 50.0, 25.0, 1.0)]
    s = select_model(models, sla_ms=100, input_ms=45, threshold_ms=5, rng=1)
    assert s.fallback and s.base == "quick" and s.chosen == "quick"
    assert s.probabilities == {"slow": 0.0, "quick": 1.0}
    assert s.exploration == () and s.t_explore is None and s.utilities == {}
    assert "fastest" in s.why


def test_negative_budget_falls_back_too():
    s = select_model([M1, M2, M3], sla_ms=50, input_ms=40, threshold_ms=10, rng=0)
    assert s.t_budget == -30 and s.fallback and s.chosen == "m1"


def test_first_case_of_t_e_as_printed_leaves_the_base_out():
    # T_U = 90, T_L = 70 > mu(base) = 50: T_E = [mu + sigma, 2 T_L - mu + sigma] = [52, 92].
    base = ModelProfile("base", 80.0, 50.0, 2.0)
    other = ModelProfile("other", 65.0, 62.0, 5.0)  # in T_E, mu + sigma = 67 < T_U
    s = select_model([base, other], sla_ms=190, input_ms=50, threshold_ms=20, rng=0)
    assert s.base == "base" and s.t_explore == (52.0, 92.0)
    assert s.exploration == ("other",) and s.probabilities == {"base": 0.0, "other": 1.0} and s.chosen == "other"


def test_empty_exploration_set_runs_the_base_model():
    base = ModelProfile("base", 80.0, 50.0, 2.0)
    far = ModelProfile("far", 65.0, 20.0, 1.0)  # outside T_E = [52, 92]
    s = select_model([base, far], sla_ms=190, input_ms=50, threshold_ms=20, rng=0)
    assert s.exploration == () and s.chosen == "base" and s.probabilities["base"] == 1.0
    assert "M_E is empty" in s.why


def test_t_l_equal_to_mu_of_the_base_is_the_second_case():
    # T_L == mu(m*) is "otherwise": [2 T_L - mu + sigma, mu + sigma] = [mu + sigma, mu + sigma].
    base = ModelProfile("base", 80.0, 70.0, 4.0)
    s = select_model([base], sla_ms=190, input_ms=50, threshold_ms=20, rng=0)  # T_U = 90, T_L = 70
    assert s.t_explore == (74.0, 74.0) and "T_L <= mu(m*)" in s.why


def test_a_member_at_t_l_takes_all_the_probability():
    # Equation 4 divides by |T_L - mu(m)|: a member with mu == T_L has infinite utility.
    base = ModelProfile("base", 80.0, 50.0, 2.0)
    at_tl = ModelProfile("at_tl", 60.0, 70.0, 5.0)
    near = ModelProfile("near", 62.0, 60.0, 1.0)
    s = select_model([base, at_tl, near], sla_ms=190, input_ms=50, threshold_ms=20, rng=3)
    assert set(s.exploration) == {"at_tl", "near"}
    assert math.isinf(s.utilities["at_tl"]) and s.as_dict()["utilities"]["at_tl"] == "inf"
    assert s.probabilities["at_tl"] == 1.0 and s.chosen == "at_tl"


def test_utility_falls_with_risk_and_distance_from_t_l():
    # Same accuracy: the model whose mu + sigma leaves more room under T_U, closer to T_L, weighs more.
    base = ModelProfile("base", 80.0, 50.0, 2.0)
    close = ModelProfile("close", 60.0, 66.0, 2.0)  # U = 60 (90 - 68) / 4 = 330
    far = ModelProfile("far", 60.0, 80.0, 2.0)  # U = 60 (90 - 82) / 10 = 48
    s = select_model([base, close, far], sla_ms=190, input_ms=50, threshold_ms=20, rng=0)
    assert s.utilities == pytest.approx({"close": 330.0, "far": 48.0})
    assert s.probabilities["close"] == pytest.approx(330 / 378)


def test_probabilities_sum_to_one_and_live_on_m_e():
    rng = np.random.default_rng(7)
    for _ in range(200):
        k = int(rng.integers(1, 8))
        models = [
            ModelProfile(f"m{j}", float(rng.uniform(40, 90)), float(rng.uniform(5, 150)), float(rng.uniform(0, 15)))
            for j in range(k)
        ]
        s = select_model(
            models,
            sla_ms=float(rng.uniform(20, 400)),
            input_ms=float(rng.uniform(0, 80)),
            threshold_ms=float(rng.uniform(0, 60)),
            rng=rng,
        )
        assert sum(s.probabilities.values()) == pytest.approx(1.0)
        assert all(p >= 0 for p in s.probabilities.values())
        support = {n for n, p in s.probabilities.items() if p > 0}
        assert s.chosen in support
        assert support <= (set(s.exploration) or {s.base})


def test_batch_rows_match_single_selections():
    models = [M1, M2, M3, ModelProfile("m4", 82.0, 195.0, 10.0)]
    inputs = np.linspace(0, 120, 61)
    t_upper = 300 - 2 * inputs
    batch = select_batch(models, t_upper, t_upper - 40)
    for i, t_in in enumerate(inputs):
        s = select_model(models, sla_ms=300, input_ms=float(t_in), threshold_ms=40, rng=0)
        assert models[int(batch.base[i])].name == s.base
        assert [s.probabilities[m.name] for m in models] == pytest.approx(list(batch.probabilities[i]))


def test_same_seed_same_choice_and_draws_follow_the_probabilities():
    picks = [select_model([M1, M2, M3], **WALK, rng=seed).chosen for seed in range(40)]
    assert picks == [select_model([M1, M2, M3], **WALK, rng=seed).chosen for seed in range(40)]
    assert set(picks) == {"m2", "m3"}
    batch = select_batch([M1, M2, M3], np.full(20_000, 200.0), np.full(20_000, 160.0))
    drawn = batch.draw(np.random.default_rng(5).random(20_000))
    share_m3 = float(np.mean(drawn == 2))
    assert share_m3 == pytest.approx(109.2 / 154.2, abs=0.015)
    assert not np.any(drawn == 0)  # m1 has probability 0


def test_time_range():
    assert time_range(300, 50, 40) == (200.0, 160.0, 200.0)


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        (dict(sla_ms=0, input_ms=1, threshold_ms=1), "sla_ms"),
        (dict(sla_ms=float("nan"), input_ms=1, threshold_ms=1), "sla_ms"),
        (dict(sla_ms=100, input_ms=-1, threshold_ms=1), "input_ms"),
        (dict(sla_ms=100, input_ms=1, threshold_ms=-5), "threshold_ms"),
        (dict(sla_ms=100, input_ms="fast", threshold_ms=1), "input_ms"),
    ],
)
def test_bad_request_inputs_raise_naming_them(kwargs, names):
    with pytest.raises(ValueError, match=names):
        select_model([M1], **kwargs, rng=0)


@pytest.mark.parametrize(
    ("build", "names"),
    [
        (lambda: ModelProfile("", 50, 10, 1), "name"),
        (lambda: ModelProfile("a", 0, 10, 1), "accuracy of 'a'"),
        (lambda: ModelProfile("a", 150, 10, 1), "accuracy of 'a'"),
        (lambda: ModelProfile("a", 50, 0, 1), "mu_ms of 'a'"),
        (lambda: ModelProfile("a", 50, 10, -1), "sigma_ms of 'a'"),
        (lambda: ModelProfile("a", 50, 10, 1, (5.0, -2.0)), "samples_ms of 'a'"),
        (lambda: ModelProfile("a", 50, float("inf"), 1), "mu_ms of 'a'"),
        (lambda: ModelProfile.from_samples("a", 50, []), "samples_ms of 'a'"),
    ],
)
def test_bad_model_profiles_raise_naming_the_field(build, names):
    with pytest.raises(ValueError, match=names):
        build()


def test_bad_candidate_lists_raise():
    with pytest.raises(ValueError, match="non-empty"):
        select_model([], sla_ms=100, input_ms=1, threshold_ms=1)
    with pytest.raises(ValueError, match="repeated: m1"):
        select_model([M1, M1], sla_ms=100, input_ms=1, threshold_ms=1)
    with pytest.raises(ValueError, match="ModelProfile"):
        select_model([M1, "m2"], sla_ms=100, input_ms=1, threshold_ms=1)  # type: ignore[list-item]


def test_profile_from_samples_and_json_round_trip():
    p = ModelProfile.from_samples("m", 71.8, [27.0, 28.0, 29.5, 28.1])
    assert p.mu_ms == pytest.approx(28.15) and p.sigma_ms == pytest.approx(np.std([27.0, 28.0, 29.5, 28.1], ddof=1))
    assert ModelProfile.from_dict(p.as_dict()) == p
    with pytest.raises(ValueError, match="mu_ms"):
        ModelProfile.from_dict({"name": "m", "accuracy": 50, "sigma_ms": 1})


def test_a_member_a_hair_from_t_l_does_not_turn_the_probabilities_into_nan():
    # T_L = 1e-300 and a member one ulp above it: |T_L - mu| ~ 1.5e-316 overflows equation 4's
    # quotient to inf although it is not 0; it counts as infinite utility, not as NaN.
    t_l = 1e-300
    base = ModelProfile("base", 80.0, 1e-301, 0.0)
    near = ModelProfile("near", 60.0, float(np.nextafter(t_l, 1.0)), 0.0)
    other = ModelProfile("other", 62.0, 1.5e-300, 0.0)
    batch = select_batch([base, near, other], np.array([90.0]), np.array([t_l]))
    assert batch.in_explore[0].tolist() == [True, True, True]  # sigma 0: T_E starts at mu(base)
    assert batch.probabilities[0].tolist() == [0.0, 1.0, 0.0]
