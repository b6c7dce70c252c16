"""Simulation jobs: a request is validated and its models' profiles frozen at submission; the
run claims the row once, stores the result or why it failed; a run that died is queued again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from devicelab.measure.stats import summarize
from server.networks.services import model_graph
from server.profiling.services import claim_job, ingest_result
from server.selection.models import SelectionSimulation, SimulationState
from server.selection.simulations import (
    MAX_SIMULATION_ATTEMPTS,
    run_simulation,
    submit_simulation,
    sweep_lost_simulations,
)
from tests.server import conftest as server_fixtures
from tests.server.factories import profile_result, tiny_graph

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp

pytestmark = pytest.mark.django_db

SMALL = {"sla_targets_ms": [150, 400], "profiles": ["campus_wifi"], "requests": 300, "seed": 4}


def test_the_paper_scenario_runs_and_stores_every_point(member: Any) -> None:
    row = submit_simulation(member.team, {"scenario": "paper", **SMALL}, enqueue=False)
    assert row.state == SimulationState.QUEUED and len(row.spec["models"]) >= 4 and row.spec["candidates"] == []
    done = run_simulation(row.pk, "t-1")
    assert done is not None and done.state == SimulationState.SUCCEEDED, done.failure_reason
    result = done.result
    assert result["sla_targets_ms"] == [150.0, 400.0] and result["requests"] == 300
    points = {(p["policy"], p["sla_ms"]) for p in result["points"]}
    assert points == {
        (p, s) for p in ("cnnselect", "cnnselect_lab", "greedy", "fastest", "oracle") for s in (150.0, 400.0)
    }
    for p in result["points"]:
        assert 0.0 <= p["attainment"] <= 1.0 and sum(p["usage"].values()) == pytest.approx(1.0)
    assert run_simulation(row.pk, "t-2") is None  # claimed once: a duplicate message does nothing


def test_measured_models_are_frozen_into_the_spec(
    member: Any, make_device: Callable[..., Any], make_network: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    device = make_device()
    models = []
    for name, samples, top1 in (("quick", [5.0, 6.0, 5.5], 55.0), ("sharp", [60.0, 70.0, 65.0], 78.0)):
        model = make_network(member.team, tiny_graph(name))
        model.top1_accuracy = top1
        model.save()
        job = make_job(member.team, model, device)
        claim_job(job.pk, "run-1")
        ingest_result(
            job.pk,
            "run-1",
            dataclasses.replace(profile_result(model_graph(model)), samples_ms=samples, e2e=summarize(samples)),
        )
        models.append(model)
    row = submit_simulation(
        member.team, {"device": device.pk, "models": [m.pk for m in models], **SMALL}, enqueue=False
    )
    frozen = {m["name"]: m for m in row.spec["models"]}
    assert frozen["sharp"]["samples_ms"] == [60.0, 70.0, 65.0] and frozen["quick"]["accuracy"] == 55.0
    assert [c["latency_source"]["kind"] for c in row.spec["candidates"]] == ["measured", "measured"]
    done = run_simulation(row.pk, "t-1")
    assert done is not None and done.state == SimulationState.SUCCEEDED
    usage = {p["policy"]: p["usage"] for p in done.result["points"] if p["sla_ms"] == 400.0}
    assert set(usage["fastest"]) == {"quick", "sharp"} and usage["fastest"]["quick"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"scenario": "moon"}, "scenario"),
        ({"scenario": "paper", "requests": 5}, "requests"),
        ({"scenario": "paper", "sla_targets_ms": []}, "sla_targets_ms"),
        ({"scenario": "paper", "sla_targets_ms": [-1]}, "sla_targets_ms"),
        ({"scenario": "paper", "profiles": ["moon"]}, "network_profile"),
        ({"scenario": "paper", "policies": ["coin"]}, "policies"),
        ({"scenario": "paper", "colour": 1}, "detail"),
        ({"models": [1]}, "device"),
    ],
)
def test_bad_requests_name_the_field_and_store_nothing(member: Any, raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        submit_simulation(member.team, raw, enqueue=False)
    error = refused.value
    said = error.message_dict if hasattr(error, "error_dict") else {"detail": error.messages}
    assert field in said, said
    assert not SelectionSimulation.objects.exists()


def test_a_run_whose_lease_lapsed_is_queued_again_then_failed_past_its_attempts(member: Any) -> None:
    row = submit_simulation(member.team, {"scenario": "paper", **SMALL}, enqueue=False)
    lapsed = timezone.now() - timedelta(seconds=1)
    SelectionSimulation.objects.filter(pk=row.pk).update(
        state=SimulationState.RUNNING, claimed_by="dead", attempts=1, started_at=lapsed, lease_until=lapsed
    )
    assert sweep_lost_simulations() == [row.pk]
    row.refresh_from_db()
    assert (row.state, row.claimed_by) == (SimulationState.QUEUED, "")
    assert row.progress_message.startswith("attempt 1 lost: the trainer stopped while simulating")
    done = run_simulation(row.pk, "t-new")
    assert done is not None and (done.state, done.attempts, done.lease_until) == (SimulationState.SUCCEEDED, 2, None)

    SelectionSimulation.objects.filter(pk=row.pk).update(
        state=SimulationState.RUNNING, claimed_by="dead", attempts=MAX_SIMULATION_ATTEMPTS, lease_until=lapsed
    )
    assert sweep_lost_simulations() == [row.pk]
    row.refresh_from_db()
    assert row.state == SimulationState.FAILED and f"limit {MAX_SIMULATION_ATTEMPTS}" in row.failure_reason


def test_a_running_simulation_with_a_live_lease_is_left_alone(member: Any) -> None:
    row = submit_simulation(member.team, {"scenario": "paper", **SMALL}, enqueue=False)
    SelectionSimulation.objects.filter(pk=row.pk).update(
        state=SimulationState.RUNNING,
        claimed_by="alive",
        attempts=1,
        lease_until=timezone.now() + timedelta(seconds=30),
    )
    assert sweep_lost_simulations() == []


def test_the_api_queues_lists_and_shows_a_simulation(api: Any) -> None:
    created = api.post("/api/selection/simulations/", {"scenario": "paper", **SMALL}, format="json")
    assert created.status_code == 202, created.json()
    pk = created.json()["id"]
    assert created.json()["state"] == "queued" and created.json()["spec"]["requests"] == 300
    listed = api.get("/api/selection/simulations/").json()["results"]
    assert [r["id"] for r in listed] == [pk] and "result" not in listed[0]
    run_simulation(pk, "t-1")
    detail = api.get(f"/api/selection/simulations/{pk}/").json()
    assert (
        detail["state"] == "succeeded" and len(detail["result"]["points"]) == 2 * 5
    )  # 2 SLA targets x 5 default policies
    refused = api.post("/api/selection/simulations/", {"scenario": "paper", "requests": "many"}, format="json")
    assert refused.status_code == 400 and "requests" in refused.json()
