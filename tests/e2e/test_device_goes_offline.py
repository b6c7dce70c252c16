"""A worker that stops heart-beating: after LATENCYLAB_OFFLINE_AFTER_SECONDS its device is marked
offline by the lab's sweep (on every live agent's heartbeat, and in the trainer when no agent is
left), and its queued jobs move to an equivalent online device, or wait for it (failing with the
reason once they waited longer than their team allows)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import OFFLINE_AFTER_SECONDS, QUICK, job_row, submit, tiny_graph, upload, wait_finished
from tests.waiting import wait_for


@pytest.mark.django_db(transaction=True)
def test_queued_jobs_move_to_an_equivalent_online_device(start_worker: Any, e2e_api: Any) -> None:
    from server.devices.models import Device

    # Two agent instances on this host stand in for two machines with the same CPU.
    a, b = start_worker(instance="a"), start_worker(instance="b")
    dev_a, dev_b = a.device(), b.device()
    assert dev_a.pk != dev_b.pk and dev_a.equivalent_to(dev_b)

    a.freeze()  # hung: no heartbeat, no consumer, and no clean goodbye
    model_id = upload(e2e_api, tiny_graph("rerouted"))
    jobs = [submit(e2e_api, model_id, dev_a.pk, QUICK) for _ in range(2)]  # dev_a is not stale yet

    # Only b's agent is alive to notice: its heartbeat sweep takes dev_a offline.
    wait_for(
        lambda: Device.objects.get(pk=dev_a.pk).status == "offline",
        OFFLINE_AFTER_SECONDS + 15,
        "the silent device to be marked offline",
    )
    for job_id in jobs:
        job = wait_finished(job_id)
        assert job.state == "succeeded", job.failure_reason
        assert job.device_id == dev_b.pk
        assert f"#{dev_a.pk}" in job.moved_from and "offline" in job.moved_from
        assert job.result.device_info["kind"] == "cpu"
    assert Device.objects.get(pk=dev_b.pk).status == "online"


@pytest.mark.django_db(transaction=True)
def test_with_no_agent_alive_the_trainer_sweeps_a_waiting_job_fails_past_the_team_limit(
    start_worker: Any, start_trainer: Any, e2e_api: Any
) -> None:
    team = e2e_api.member.team
    team.offline_wait_seconds = OFFLINE_AFTER_SECONDS + 3
    team.save(update_fields=["offline_wait_seconds"])
    worker = start_worker()
    device = worker.device()
    worker.freeze()
    job_id = submit(e2e_api, upload(e2e_api, tiny_graph("stranded")), device.pk, QUICK)
    start_trainer()  # no live agent is left: the server's own sweeper (in the trainer) is the owner

    wait_for(
        lambda: job_row(job_id).device.status == "offline",
        OFFLINE_AFTER_SECONDS + 30,
        "the silent device to be marked offline",
        interval=0.5,
    )
    assert job_row(job_id).state == "queued", "a job must wait for its device, not fail at once"

    wait_for(lambda: job_row(job_id).is_finished, team.offline_wait_seconds + 30, "the stranded job to be failed")
    job = job_row(job_id)
    assert job.state == "failed"
    assert "has been offline since" in job.failure_reason
    assert f"longer than the {team.offline_wait_seconds} s team" in job.failure_reason
    assert job.device.status == "offline"
