"""A result the server cannot take when the job ends waits in the machine's outbox: the task says
``pending`` and the job stays running; the agent's next round posts it and the job succeeds with
one result. A repeated post of the same attempt stores nothing new, and a result that waited past
its claim is dropped, saying so."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import pytest
import requests

from tests.waiting import wait_for
from workers.outbox import Outbox
from workers.tasks import run_profiling_job


@pytest.fixture
def pending(as_device_process: Any, agent: Any, make_job: Callable[..., Any]) -> Any:
    """A job measured while the server did not answer its result post: its result waits."""
    job = make_job()

    def unreachable(request: Any) -> None:
        if request.method == "POST" and request.url.endswith(f"/api/lab/jobs/{job.pk}/result"):
            raise requests.ConnectionError("connection refused")

    agent.machine.adapter.before = unreachable
    assert run_profiling_job(job.pk) == "pending"
    agent.machine.adapter.before = None
    return job


def test_a_result_the_server_cannot_take_waits_and_is_posted_by_the_agent(pending: Any, agent: Any) -> None:
    from server.profiling.models import JobResult

    outbox = agent.machine.folder / "outbox"
    assert [p.name for p in outbox.glob("job-*.json")] == [f"job-{pending.pk}-attempt-1.json"]
    pending.refresh_from_db()
    assert pending.state == "running" and not JobResult.objects.filter(job=pending).exists()

    # the server answers again: once the pause after the agent's last round is over, its
    # heartbeat posts what waits
    wait_for(agent.outbox.due, 5, "a round of the outbox to be due")
    agent.beat()

    pending.refresh_from_db()
    assert pending.state == "succeeded" and pending.claimed_by == agent.token
    assert JobResult.objects.filter(job=pending).count() == 1
    assert list(outbox.glob("job-*.json")) == []


def test_a_repeated_post_of_an_attempt_is_already_stored(pending: Any, agent: Any) -> None:
    from server.profiling.models import JobResult

    box = Outbox(agent.machine.folder / "outbox")
    (waiting,) = box.waiting()
    assert box.round(agent.server) == 0
    result = JobResult.objects.get(job=pending)

    answer = agent.server.post_result(pending.pk, waiting.post)  # its answer was lost: posted again

    assert answer.outcome == "already-stored"
    assert list(JobResult.objects.filter(job=pending).values_list("pk", flat=True)) == [result.pk]


def test_a_result_that_waited_past_its_claim_is_dropped_saying_so(
    pending: Any, agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from server.profiling.models import JobResult

    box = Outbox(agent.machine.folder / "outbox")
    (waiting,) = box.waiting()
    with caplog.at_level(logging.ERROR, logger="latencylab.workers"):
        assert box.deliver(agent.server, now=waiting.expires_at + 1) == 0

    assert not waiting.path.exists()
    assert f"job {pending.pk}: its result waited past its claim" in caplog.text
    pending.refresh_from_db()
    assert pending.state == "running" and not JobResult.objects.filter(job=pending).exists()
    assert waiting.expires_at > time.time()  # a claim's time, not already past when it was kept
