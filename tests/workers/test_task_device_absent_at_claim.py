"""A device found gone before its job is claimed (a phone unplugged since the message was sent,
before the agent's next look at the adb list) costs the job no attempt: the task does not claim
it, says the device is gone, and the job moves to an equivalent device (issue 34 item 4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workers import tasks
from workers.tasks import run_profiling_job


def test_a_job_whose_device_is_gone_is_not_claimed_and_moves_without_spending_an_attempt(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any], monkeypatch: Any
) -> None:
    from server.devices.models import Device
    from workers.agent import DeviceAgent

    twin = DeviceAgent(agent.server, f"{agent.worker_name}#b", instance="b")  # the same device model
    twin.start([agent.devices[0].found])
    job = make_job()
    monkeypatch.setattr(tasks, "device_absent", lambda info: "phone P1: unplugged: no longer listed")

    assert run_profiling_job(job.pk) == "absent"

    gone = Device.objects.get(pk=agent.devices[0].pk)
    assert gone.status == "offline" and "unplugged" in gone.offline_reason
    job.refresh_from_db()
    assert (job.state, job.device_id, job.attempts) == ("queued", twin.devices[0].pk, 0)


def test_a_device_that_is_there_is_claimed_as_before(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job()
    assert tasks.device_absent(agent.devices[0].found) is None  # a CPU is always there
    assert run_profiling_job(job.pk) == "succeeded"
    job.refresh_from_db()
    assert (job.state, job.attempts) == ("succeeded", 1)
