"""``POST /api/lab/jobs/<id>/claim``: the conditional claim of a job a device's queue delivered,
each of its outcomes, the claimed job's payload by kind, and the refusal of what is another
machine's."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import pytest
from django.conf import settings

from devicelab.graph.onnx import graph_to_onnx_bytes
from server.fusion.services import submit_fusion_plan
from server.networks.services import import_limits, upload_model
from server.profiling.models import JobState, ProfilingJob
from server.profiling.services import take_devices_offline
from tests.labs.protocol_calls import claim, lab_client
from tests.server.factories import tiny_graph
from tests.server.fusion_factories import queued_sweep, stored_sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def rack(add_lab: Callable[..., Any]) -> Any:
    """The lab machine 'rack' and a client with its token."""
    lab, token = add_lab("rack")
    return lab, lab_client(token)


def _state(job: Any) -> tuple[str, str]:
    job.refresh_from_db()
    return job.state, job.claimed_by


def test_a_queued_job_of_an_uploaded_onnx_model_is_claimed_with_what_it_needs(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    device = make_device(worker="rack")
    graph = tiny_graph("onnxnet")
    data = graph_to_onnx_bytes(graph)
    model, _ = upload_model(member.team, None, data, "onnxnet.onnx")
    job = make_job(member.team, model=model, device=device, settings={"runs": 5})

    answer = claim(client, job.pk, "run-1", device.pk)

    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["outcome"] == "claimed"
    payload = body["job"]
    assert (payload["id"], payload["kind"], payload["attempt"], payload["device"]) == (job.pk, "profile", 1, device.pk)
    assert payload["settings"] == job.settings and payload["settings"]["runs"] == 5
    assert payload["graph"] == model.graph
    assert payload["model"] == {
        "sha256": model.sha256,
        "size": len(data),
        "format": "onnx",
        "filename": "onnxnet.onnx",
    }
    assert payload["graphs"] == [] and payload["plan_rows"] is None
    assert payload["import_limits"] == asdict(import_limits())
    assert payload["claim_seconds"] == settings.LATENCYLAB_TASK_TIME_LIMIT
    assert _state(job) == (JobState.RUNNING, "run-1")


def test_a_graph_json_model_is_claimed_without_a_file(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    job = make_job(member.team, device=make_device(worker="rack#2"))
    payload = claim(client, job.pk, "run-1", job.device_id).json()["job"]
    assert payload["graph"] == job.model.graph and payload["model"] is None


def test_a_job_that_no_longer_exists_is_missing(rack: Any, make_device: Callable[..., Any]) -> None:
    _, client = rack
    device = make_device(worker="rack")
    answer = claim(client, 987654, "run-1", device.pk)
    assert answer.status_code == 200
    assert answer.json() == {"outcome": "missing", "message": "job #987654 no longer exists", "job": None}


def test_a_job_moved_to_another_device_of_the_machine_is_elsewhere(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    here, there = make_device(worker="rack"), make_device(worker="rack#2")
    job = make_job(member.team, device=there)

    answer = claim(client, job.pk, "run-1", here.pk).json()

    assert answer["outcome"] == "elsewhere" and f"routed to device #{there.pk}" in answer["message"]
    assert _state(job) == (JobState.QUEUED, "")


def test_a_job_another_run_took_is_not_queued(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    device = make_device(worker="rack")
    job = make_job(member.team, device=device)
    assert claim(client, job.pk, "run-1", device.pk).json()["outcome"] == "claimed"

    answer = claim(client, job.pk, "run-2", device.pk).json()

    assert answer["outcome"] == "not-queued" and answer["job"] is None
    assert _state(job) == (JobState.RUNNING, "run-1")


def test_a_cancelled_job_is_not_queued(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    from server.profiling.services import cancel_job

    _, client = rack
    device = make_device(worker="rack")
    job = make_job(member.team, device=device)
    cancel_job(job)
    answer = claim(client, job.pk, "run-1", device.pk).json()
    assert answer["outcome"] == "not-queued" and "cancelled" in answer["message"]


def test_a_job_of_an_offline_device_waits(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    device = make_device(worker="rack")
    job = make_job(member.team, device=device)
    take_devices_offline({device.pk: "unplugged"})  # no equivalent device: the job stays

    answer = claim(client, job.pk, "run-1", device.pk).json()

    assert answer["outcome"] == "offline" and "is marked offline" in answer["message"]
    assert _state(job) == (JobState.QUEUED, "")


def test_the_same_runs_running_job_delivered_again_was_lost_retried_once_then_failed(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    device = make_device(worker="rack")
    job = make_job(member.team, device=device)
    assert claim(client, job.pk, "run-1", device.pk).json()["outcome"] == "claimed"

    answer = claim(client, job.pk, "run-1", device.pk).json()  # its pool process died: retried

    assert answer["outcome"] == "lost" and "attempt 1 died" in answer["message"] and "retried" in answer["message"]
    job.refresh_from_db()
    assert (job.state, job.process_deaths) == (JobState.QUEUED, 1)
    assert "attempt 1 lost: the worker process measuring the job died during attempt 1" in job.moved_from

    assert claim(client, job.pk, "run-1", device.pk).json()["outcome"] == "claimed"  # attempt 2
    answer = claim(client, job.pk, "run-1", device.pk).json()  # and it died again: the model's

    assert answer["outcome"] == "lost" and "attempt 2 died" in answer["message"] and "failed" in answer["message"]
    job.refresh_from_db()
    assert (job.state, job.attempts, job.process_deaths) == (JobState.FAILED, 2, 2)
    assert job.failure_reason.startswith("the worker process measuring the job died during attempt 2")
    assert "died in 2 of its attempts, so the model is taken to crash the runtime" in job.failure_reason


def test_a_job_of_another_machines_device_is_refused_and_not_claimed(
    rack: Any, add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    add_lab("other")
    mine, theirs = make_device(worker="rack"), make_device(worker="other")
    job = make_job(member.team, device=theirs)

    answer = claim(client, job.pk, "run-1", mine.pk)

    assert answer.status_code == 403
    assert f"job #{job.pk} is not routed to a device of lab machine 'rack'" in answer.json()["detail"]
    assert _state(job) == (JobState.QUEUED, "")


def test_a_device_of_another_machine_in_the_claim_is_refused(
    rack: Any, add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    add_lab("other")
    theirs = make_device(worker="other")
    job = make_job(member.team, device=theirs)

    answer = claim(client, job.pk, "run-1", theirs.pk)

    assert answer.status_code == 403
    assert f"device #{theirs.pk} is not held by lab machine 'rack'" in answer.json()["detail"]
    assert _state(job) == (JobState.QUEUED, "")


def test_a_fusion_sweep_is_claimed_with_its_networks(rack: Any, member: Any, make_device: Callable[..., Any]) -> None:
    _, client = rack
    gpu = make_device("opencl", worker="rack")
    job = queued_sweep(member.team, gpu, zoo=("mobilenet_v2", "squeezenet_1_0"))

    payload = claim(client, job.pk, "run-1", gpu.pk).json()["job"]

    assert payload["kind"] == "fusion_sweep" and payload["graph"] is None and payload["model"] is None
    assert [g["name"] for g in payload["graphs"]] == ["mobilenet_v2", "squeezenet_1_0"]
    assert all(g["operators"] for g in payload["graphs"])
    assert payload["plan_rows"] is None
    assert payload["settings"]["spec"]["sizes"] == [2, 3]


def test_a_fusion_plan_naming_a_sweep_is_claimed_with_its_rows(
    rack: Any, member: Any, make_device: Callable[..., Any]
) -> None:
    from server.fusion.models import FusionMeasurement
    from server.fusion.services import DEFAULT_LAYOUT_VARIANTS

    _, client = rack
    gpu = make_device("opencl", worker="rack")
    sweep = stored_sweep(member.team, gpu)
    plan = submit_fusion_plan(member.team, gpu, {"sweep": sweep.pk})

    payload = claim(client, plan.pk, "run-1", gpu.pk).json()["job"]

    assert payload["kind"] == "fusion_plan" and payload["settings"]["sweep"] == sweep.pk
    rows = FusionMeasurement.objects.filter(sweep__job=sweep, error="", variant__in=DEFAULT_LAYOUT_VARIANTS)
    assert rows.exists()
    assert sorted(map(repr, payload["plan_rows"])) == sorted(repr(r) for r in rows.values_list("data", flat=True))
    assert [g["name"] for g in payload["graphs"]] == ["mobilenet_v2", "mobilenet_v2"]


def test_a_fusion_plan_without_a_sweep_measures_its_own(
    rack: Any, member: Any, make_device: Callable[..., Any]
) -> None:
    _, client = rack
    gpu = make_device("opencl", worker="rack")
    plan = submit_fusion_plan(member.team, gpu, {"sweep": False})
    payload = claim(client, plan.pk, "run-1", gpu.pk).json()["job"]
    assert payload["kind"] == "fusion_plan" and payload["plan_rows"] is None and len(payload["graphs"]) == 2
    assert ProfilingJob.objects.get(pk=plan.pk).state == JobState.RUNNING


@pytest.mark.parametrize("run", ["", "r" * 101])
def test_a_run_token_the_job_row_cannot_hold_is_refused(
    run: str, rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    job = make_job(member.team, device=make_device(worker="rack"))

    answer = claim(client, job.pk, run, job.device_id)

    assert answer.status_code == 400
    assert answer.json()["detail"].startswith("claim.run must be a text of 1 to 100 characters")
    assert _state(job) == (JobState.QUEUED, "")


def test_a_peek_says_whether_the_claim_would_take_the_job_and_changes_nothing(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, client = rack
    device, other = make_device(worker="rack"), make_device(identity="cpu:rack-2", worker="rack")
    job = make_job(member.team, device=device)

    def peek(run: str, on: Any = device) -> str:
        answer = claim(client, job.pk, run, on.pk, peek=True)
        assert answer.status_code == 200, answer.content
        assert answer.json()["job"] is None
        return str(answer.json()["outcome"])

    assert peek("run-1") == "claimable"
    assert _state(job) == (JobState.QUEUED, "")
    assert peek("run-1", on=other) == "elsewhere"
    assert claim(client, job.pk, "run-1", device.pk).json()["outcome"] == "claimed"
    assert peek("run-2") == "not-queued"  # another run's copy of the message
    assert peek("run-1") == "claimable"  # this run's own again: its process died, the claim counts it
    assert _state(job) == (JobState.RUNNING, "run-1")
    ProfilingJob.objects.filter(pk=job.pk).update(state=JobState.CANCELLED, finished_at=job.created_at)
    assert peek("run-1") == "not-queued"


def test_a_claim_made_again_with_its_key_is_answered_again_not_taken_for_a_death(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    # The claim committed but its answer was lost (a dropped connection): the worker asks again
    # with the same key and gets the job; only a call with another key (the message delivered
    # again to a new process after this one died) counts a death.
    _, client = rack
    device = make_device(worker="rack")
    job = make_job(member.team, device=device)

    first = claim(client, job.pk, "run-1", device.pk, key="k1").json()
    again = claim(client, job.pk, "run-1", device.pk, key="k1").json()
    assert first["outcome"] == again["outcome"] == "claimed"
    assert again["job"] == first["job"]
    job.refresh_from_db()
    assert (job.state, job.attempts, job.process_deaths) == (JobState.RUNNING, 1, 0)

    assert claim(client, job.pk, "run-1", device.pk, key="k2").json()["outcome"] == "lost"
    job.refresh_from_db()
    assert (job.state, job.process_deaths) == (JobState.QUEUED, 1)


def test_a_claim_that_fails_half_way_leaves_the_job_queued(
    rack: Any, member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    from unittest import mock

    from django.db import OperationalError

    _, client = rack
    device = make_device(worker="rack")
    job = make_job(member.team, device=device)
    with (
        mock.patch("server.labs.protocol.claimed_job", side_effect=OperationalError("the connection dropped")),
        pytest.raises(OperationalError),
    ):
        claim(client, job.pk, "run-1", device.pk, key="k1")
    job.refresh_from_db()
    device.refresh_from_db()
    assert (job.state, job.attempts, job.claimed_by) == (JobState.QUEUED, 0, "")
    assert device.status == "online"
    assert claim(client, job.pk, "run-1", device.pk, key="k1").json()["outcome"] == "claimed"
