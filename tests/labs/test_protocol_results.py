"""``POST /api/lab/jobs/<id>/result``: the result of a claimed attempt is stored once; a repeat
is answered ``already-stored``, a post for an attempt the run no longer holds ``not-yours``, and
a body that is not the record is refused naming the key, storing nothing."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from server.profiling.models import JobResult, JobState, OperatorTiming
from tests.labs.protocol_calls import claim, cpu_profile_record, end, lab_client, post_result

pytestmark = pytest.mark.django_db


@pytest.fixture
def claimed(
    add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> Any:
    """(client of 'rack', its job claimed by run 'run-1' through the API)."""
    _, token = add_lab("rack")
    client = lab_client(token)
    job = make_job(member.team, device=make_device(worker="rack"))
    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
    return client, job


def _nothing_stored(job: Any) -> None:
    assert not JobResult.objects.filter(job=job).exists()
    job.refresh_from_db()
    assert (job.state, job.claimed_by) == (JobState.RUNNING, "run-1")


def test_a_result_is_stored_once(claimed: Any) -> None:
    client, job = claimed
    record = cpu_profile_record()

    answer = post_result(client, job.pk, "run-1", 1, record)

    assert answer.status_code == 201, answer.content
    assert answer.json() == {"outcome": "stored", "message": ""}
    stored = JobResult.objects.get(job=job)
    assert stored.attempt == 1 and stored.e2e_n == record["e2e"]["n"]
    assert stored.samples_ms == record["samples_ms"]
    names = list(stored.operators.order_by("pk").values_list("name", flat=True))
    assert names == [op["name"] for op in record["ops"]] and names
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED

    again = post_result(client, job.pk, "run-1", 1, record)

    assert again.status_code == 200
    assert again.json()["outcome"] == "already-stored"
    assert JobResult.objects.filter(job=job).count() == 1
    assert OperatorTiming.objects.filter(result__job=job).count() == len(record["ops"])


def test_a_post_by_another_run_is_not_yours(claimed: Any) -> None:
    client, job = claimed
    answer = post_result(client, job.pk, "run-2", 1, cpu_profile_record())
    assert answer.status_code == 200 and answer.json()["outcome"] == "not-yours"
    _nothing_stored(job)


def test_a_post_for_an_old_attempt_is_not_yours(claimed: Any) -> None:
    client, job = claimed
    assert end(client, job.pk, "retry", "run-1", "adb transport lost").json()["outcome"] == "retried"
    assert claim(client, job.pk, "run-1", job.device_id).json()["job"]["attempt"] == 2

    answer = post_result(client, job.pk, "run-1", 1, cpu_profile_record())

    assert answer.status_code == 200 and answer.json()["outcome"] == "not-yours"
    _nothing_stored(job)


def _broken(how: str) -> dict[str, Any]:
    record = copy.deepcopy(cpu_profile_record())
    if how == "missing":
        del record["ops"][0]["name"]
    elif how == "mistyped":
        record["ops"][0]["name"] = 5
    elif how == "unknown":
        record["ops"][0]["colour"] = "red"
    elif how == "missing top":
        del record["e2e"]
    return record


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("missing", "profile.ops[0].name is missing"),
        ("mistyped", "profile.ops[0].name must be a string, got int 5"),
        ("unknown", "profile.ops[0] has unknown key(s) ['colour']"),
        ("missing top", "profile.e2e is missing"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_key(claimed: Any, how: str, message: str) -> None:
    client, job = claimed
    answer = post_result(client, job.pk, "run-1", 1, _broken(how))
    assert answer.status_code == 400
    assert answer.json()["detail"] == message
    _nothing_stored(job)


def test_a_malformed_post_is_refused_naming_the_key(claimed: Any) -> None:
    client, job = claimed
    answer = client.post(
        f"/api/lab/jobs/{job.pk}/result",
        {"run": "run-1", "attempt": "1", "kind": "profile", "result": {}},
        format="json",
    )
    assert answer.status_code == 400 and answer.json()["detail"].startswith("result.attempt must be an integer")
    _nothing_stored(job)


def test_a_result_of_another_kind_is_refused(claimed: Any) -> None:
    client, job = claimed
    answer = post_result(client, job.pk, "run-1", 1, cpu_profile_record(), kind="fusion_sweep")
    assert answer.status_code == 400
    assert answer.json()["detail"] == f"result.kind: job #{job.pk} is a 'profile' job, not 'fusion_sweep'"
    _nothing_stored(job)
