"""A simulation asked for through the API is run by a real trainer process (its own queue) and
its result read back through the API; one whose message was lost is sent again by the idle
trainer."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import RESEND_AFTER_SECONDS
from tests.waiting import wait_for

SPEC = {"scenario": "paper", "sla_targets_ms": [120, 300], "profiles": ["campus_wifi", "lte"], "requests": 500}


@pytest.mark.django_db(transaction=True)
def test_the_trainer_runs_a_simulation_asked_for_through_the_api(start_trainer: Any, e2e_api: Any) -> None:
    from server.selection.models import SelectionSimulation
    from server.selection.simulations import submit_simulation

    trainer = start_trainer()
    created = e2e_api.post("/api/selection/simulations/", SPEC, format="json")
    assert created.status_code == 202, created.content
    pk = created.json()["id"]
    # a second one whose message is lost: the idle trainer's reconciler sends it again
    member_team = SelectionSimulation.objects.get(pk=pk).team
    lost = submit_simulation(member_team, dict(SPEC, seed=9), enqueue=False)

    def finished(sim_id: int) -> Any:
        if trainer.poll() is not None:
            raise AssertionError(f"the trainer exited with {trainer.returncode}")
        row = SelectionSimulation.objects.get(pk=sim_id)
        return row if row.state in ("succeeded", "failed") else None

    row = wait_for(lambda: finished(pk), 240, f"simulation {pk} to run")
    assert row.state == "succeeded", row.failure_reason
    body = e2e_api.get(f"/api/selection/simulations/{pk}/").json()
    points = body["result"]["points"]
    assert len(points) == 2 * 2 * 5 and all(p["requests"] == 500 for p in points)
    oracle = {(p["sla_ms"], p["profile"]): p["attainment"] for p in points if p["policy"] == "oracle"}
    fastest = {(p["sla_ms"], p["profile"]): p["attainment"] for p in points if p["policy"] == "fastest"}
    assert all(0.0 <= a <= 1.0 for a in oracle.values()) and set(oracle) == set(fastest)
    again = wait_for(lambda: finished(lost.pk), 240 + 3 * RESEND_AFTER_SECONDS, "the lost simulation to be sent again")
    assert again.state == "succeeded", again.failure_reason
