"""The model-selection forms: ``/selection/ask/`` answers the developer's question (per model served
remotely and on a device, and per policy, the chance of meeting each SLA and the accuracy within
it: the numbers ``select_table`` gives the API) in a real browser, at a laptop's width and a
phone's; ``/selection/simulations/new/`` queues a simulation from the dashboard; refusals land
on the form."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devicelab.measure.stats import summarize
from server.networks.services import model_graph
from server.profiling.services import claim_job, ingest_result
from server.selection.models import SelectionSimulation, SimulationState
from server.selection.services import select_table
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.factories import profile_result, tiny_graph

__all__ = ["browser_page", "screenshots"]

SHOTS = Path("/tmp/select-shots")


def _measured(
    make_network: Any, make_job: Any, team: Any, device: Any, name: str, top1: float, samples: list[float]
) -> Any:
    model = make_network(team, tiny_graph(name))
    model.top1_accuracy = top1
    model.save()
    job = make_job(team, model, device)
    assert claim_job(job.pk, "run-1") is not None
    result = dataclasses.replace(profile_result(model_graph(model)), samples_ms=samples, e2e=summarize(samples))
    assert ingest_result(job.pk, "run-1", result) is not None
    return model


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_ask_page_answers_over_the_slas_in_a_browser(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    make_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    server = make_device("cpu", name="serving-cpu")
    fast = _measured(make_network, make_job, member.team, server, "fastnet", 60.0, [9.9, 10.0, 10.1])
    slow = _measured(make_network, make_job, member.team, server, "slownet", 80.0, [98.0, 100.0, 102.0])
    log_in(page, live_server.url, member, "/selection/")
    page.click("#ask-link")
    page.wait_for_selector("#ask-form")
    for model in (fast, slow):
        page.check(f"#ask-models input[value='{model.pk}']")
    page.select_option("#id_device", str(server.pk))
    page.select_option("#id_network_profile", "lte")
    page.select_option("#id_on_device", str(server.pk))
    page.fill("#id_sla_from", "200")
    page.fill("#id_sla_to", "600")
    page.fill("#id_sla_step", "100")
    page.click("#ask-form button[type=submit]")
    page.wait_for_selector("#ask-table")
    expected = select_table(
        member.team,
        {
            "device": server.pk,
            "models": [fast.pk, slow.pk],
            "network_profile": "lte",
            "sla_targets_ms": [200.0, 300.0, 400.0, 500.0, 600.0],
            "on_device": server.pk,
            "load_per_request": False,
            "policy": "lab",
            "threshold_ms": 20.0,
        },
    )
    cells = page.eval_on_selector_all(
        "#ask-table tbody td[data-sla]",
        "cs => cs.map(c => [c.closest('tr').dataset.kind, Number(c.dataset.sla), Number(c.dataset.pMeet)])",
    )
    assert len(cells) == len(expected["rows"])
    kinds = {"remote": "remote", "on_device": "on device", "policy": "per request"}
    want = sorted((kinds[r["kind"]], r["sla_ms"], round(r["p_meet"], 6)) for r in expected["rows"])
    assert sorted((k, s, round(p, 6)) for k, s, p in cells) == want
    assert {"remote", "on device", "per request"} == {c[0] for c in cells}
    # Over LTE (300 ms of network on average) the slow model meets 600 ms far more often than 200 ms.
    slow_row = page.eval_on_selector(
        "#ask-table tr[data-option='slownet'][data-kind='remote']",
        "r => [...r.querySelectorAll('td[data-sla]')].map(c => Number(c.dataset.pMeet))",
    )
    assert slow_row[0] < 0.2 < 0.8 < slow_row[-1]
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.screenshot(path=str(SHOTS / "ask-1400.png"), full_page=True)
    # The table scrolls inside its card at a phone's width instead of widening the page.
    page.set_viewport_size({"width": 420, "height": 900})
    page.screenshot(path=str(SHOTS / "ask-420.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 420 + 1
    assert console_errors == []


@pytest.mark.django_db
def test_a_simulation_starts_from_the_dashboard_and_refusals_land_on_the_form(
    member: Any, web_client: Callable[[Any], Any], make_device: Callable[..., Any]
) -> None:
    web = web_client(member)
    page = web.get("/selection/simulations/new/")
    assert page.status_code == 200 and b"simulation-form" in page.content
    form = {
        "scenario": "paper",
        "profiles": ["lte"],
        "policies": ["cnnselect", "cnnselect_lab", "greedy"],
        "sla_from": "100",
        "sla_to": "300",
        "sla_step": "100",
        "requests": "500",
        "threshold_ms": "20",
        "title": "from the dashboard",
    }
    answer = web.post("/selection/simulations/new/", form)
    sim = SelectionSimulation.objects.get(team=member.team, title="from the dashboard")
    assert answer.status_code == 302 and answer["Location"] == f"/selection/simulations/{sim.pk}/"
    assert sim.state == SimulationState.QUEUED
    assert sim.spec["sla_targets_ms"] == [100.0, 200.0, 300.0] and sim.spec["requests"] == 500
    assert sim.spec["policies"] == ["cnnselect", "cnnselect_lab", "greedy"]
    # My models without a device: refused on the form, nothing queued.
    refused = web.post("/selection/simulations/new/", {**form, "scenario": "measured", "title": "mine"})
    assert refused.status_code == 200 and b"serving device" in refused.content
    assert not SelectionSimulation.objects.filter(title="mine").exists()
    # Asking without candidates says so on the form.
    device = make_device()
    asked = web.get(
        "/selection/ask/",
        {
            "device": device.pk,
            "network_profile": "lte",
            "sla_from": 100,
            "sla_to": 50,
            "sla_step": 10,
            "policy": "lab",
            "threshold_ms": 20,
        },
    )
    assert asked.status_code == 200 and b"ask-table" not in asked.content
    assert b"This field is required" in asked.content and b"must not be below the first" in asked.content
