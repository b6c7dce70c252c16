"""What the selection page draws, built from a real simulation's stored result: each profile's
series are the stored points, CNNSelect's usage leaves out the models it never chose, the table's
improvement over greedy is the relative gain in requests that met the SLA, and the figures carry
exactly those numbers with titled axes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dashboard import selection_figures as charts
from dashboard.selection_summary import simulation_view
from devicelab.selection import paper_scenario, simulate

SLAS = [100.0, 250.0, 400.0]
PROFILES = ["campus_wifi", "lte"]
REQUESTS = 400


@pytest.fixture(scope="module")
def stored() -> dict[str, Any]:
    """The paper's models over three SLA targets and two networks, as the simulation job stores it."""
    result = simulate(paper_scenario(), sla_targets_ms=SLAS, profiles=PROFILES, requests=REQUESTS, seed=3)
    return json.loads(json.dumps(result.as_dict()))  # through JSON, as it comes out of the database


def _points(stored: dict[str, Any], policy: str, profile: str) -> list[dict[str, Any]]:
    by_sla = {p["sla_ms"]: p for p in stored["points"] if p["policy"] == policy and p["profile"] == profile}
    return [by_sla[s] for s in SLAS]


def test_each_profile_holds_the_stored_points_per_policy(stored: dict[str, Any]) -> None:
    view = simulation_view(stored)
    assert [p.name for p in view.profiles] == PROFILES
    for pv in view.profiles:
        assert pv.policies == ("cnnselect", "cnnselect_lab", "greedy", "fastest", "oracle") and pv.requests == REQUESTS
        for policy, series in pv.series.items():
            points = _points(stored, policy, pv.name)
            assert list(series.sla_ms) == SLAS
            assert list(series.attainment) == [p["attainment"] for p in points]
            assert list(series.over_sla_pct) == pytest.approx([100 * (1 - p["attainment"]) for p in points])
            assert list(series.effective_accuracy) == [p["effective_accuracy"] for p in points]
            assert list(series.p25_e2e_ms) == [p["p25_e2e_ms"] for p in points]
            assert list(series.p75_e2e_ms) == [p["p75_e2e_ms"] for p in points]
        assert pv.mean_network_ms == _points(stored, "greedy", pv.name)[0]["mean_network_ms"]
    # LTE's network takes longer than campus WiFi's
    assert view.profiles[1].mean_network_ms > view.profiles[0].mean_network_ms
    # The lab's reading beside the paper's: its own comparison with greedy and its shortfalls.
    assert view.lab is not None and view.lab.policy == "cnnselect_lab" and view.lab.baseline == "greedy"
    assert view.lab_shortfalls == 0


def test_usage_is_cnnselects_and_leaves_out_the_models_it_never_chose(stored: dict[str, Any]) -> None:
    for pv in simulation_view(stored).profiles:
        points = _points(stored, "cnnselect", pv.name)
        chosen = {m for p in points for m, share in p["usage"].items() if share > 0}
        assert {u.model for u in pv.usage} == chosen
        assert set(pv.never_chosen) == set(points[0]["usage"]) - chosen
        for i in range(len(SLAS)):
            assert sum(u.share[i] for u in pv.usage) == pytest.approx(1.0)
        assert [u.mu_ms for u in pv.usage] == sorted(u.mu_ms for u in pv.usage)  # fastest at the bottom


def test_the_improvement_over_greedy_is_relative_attainment_from_the_stored_points(stored: dict[str, Any]) -> None:
    view = simulation_view(stored)
    met = {(p["policy"], p["profile"], p["sla_ms"]): round(p["attainment"] * p["requests"]) for p in stored["points"]}
    for pv in view.profiles:
        for row in pv.rows:
            mine, greedy = met[("cnnselect", pv.name, row.sla_ms)], met[("greedy", pv.name, row.sla_ms)]
            expected = (mine / greedy - 1) * 100 if greedy else None
            assert row.improvement_pct == (pytest.approx(expected) if expected is not None else None)
            assert [c.policy for c in row.cells] == list(pv.policies)
        assert pv.comparison is not None
        pooled_mine = sum(met[("cnnselect", pv.name, s)] for s in SLAS)
        pooled_greedy = sum(met[("greedy", pv.name, s)] for s in SLAS)
        assert (pv.comparison.met, pv.comparison.baseline_met) == (pooled_mine, pooled_greedy)
        assert pv.comparison.attainment_improvement_pct == pytest.approx((pooled_mine / pooled_greedy - 1) * 100)
    assert view.overall is not None
    assert view.overall.met == sum(pv.comparison.met for pv in view.profiles if pv.comparison)
    # the network-aware choice meets more SLAs than greedy, blind to the network, in this scenario
    assert view.overall.met > view.overall.baseline_met


def test_the_figures_draw_those_numbers_on_titled_axes(stored: dict[str, Any]) -> None:
    pv = simulation_view(stored).profiles[1]
    cnn, greedy = pv.series["cnnselect"], pv.series["greedy"]

    fig12 = json.loads(charts.over_sla_and_accuracy(pv) or "{}")
    misses, accuracy = fig12["data"]
    assert misses["x"] == SLAS and misses["y"] == pytest.approx(list(cnn.over_sla_pct))
    assert accuracy["yaxis"] == "y2" and accuracy["y"] == pytest.approx(list(cnn.effective_accuracy))
    layout = fig12["layout"]
    assert layout["xaxis"]["title"]["text"] == "SLA target (ms)" and "(%)" in layout["yaxis"]["title"]["text"]
    assert layout["yaxis2"]["side"] == "right" and "(%)" in layout["yaxis2"]["title"]["text"]
    assert layout["shapes"][0]["x0"] == pytest.approx(pv.mean_network_ms)

    fig13a = json.loads(charts.latency_and_accuracy(pv) or "{}")
    traces = {t["name"]: t for t in fig13a["data"]}
    e2e = traces["CNNSelect (paper) end-to-end (ms)"]
    assert e2e["y"] == pytest.approx(list(cnn.mean_e2e_ms))
    assert e2e["error_y"]["array"] == pytest.approx([hi - m for hi, m in zip(cnn.p75_e2e_ms, cnn.mean_e2e_ms)])
    assert e2e["error_y"]["arrayminus"] == pytest.approx([m - lo for lo, m in zip(cnn.p25_e2e_ms, cnn.mean_e2e_ms)])
    assert traces["greedy end-to-end (ms)"]["y"] == pytest.approx(list(greedy.mean_e2e_ms))
    lab = pv.series["cnnselect_lab"]
    assert traces["CNNSelect (lab) end-to-end (ms)"]["y"] == pytest.approx(list(lab.mean_e2e_ms))
    assert traces["greedy accuracy (%)"]["yaxis"] == "y2"
    assert traces["greedy accuracy (%)"]["y"] == pytest.approx(list(greedy.effective_accuracy))
    assert traces["SLA target"]["y"] == SLAS
    assert fig13a["layout"]["yaxis"]["title"]["text"] == "end-to-end time (ms)"

    fig13b = json.loads(charts.model_usage(pv) or "{}")
    assert fig13b["layout"]["barmode"] == "stack" and fig13b["layout"]["xaxis"]["type"] == "category"
    assert all(t["x"] == ["100", "250", "400"] for t in fig13b["data"])
    bars = {t["name"]: t["y"] for t in fig13b["data"]}
    assert list(bars) == [u.model for u in pv.usage]
    for u in pv.usage:
        assert bars[u.model] == pytest.approx([100 * s for s in u.share])
    assert {t["marker"]["color"] for t in fig13b["data"]} == {charts.model_color(u.index) for u in pv.usage}


def test_without_cnnselect_or_greedy_there_is_nothing_to_compare() -> None:
    result = simulate(paper_scenario(), sla_targets_ms=[200], profiles=["lte"], requests=100, policies=["fastest"])
    pv = simulation_view(result.as_dict()).profiles[0]
    assert pv.comparison is None and [r.improvement_pct for r in pv.rows] == [None]
    assert charts.over_sla_and_accuracy(pv) is None and charts.model_usage(pv) is None
    assert charts.latency_and_accuracy(pv) is None
    with pytest.raises(ValueError, match="needs the key"):
        simulation_view({"scenario": "x"})
