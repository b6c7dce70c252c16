"""The simulation of seed 002 section 5.2: policies on seeded request streams, measured per (policy,
SLA target, network profile); the paper's scenario against its claims; JSON round trips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from devicelab.selection import (
    POLICIES,
    ModelProfile,
    NetworkProfile,
    Scenario,
    SimulationResult,
    compare_policies,
    paper_models,
    paper_scenario,
    simulate,
)
from devicelab.selection.scenarios import TABLE5
from devicelab.selection.simulate import draw_execution_ms

STEADY = NetworkProfile.user("steady", latency_ms=10.0, throughput_mbps=80.0, cv=0.0)
JITTERY = NetworkProfile.user("jittery", latency_ms=15.0, throughput_mbps=40.0, cv=0.4)


def test_oracle_attains_at_least_every_policy_when_execution_is_exact():
    # With sigma = 0 a model's mean is its time, so the oracle (real network time, mean fits the
    # rest) meets the SLA whenever any model could: its attainment bounds every policy's.
    models = [
        ModelProfile("small", 50.0, 10.0, 0.0),
        ModelProfile("mid", 70.0, 30.0, 0.0),
        ModelProfile("big", 80.0, 60.0, 0.0),
    ]
    r = simulate(
        models,
        sla_targets_ms=[80, 120, 160, 220],
        profiles=[JITTERY],
        requests=3000,
        seed=1,
        threshold_ms=10,
        policies=POLICIES,
    )
    for sla in r.sla_targets_ms:
        oracle = r.point("oracle", sla, "jittery")
        for policy in POLICIES:
            assert oracle.attainment >= r.point(policy, sla, "jittery").attainment, (policy, sla)
        assert oracle.effective_accuracy >= r.point("fastest", sla, "jittery").effective_accuracy


def test_paper_scenario_against_the_papers_claims():
    sc = paper_scenario()
    r = simulate(
        sc,
        sla_targets_ms=[20, 60, 120, 140, 160, 200, 300],
        profiles=["prototype_wifi"],
        requests=4000,
        seed=2,
        policies=POLICIES,
    )
    point = lambda policy, sla: r.point(policy, float(sla), "prototype_wifi")  # noqa: E731
    # "At very low SLA target (< 30ms), CNNSelect aggressively chooses the fastest model MobileNetV1 0.25".
    assert point("cnnselect", 20).usage["MobileNetV1 0.25"] == 1.0
    # "static greedy continues to incur SLA violations until SLA target is more than 200ms" (63 ms of
    # network + NasNet Large's 113 ms): greedy misses where CNNSelect meets almost every SLA.
    for sla in (120, 140, 160):
        assert point("greedy", sla).attainment < 0.2
        assert point("cnnselect", sla).attainment > 0.95
    # Greedy's accuracy is higher ("up to 12% higher accuracy ... by sacrificing inference latency").
    assert point("greedy", 140).effective_accuracy > point("cnnselect", 140).effective_accuracy
    assert point("greedy", 140).mean_e2e_ms > point("cnnselect", 140).mean_e2e_ms
    # CNNSelect "converges" to the most accurate model when the SLA is large.
    assert point("cnnselect", 300).usage["NasNet Large"] > 0.95
    # It moves to more accurate models as the SLA grows.
    accs = [point("cnnselect", s).effective_accuracy for s in (20, 120, 140, 160, 200, 300)]
    assert accs == sorted(accs)
    c = compare_policies(r, "cnnselect", "greedy")
    assert c.attainment_improvement_pct is not None and c.attainment_improvement_pct > 30
    # The oracle beats the network-blind greedy everywhere.
    for sla in r.sla_targets_ms:
        assert point("oracle", sla).attainment >= point("greedy", sla).attainment


def test_measures_are_consistent():
    r = simulate(
        paper_models(),
        sla_targets_ms=[100, 150],
        profiles=["campus_wifi", "prototype_wifi"],
        requests=2000,
        seed=3,
        threshold_ms=20,
        policies=POLICIES,
    )
    assert len(r.points) == 2 * 2 * len(POLICIES)
    for p in r.points:
        assert 0 <= p.attainment <= 1
        assert p.accuracy_within_sla <= p.effective_accuracy + 1e-9
        assert p.effective_accuracy == pytest.approx(
            sum(share * next(m.accuracy for m in r.models if m.name == name) for name, share in p.usage.items())
        )
        assert sum(p.usage.values()) == pytest.approx(1.0) and set(p.usage) == {m.name for m in r.models}
        assert p.p25_e2e_ms <= p.p50_e2e_ms <= p.p75_e2e_ms <= p.p99_e2e_ms
        assert p.mean_e2e_ms > p.mean_network_ms
    # Common random numbers: every policy and SLA of a profile sees the same network draws.
    nets = {p.mean_network_ms for p in r.points if p.profile == "campus_wifi"}
    assert len(nets) == 1


def test_execution_is_drawn_from_stored_samples_when_given():
    # A model measured at exactly 10 or 30 ms: with a constant network of 10 + 10 ms, every
    # end-to-end time is 30 or 50 ms, never anything a normal with mu 20 sigma 10 would give.
    network = NetworkProfile.user("const", latency_ms=10.0, cv=0.0)
    m = ModelProfile("bimodal", 60.0, 20.0, 10.0, samples_ms=(10.0, 30.0))
    r = simulate(
        [m], sla_targets_ms=[40], profiles=[network], requests=4000, seed=4, threshold_ms=0, policies=["fastest"]
    )
    p = r.point("fastest", 40.0, "const")
    assert p.p25_e2e_ms == 30.0 and p.p75_e2e_ms == 50.0
    assert p.attainment == pytest.approx(0.5, abs=0.03)


def test_normal_draws_are_truncated_above_zero():
    m = ModelProfile("wide", 50.0, 1.0, 5.0)
    draws = draw_execution_ms([m], 20_000, np.random.default_rng(0))
    assert np.all(draws > 0)
    assert draws.mean() > 1.5  # the truncation moves the mean up from 1 ms


def test_same_seed_same_result_other_seed_other_result():
    kwargs = dict(sla_targets_ms=[90, 130], profiles=["prototype_wifi"], requests=1500, threshold_ms=20)
    a = simulate(paper_models(), seed=9, **kwargs).as_dict()
    assert a == simulate(paper_models(), seed=9, **kwargs).as_dict()
    assert a != simulate(paper_models(), seed=10, **kwargs).as_dict()


def test_result_and_scenario_json_round_trips():
    r = simulate(paper_scenario(), sla_targets_ms=[100, 200], profiles=["lte"], requests=500, seed=0)
    back = SimulationResult.from_dict(json.loads(json.dumps(r.as_dict())))
    assert back == r
    sc = paper_scenario()
    assert Scenario.from_dict(json.loads(json.dumps(sc.as_dict()))) == sc
    assert [m.name for m in sc.models] == [row.name for row in TABLE5]


def test_compare_policies_pools_the_points():
    r = simulate(paper_scenario(), sla_targets_ms=[120, 160, 200], profiles=["prototype_wifi"], requests=1000, seed=5)
    c = compare_policies(r, "cnnselect", "greedy", sla_max_ms=160)
    pts = [(r.point("cnnselect", s, "prototype_wifi"), r.point("greedy", s, "prototype_wifi")) for s in (120.0, 160.0)]
    met = sum(round(a.attainment * 1000) for a, _ in pts)
    base = sum(round(b.attainment * 1000) for _, b in pts)
    assert (c.points, c.met, c.baseline_met) == (2, met, base)
    assert c.attainment_improvement_pct == pytest.approx((met / base - 1) * 100)
    with pytest.raises(ValueError, match="greedy_budget"):
        compare_policies(r, "greedy_budget", "greedy")  # not among the default policies
    with pytest.raises(ValueError, match="no SLA target"):
        compare_policies(r, sla_min_ms=500)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(policies=["cnnselect", "random"]), "unknown policies"),
        (dict(policies=[]), "policies"),
        (dict(requests=0), "requests"),
        (dict(seed=-1), "seed"),
        (dict(sla_targets_ms=[]), "sla_targets_ms"),
        (dict(sla_targets_ms=[100, 100]), "twice"),
        (dict(sla_targets_ms=[-5]), "SLA target"),
        (dict(profiles=["5g"]), "no network preset '5g'"),
        (dict(profiles=[]), "profiles"),
        (dict(threshold_ms=-1), "threshold_ms"),
    ],
)
def test_bad_inputs_raise_naming_what_is_wrong(kwargs, message):
    base = dict(sla_targets_ms=[100], profiles=["lte"], requests=10, seed=0, threshold_ms=10)
    with pytest.raises(ValueError, match=message):
        simulate(paper_models(), **{**base, **kwargs})


def test_a_list_of_models_needs_the_grid():
    with pytest.raises(ValueError, match="sla_targets_ms, profiles and threshold_ms"):
        simulate(paper_models(), profiles=["lte"], threshold_ms=10)
