"""A worker that stops takes its devices offline itself (``devices gone``, saying the worker
stopped): its queued jobs move to an equivalent online device or wait for it to come back, and
devices another worker has taken over stay online."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.workers.conftest import fake_cpu, tiny_graph


def _job(team: Any, device_pk: int) -> Any:
    from devicelab.graph import graph_to_json
    from server.devices.models import Device
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    model, _ = upload_model(team, None, graph_to_json(tiny_graph()).encode(), "tiny.json")
    return submit_profiling_job(team, model, Device.objects.get(pk=device_pk), {"runs": 2})


def test_stopping_agent_hands_its_queued_jobs_to_an_equivalent_device(
    make_agent: Callable[..., Any], team: Any
) -> None:
    from server.devices.models import Device

    leaving, staying = make_agent("host#a", instance="a"), make_agent("host#b", instance="b")
    leaving.start([fake_cpu(1)])
    staying.start([fake_cpu(1)])
    job = _job(team, leaving.devices[0].pk)

    leaving.go_offline()

    gone = Device.objects.get(pk=leaving.devices[0].pk)
    assert gone.status == "offline" and gone.offline_reason == "worker 'host#a' stopped"
    assert Device.objects.get(pk=staying.devices[0].pk).status == "online"
    job.refresh_from_db()
    assert job.state == "queued" and job.device_id == staying.devices[0].pk
    assert "offline" in job.moved_from


def test_stopping_agent_leaves_queued_jobs_nobody_else_can_run_waiting_for_it(
    make_agent: Callable[..., Any], team: Any
) -> None:
    from server.devices.models import Device

    agent = make_agent("alone")
    agent.start([fake_cpu(2)])
    job = _job(team, agent.devices[0].pk)

    agent.go_offline()

    job.refresh_from_db()
    assert job.state == "queued" and job.device_id == agent.devices[0].pk  # waits for its device
    row = Device.objects.get(pk=agent.devices[0].pk)
    assert row.status == "offline" and row.offline_reason == "worker 'alone' stopped"
    again = make_agent("alone")
    again.start([fake_cpu(2)])
    assert Device.objects.get(pk=agent.devices[0].pk).status == "online"


def test_device_taken_over_by_another_worker_stays_online(make_agent: Callable[..., Any]) -> None:
    from server.devices.models import Device

    old, new = make_agent("old-host#x", instance=None), make_agent("old-host#y", instance=None)
    old.start([fake_cpu(5)])
    new.start([fake_cpu(5)])  # the phone was plugged into another agent of the machine

    old.go_offline()

    row = Device.objects.get(identity="cpu:machine-5")
    assert row.worker == "old-host#y" and row.status == "online"
