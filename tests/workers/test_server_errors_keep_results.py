"""A server error in answer to a result post (a 500: its database connection dropped, a restart
half done) is the server's failure, not the result's: the result waits in the outbox and is posted
again, which stores it once, whether or not the first post got through. A 400 (the record itself
is refused) fails the job, saying why, since posting it again would end the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from workers.tasks import run_profiling_job


def _is_result_post(request: Any, job_id: int) -> bool:
    return bool(request.method == "POST" and request.url.endswith(f"/api/lab/jobs/{job_id}/result"))


def test_a_result_whose_answer_was_a_server_error_is_posted_again_and_stored_once(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.models import JobResult

    job = make_job()

    def server_error(request: Any, response: Any) -> None:
        # the post was stored; its answer is lost to a 500, as from a server dying mid-answer
        if _is_result_post(request, job.pk):
            response.status_code, response.reason = 500, "Internal Server Error"
            response._content = b"<h1>Server Error (500)</h1>"

    agent.machine.after = server_error
    assert run_profiling_job(job.pk) == "pending"
    assert [p.name for p in (agent.machine.folder / "outbox").glob("job-*.json")] == [f"job-{job.pk}-attempt-1.json"]

    agent.machine.after = None
    assert agent.outbox.deliver(agent.server) == 0
    job.refresh_from_db()
    assert job.state == "succeeded" and JobResult.objects.filter(job=job).count() == 1
    assert not list((agent.machine.folder / "outbox").glob("job-*.json"))


def test_a_refused_record_fails_the_job_saying_why(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    from server.profiling.models import JobResult

    job = make_job()

    def damage(request: Any) -> None:
        # a record the server cannot read: its operators are missing
        if _is_result_post(request, job.pk):
            body = orjson.loads(request.body)
            del body["result"]["ops"]
            request.body = orjson.dumps(body)

    agent.machine.adapter.before = damage
    assert run_profiling_job(job.pk) == "failed"
    job.refresh_from_db()
    assert job.state == "failed" and "profile.ops is missing" in job.failure_reason, job.failure_reason
    assert not JobResult.objects.filter(job=job).exists()
    assert not list((agent.machine.folder / "outbox").glob("job-*.json"))
