"""``POST /api/lab/jobs/<id>/result`` of a profile runs in one transaction without savepoints:
the job locked, one statement for the result row with the job's success and its device freed,
then the COPY of its operator rows (issue 33: each round trip is a tenth of a millisecond)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from server.profiling.models import JobResult, JobState
from tests.labs.protocol_calls import claim, cpu_profile_record, lab_client, post_result

# A real transaction per request: inside a test's own transaction every atomic block would be a savepoint.
pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement store is PostgreSQL's"),
]


def test_a_posted_profile_is_stored_without_savepoints(
    add_lab: Callable[..., Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    _, token = add_lab("rack")
    client = lab_client(token)
    job = make_job(member.team, device=make_device(worker="rack"))
    assert claim(client, job.pk, "run-1", job.device_id).json()["outcome"] == "claimed"

    with CaptureQueriesContext(connection) as queries:
        answer = post_result(client, job.pk, "run-1", 1, cpu_profile_record())

    assert answer.status_code == 201, answer.content
    sql = [q["sql"] for q in queries.captured_queries]
    assert not [q for q in sql if "SAVEPOINT" in q], sql
    assert sum(q.startswith("EXECUTE latencylab_lock_for_result(") for q in sql) == 1
    assert sum(q.startswith("EXECUTE latencylab_store_result(") for q in sql) == 1
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and JobResult.objects.filter(job=job).exists()
