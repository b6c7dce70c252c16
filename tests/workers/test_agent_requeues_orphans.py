"""A worker that starts again takes back the jobs its earlier run left running: the server puts them
back in the queue when the new run registers (and enqueues them once the transaction commits);
jobs of other workers are left alone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devicelab.lab_protocol import Claim
from tests.workers.conftest import fake_cpu, tiny_graph


def test_restarted_agent_requeues_its_earlier_runs_jobs(
    make_agent: Callable[..., Any], team: Any, django_capture_on_commit_callbacks: Callable[..., Any]
) -> None:
    from devicelab.graph import graph_to_json
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    found = [fake_cpu(1)]
    old_run = make_agent("lab-3")
    old_run.start(found)
    other = make_agent("lab-4")
    other.start([fake_cpu(2)])
    model, _ = upload_model(team, None, graph_to_json(tiny_graph()).encode(), "tiny.json")
    mine = submit_profiling_job(team, model, _device(old_run), {"runs": 2})
    theirs = submit_profiling_job(team, model, _device(other), {"runs": 2})
    for agent, job in ((old_run, mine), (other, theirs)):
        answer = agent.server.claim(job.pk, Claim(agent.token, agent.devices[0].pk))
        assert answer.outcome == "claimed"

    new_run = make_agent("lab-3")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        new_run.start(found)

    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert mine.state == "queued" and mine.claimed_by == "" and mine.attempts == 1
    assert mine.moved_from == "attempt 1 lost: worker 'lab-3' restarted while running the job"
    assert theirs.state == "running" and theirs.claimed_by == other.token
    assert len(callbacks) == 1  # one enqueue, for the re-queued job
    assert new_run.devices[0].pk == old_run.devices[0].pk  # same identity, same row, same queue


def _device(agent: Any) -> Any:
    from server.devices.models import Device

    return Device.objects.get(pk=agent.devices[0].pk)
