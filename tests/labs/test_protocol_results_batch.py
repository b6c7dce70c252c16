"""``POST /api/lab/results``: several results stored in one transaction, each answered as its own
post would be: a repeat is ``already-stored``, a result the run no longer holds ``not-yours``, and
one refused (malformed, another machine's, another kind) leaves the others stored."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.lab_protocol import BatchedResult, ResultBatch, ResultPost
from server.profiling.models import JobResult, JobState, OperatorTiming
from tests.labs.protocol_calls import claim, cpu_profile_record, lab_client, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def rack(
    add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> Any:
    """(client of 'rack', three jobs on its devices claimed by run 'run-1' through the API)."""
    _, token = add_lab("rack")
    client = lab_client(token)
    jobs = []
    for i in range(3):
        job = make_job(member.team, device=make_device(worker="rack", identity=f"cpu:rack-{i}"))
        assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"
        jobs.append(job)
    return client, jobs


def batch(*items: tuple[int, dict[str, Any]], run: str = "run-1", kind: Any = "profile") -> ResultBatch:
    return ResultBatch([BatchedResult.of(job, ResultPost(run, 1, kind, record)) for job, record in items])


def outcomes(answer: Any) -> list[tuple[int, str]]:
    assert answer.status_code == 200, answer.content
    return [(a["job"], a["outcome"]) for a in answer.json()["answers"]]


def test_several_results_are_stored_at_once_and_a_repeat_is_already_stored(rack: Any) -> None:
    client, jobs = rack
    record = cpu_profile_record()
    body = batch(*((j.pk, record) for j in jobs))

    assert outcomes(post(client, "/api/lab/results", body)) == [(j.pk, "stored") for j in jobs]

    for job in jobs:
        job.refresh_from_db()
        assert job.state == JobState.SUCCEEDED
        stored = JobResult.objects.get(job=job)
        assert list(stored.operators.order_by("pk").values_list("name", flat=True)) == [
            op["name"] for op in record["ops"]
        ]
    rows = OperatorTiming.objects.count()

    assert outcomes(post(client, "/api/lab/results", body)) == [(j.pk, "already-stored") for j in jobs]
    assert JobResult.objects.count() == 3 and OperatorTiming.objects.count() == rows


def test_one_refused_result_leaves_the_others_stored(
    rack: Any, add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    client, (a, b, c) = rack
    malformed = copy.deepcopy(cpu_profile_record())
    del malformed["ops"][0]["name"]
    add_lab("other")
    theirs = make_job(member.team, device=make_device(worker="other", identity="cpu:other"))

    answer = post(
        client,
        "/api/lab/results",
        batch(
            (a.pk, cpu_profile_record()),
            (b.pk, malformed),
            (theirs.pk, cpu_profile_record()),
            (c.pk, cpu_profile_record()),
        ),
    )

    assert outcomes(answer) == [(a.pk, "stored"), (b.pk, "refused"), (theirs.pk, "refused"), (c.pk, "stored")]
    messages = [x["message"] for x in answer.json()["answers"]]
    assert messages[1] == "profile.ops[0].name is missing"
    assert "not routed to a device of lab machine 'rack'" in messages[2]
    assert {r.job_id for r in JobResult.objects.all()} == {a.pk, c.pk}
    b.refresh_from_db()
    assert (b.state, b.claimed_by) == (JobState.RUNNING, "run-1")


def test_a_result_the_run_no_longer_holds_is_not_yours_and_a_job_twice_is_refused(rack: Any) -> None:
    client, (a, b, _) = rack
    record = cpu_profile_record()
    answer = post(
        client,
        "/api/lab/results",
        ResultBatch(
            [
                BatchedResult.of(a.pk, ResultPost("run-2", 1, "profile", record)),
                BatchedResult.of(b.pk, ResultPost("run-1", 1, "profile", record)),
                BatchedResult.of(b.pk, ResultPost("run-1", 1, "profile", record)),
            ]
        ),
    )
    assert outcomes(answer) == [(a.pk, "not-yours"), (b.pk, "stored"), (b.pk, "refused")]
    assert list(JobResult.objects.values_list("job_id", flat=True)) == [b.pk]


def test_a_result_of_another_kind_is_refused_alone(rack: Any) -> None:
    client, (a, b, _) = rack
    body = ResultBatch(
        [
            BatchedResult.of(a.pk, ResultPost("run-1", 1, "fusion_sweep", cpu_profile_record())),
            BatchedResult.of(b.pk, ResultPost("run-1", 1, "profile", cpu_profile_record())),
        ]
    )
    answer = post(client, "/api/lab/results", body)
    assert outcomes(answer) == [(a.pk, "refused"), (b.pk, "stored")]
    assert answer.json()["answers"][0]["message"] == f"result.kind: job #{a.pk} is a 'profile' job, not 'fusion_sweep'"


def test_a_body_that_is_not_a_batch_is_refused_naming_the_key(rack: Any) -> None:
    client, (a, _, _) = rack
    answer = client.post("/api/lab/results", {"results": [{"job": a.pk}]}, format="json")
    assert answer.status_code == 400 and answer.json()["detail"].startswith("results.results[0].")
    assert not JobResult.objects.exists()
