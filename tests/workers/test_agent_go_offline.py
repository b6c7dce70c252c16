"""A worker that stops takes its devices offline itself: its queued jobs move to an equivalent
online device or wait for it to come back, and devices another worker has taken over stay online."""

from __future__ import annotations

from typing import Any

from tests.workers.conftest import fake_cpu, tiny_graph
from workers.agent import DeviceAgent


def _job(team: Any, device_pk: int) -> Any:
    from devicelab.graph import graph_to_json
    from server.devices.models import Device
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    model, _ = upload_model(team, None, graph_to_json(tiny_graph()).encode(), "tiny.json")
    return submit_profiling_job(team, model, Device.objects.get(pk=device_pk), {"runs": 2})


def test_stopping_agent_hands_its_queued_jobs_to_an_equivalent_device(db: None, team: Any) -> None:
    from server.devices.models import Device

    leaving, staying = DeviceAgent("host#a", instance="a"), DeviceAgent("host#b", instance="b")
    leaving.start([fake_cpu(1)])
    staying.start([fake_cpu(1)])
    job = _job(team, leaving.devices[0].pk)

    leaving.go_offline()

    assert Device.objects.get(pk=leaving.devices[0].pk).status == "offline"
    assert Device.objects.get(pk=staying.devices[0].pk).status == "online"
    job.refresh_from_db()
    assert job.state == "queued" and job.device_id == staying.devices[0].pk
    assert "offline" in job.moved_from


def test_stopping_agent_leaves_queued_jobs_nobody_else_can_run_waiting_for_it(db: None, team: Any) -> None:
    from server.devices.models import Device

    agent = DeviceAgent("alone")
    agent.start([fake_cpu(2)])
    job = _job(team, agent.devices[0].pk)

    agent.go_offline()

    job.refresh_from_db()
    assert job.state == "queued" and job.device_id == agent.devices[0].pk  # waits for its device
    assert Device.objects.get(pk=agent.devices[0].pk).status == "offline"
    again = DeviceAgent("alone")
    again.start([fake_cpu(2)])
    assert Device.objects.get(pk=agent.devices[0].pk).status == "online"


def test_device_taken_over_by_another_worker_stays_online(db: None) -> None:
    from server.devices.models import Device

    old, new = DeviceAgent("old-host"), DeviceAgent("new-host")
    old.start([fake_cpu(5)])
    new.start([fake_cpu(5)])  # the phone was plugged into another machine

    old.go_offline()

    row = Device.objects.get(identity="cpu:machine-5")
    assert row.worker == "new-host" and row.status == "online"
