"""The model-selection pages in a real browser (Debian's chromium against a live server).

A simulation of the paper's scenario is submitted and run in-process, standing in for the
trainer (``run_simulation``), with a small request stream; its page draws figure 12 (CNNSelect's
SLA misses and effective accuracy), figure 13(a) (mean end-to-end with quartile bars and
accuracy, CNNSelect against greedy) and figure 13(b) (CNNSelect's model usage, stacked) from the
stored points, one network profile at a time, and its tables hold the stored attainment and
effective accuracy and CNNSelect's relative improvement in attainment over greedy. Then the list,
a queued simulation's page reloading itself into its result once it has run, a failed one's
reason, and another team's simulation answering 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.utils import timezone

from server.selection.models import SelectionSimulation, SimulationState
from server.selection.simulations import fail_simulation, run_simulation, submit_simulation
from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SLAS = [60.0, 150.0, 250.0, 400.0]
PROFILES = ["campus_wifi", "lte"]
SPEC = {"scenario": "paper", "sla_targets_ms": SLAS, "profiles": PROFILES, "requests": 300, "seed": 1}


def _simulated(team: Any, **changes: Any) -> SelectionSimulation:
    row = submit_simulation(team, {**SPEC, **changes}, enqueue=False)
    done = run_simulation(row.pk, "test-trainer")
    assert done is not None and done.state == SimulationState.SUCCEEDED, done and done.failure_reason
    return done


def _points(sim: SelectionSimulation, policy: str, profile: str) -> list[dict[str, Any]]:
    assert sim.result is not None
    by_sla = {p["sla_ms"]: p for p in sim.result["points"] if p["policy"] == policy and p["profile"] == profile}
    return [by_sla[s] for s in SLAS]


def _met(point: dict[str, Any]) -> int:
    return round(point["attainment"] * point["requests"])


def _gain(mine: int, greedy: int) -> str:
    return "—" if greedy == 0 else f"{(mine / greedy - 1) * 100:+.1f}%"


def _figure(page: Any, chart_id: str) -> dict[str, dict[str, Any]]:
    """The traces plotly drew in ``chart_id`` by name (waiting for it to be drawn)."""
    page.wait_for_selector(f"#{chart_id}.js-plotly-plot")
    traces = page.evaluate(
        "id => document.getElementById(id).data.map(t => ({name: t.name, x: t.x, y: t.y, yaxis: t.yaxis,"
        " type: t.type, error_y: t.error_y}))",
        chart_id,
    )
    return {t["name"]: t for t in traces}


def _check_profile(page: Any, sim: SelectionSimulation, profile: str) -> None:
    """The figures and the table of ``profile`` hold its stored points."""
    cnn, greedy = _points(sim, "cnnselect", profile), _points(sim, "greedy", profile)
    assert f"Under {profile}" in page.inner_text("#profile h2")

    fig12 = _figure(page, "chart-figure12")
    misses, accuracy = fig12["requests over the SLA (%)"], fig12["correctly classified (%)"]
    assert misses["x"] == SLAS and misses["y"] == pytest.approx([100 * (1 - p["attainment"]) for p in cnn])
    assert accuracy["yaxis"] == "y2" and accuracy["y"] == pytest.approx([p["effective_accuracy"] for p in cnn])

    fig13a = _figure(page, "chart-figure13a")
    for label, points in (("CNNSelect (paper)", cnn), ("greedy", greedy)):
        e2e = fig13a[f"{label} end-to-end (ms)"]
        assert e2e["y"] == pytest.approx([p["mean_e2e_ms"] for p in points])
        assert e2e["error_y"]["array"] == pytest.approx([p["p75_e2e_ms"] - p["mean_e2e_ms"] for p in points])
        assert e2e["error_y"]["arrayminus"] == pytest.approx([p["mean_e2e_ms"] - p["p25_e2e_ms"] for p in points])
        assert fig13a[f"{label} accuracy (%)"]["y"] == pytest.approx([p["effective_accuracy"] for p in points])

    fig13b = _figure(page, "chart-figure13b")
    used = {m for p in cnn for m, share in p["usage"].items() if share > 0}
    assert set(fig13b) == used and all(t["type"] == "bar" for t in fig13b.values())
    for model, bar in fig13b.items():
        assert bar["y"] == pytest.approx([100 * p["usage"][model] for p in cnn])

    assert sim.result is not None
    policies = sim.result["policies"]
    rows = page.eval_on_selector_all(
        "#selection-table tbody tr",
        "rows => rows.map(r => ({sla: Number(r.dataset.sla),"
        " met: [...r.querySelectorAll('td.attainment')].map(c => [c.dataset.policy, c.innerText.trim()]),"
        " acc: [...r.querySelectorAll('td.accuracy')].map(c => c.innerText.trim()),"
        " gain: r.querySelector('td.improvement').innerText.trim()}))",
    )
    assert [r["sla"] for r in rows] == SLAS
    for row, i in zip(rows, range(len(SLAS)), strict=True):
        stored = [_points(sim, p, profile)[i] for p in policies]
        assert row["met"] == [[p, f"{s['attainment'] * 100:.1f}%"] for p, s in zip(policies, stored, strict=True)]
        assert row["acc"] == [f"{s['effective_accuracy']:.1f}" for s in stored]
        assert row["gain"] == _gain(_met(cnn[i]), _met(greedy[i]))
    pooled = _gain(sum(map(_met, cnn)), sum(map(_met, greedy)))
    assert f"{pooled} relative improvement in SLA attainment" in page.inner_text("#profile-improvement")


def test_a_simulation_draws_figures_12_and_13_and_its_tables_from_the_stored_points(
    live_server: Any,
    make_member: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    sim = _simulated(member.team, title="the paper, small")
    base = live_server.url

    log_in(page, base, member, f"/selection/simulations/{sim.pk}/")
    head = page.inner_text("h1")
    assert "the paper, small" in head and "succeeded" in head
    assert "Selection" in page.inner_text(".nav a.active")
    assert page.locator("#candidates tbody tr").count() == 11  # table 5's models

    # Over every profile: CNNSelect's requests that met the SLA over greedy's, pooled.
    met = {
        p: (sum(map(_met, _points(sim, "cnnselect", p))), sum(map(_met, _points(sim, "greedy", p)))) for p in PROFILES
    }
    overall = _gain(sum(m for m, _ in met.values()), sum(g for _, g in met.values()))
    assert page.inner_text("#tile-improvement .tile-value").strip() == overall
    for profile, (mine, greedy) in met.items():
        row = page.locator(f"#comparison-table tr[data-profile='{profile}']")
        assert row.locator("td.improvement").inner_text().strip() == _gain(mine, greedy)
        assert int(row.locator("td").nth(2).get_attribute("data-value") or -1) == mine

    # The first profile is shown; then the second, by its tab.
    _check_profile(page, sim, "campus_wifi")
    screenshots(page, "selection-01-simulation")
    page.click("#profile-tabs a[data-profile='lte']")
    page.wait_for_url("**profile=lte*")
    _check_profile(page, sim, "lte")
    screenshots(page, "selection-02-lte")
    assert console_errors == []


def test_list_states_reload_into_the_result_failure_and_team_scoping(
    live_server: Any,
    make_member: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member, stranger = make_member(), make_member()
    done = _simulated(member.team, title="done")
    failed = submit_simulation(member.team, {**SPEC, "title": "doomed"}, enqueue=False)
    assert fail_simulation(failed.pk, "ValueError: a frozen model profile has no samples")
    running = submit_simulation(member.team, {**SPEC, "title": "busy"}, enqueue=False)
    SelectionSimulation.objects.filter(pk=running.pk).update(
        state=SimulationState.RUNNING, claimed_by="elsewhere", started_at=timezone.now(), progress_message="simulating"
    )
    watched = submit_simulation(member.team, {**SPEC, "title": "watched"}, enqueue=False)
    theirs = _simulated(stranger.team, title="theirs")
    base = live_server.url
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)

    # The list: the team's simulations only, newest first, with state and why one failed.
    log_in(page, base, member, "/selection/")
    listed = page.eval_on_selector_all(
        "#selection-simulations tbody tr", "rows => rows.map(r => [Number(r.dataset.simulationId), r.dataset.state])"
    )
    assert listed == [[watched.pk, "queued"], [running.pk, "running"], [failed.pk, "failed"], [done.pk, "succeeded"]]
    failed_row = page.inner_text(f"#selection-simulations tr[data-simulation-id='{failed.pk}']")
    assert "doomed" in failed_row and "a frozen model profile has no samples" in failed_row
    assert "300" in page.inner_text(f"#selection-simulations tr[data-simulation-id='{done.pk}']")
    screenshots(page, "selection-03-list")

    page.click(f"#selection-simulations a[href='/selection/simulations/{failed.pk}/']")
    assert "a frozen model profile has no samples" in page.inner_text("#failure")
    assert page.locator("#chart-figure12").count() == 0

    page.goto(f"{base}/selection/simulations/{running.pk}/")
    assert "Simulating" in page.inner_text("#progress-card") and "simulating" in page.inner_text("#progress-message")

    # A queued simulation's page waits for the trainer and reloads itself into the result.
    page.goto(f"{base}/selection/simulations/{watched.pk}/")
    assert "Waiting for the trainer" in page.inner_text("#progress-card")
    assert run_simulation(watched.pk, "test-trainer") is not None
    page.wait_for_selector("#chart-figure13b.js-plotly-plot", timeout=20_000)
    assert "succeeded" in page.inner_text("h1") and page.locator("#progress-card").count() == 0
    screenshots(page, "selection-04-reloaded")

    # Another team's simulation is nobody's business here.
    assert page.goto(f"{base}/selection/simulations/{theirs.pk}/").status == 404
    assert missing == [f"{base}/selection/simulations/{theirs.pk}/"]
    assert {e for e in console_errors if "status of 404" not in e} == set()
