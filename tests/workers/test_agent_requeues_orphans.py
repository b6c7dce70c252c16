"""A worker that starts again takes back the jobs its earlier run left running: they go back to the
queue (and are enqueued once the transaction commits); jobs of other workers are left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.workers.conftest import fake_cpu, tiny_graph
from workers.agent import DeviceAgent


def test_restarted_agent_requeues_its_earlier_runs_jobs(
    db: None, team: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    from devicelab.graph import graph_to_json
    from server.networks.services import upload_model
    from server.profiling.services import claim_job, submit_profiling_job

    found = [fake_cpu(1)]
    old_run = DeviceAgent("lab-3")
    old_run.start(found)
    other = DeviceAgent("lab-4")
    other.start([fake_cpu(2)])
    model, _ = upload_model(team, None, graph_to_json(tiny_graph()).encode(), "tiny.json")
    mine = submit_profiling_job(team, model, _device(old_run), {"runs": 2})
    theirs = submit_profiling_job(team, model, _device(other), {"runs": 2})
    claim_job(mine.pk, old_run.token)
    claim_job(theirs.pk, other.token)

    new_run = DeviceAgent("lab-3")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        new_run.start(found)

    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.state == "queued" and mine.claimed_by == "" and mine.attempts == 1
    assert theirs.state == "running" and theirs.claimed_by == other.token
    assert len(callbacks) == 1  # one enqueue, for the re-queued job
    assert new_run.devices[0].pk == old_run.devices[0].pk  # same identity, same row, same queue


def _device(agent: DeviceAgent) -> Any:
    from server.devices.models import Device

    return Device.objects.get(pk=agent.devices[0].pk)
