"""A message for a job that has since moved to a device this worker does not serve is dropped, and
the job is left for the device it now belongs to: another device of the same machine is answered
``elsewhere``; a device of another lab machine is refused by the server (403), and the task drops
the message without claiming."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.workers.conftest import fake_cpu
from workers.tasks import run_profiling_job


def test_job_routed_to_another_device_of_the_machine_is_not_run_here(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    from workers.agent import DeviceAgent

    other = DeviceAgent(agent.server, f"{agent.worker_name}#b", instance="b")  # a second agent of the machine
    other.start([fake_cpu(1)])
    job = make_job(device_pk=other.devices[0].pk)

    assert run_profiling_job(job.pk) == "elsewhere"
    job.refresh_from_db()
    assert job.state == "queued" and job.attempts == 0 and job.claimed_by == ""


def test_job_routed_to_another_machines_device_is_not_run_here(
    as_device_process: Any, make_agent: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    other = make_agent("some-other-machine")
    other.start([fake_cpu(1)])
    job = make_job(device_pk=other.devices[0].pk)

    assert run_profiling_job(job.pk) == "refused"
    job.refresh_from_db()
    assert job.state == "queued" and job.attempts == 0 and job.claimed_by == ""


def test_a_run_that_finds_its_device_gone_takes_it_offline_and_the_job_moves_to_an_equivalent(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any], monkeypatch: Any
) -> None:
    from devicelab.backends.base import DeviceLost
    from server.devices.models import Device
    from workers import jobs
    from workers.agent import DeviceAgent

    twin = DeviceAgent(agent.server, f"{agent.worker_name}#b", instance="b")  # the same device model
    twin.start([agent.devices[0].found])
    job = make_job()

    def unplugged(run: Any) -> Any:
        raise DeviceLost("phone P1 is absent on the adb server, not ready", gone=True)

    monkeypatch.setitem(jobs.RUNS, "profile", unplugged)
    run_profiling_job(job.pk)

    gone = Device.objects.get(pk=agent.devices[0].pk)
    assert gone.status == "offline" and "absent on the adb server" in gone.offline_reason
    job.refresh_from_db()
    assert (job.state, job.device_id) == ("queued", twin.devices[0].pk), job.failure_reason
    assert job.attempts == 1  # one attempt spent, not every one
