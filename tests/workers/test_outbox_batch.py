"""Several results waiting in the outbox go to the server in one batch (``POST /api/lab/results``)
and are stored once each; a server that refuses the batch (one that predates it) gets them one by
one; each result's answer is acted on alone: refused ones are dropped, unstored ones kept."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.profile_record import ProfileRecord
from devicelab.lab_protocol import BatchedAnswer, Claim, ResultAnswer, ResultBatch, ResultBatchAnswer, ResultPost
from tests.server.factories import profile_result
from workers.outbox import Outbox
from workers.server_api import Refused


def test_waiting_results_go_in_one_batch_and_are_stored_once(agent: Any, make_job: Callable[..., Any]) -> None:
    from server.networks.services import model_graph
    from server.profiling.models import JobResult

    # two claimed jobs whose results wait (as a device process leaves them when the server is away)
    jobs = [make_job(), make_job()]
    box = Outbox(agent.machine.folder / "outbox")
    for job in jobs:
        assert agent.server.claim(job.pk, Claim(agent.token, job.device_id)).outcome == "claimed"
        record = ProfileRecord.of(profile_result(model_graph(job.model))).as_dict()
        box.keep(job.pk, ResultPost(agent.token, 1, "profile", record), time.time() + 600)
    sent: list[str] = []
    agent.machine.adapter.before = lambda request: sent.append(request.url)

    assert len(box.waiting()) == 2
    assert box.round(agent.server) == 0

    assert [url.split("/api/lab/")[1] for url in sent] == ["results"]  # one call for both
    for job in jobs:
        job.refresh_from_db()
        assert job.state == "succeeded" and JobResult.objects.filter(job=job).count() == 1
    assert box.waiting() == []


class StubServer:
    """A lab server that answers the batch as told, and single posts ``stored``."""

    def __init__(self, batch: Any) -> None:
        self.batch = batch
        self.singles: list[int] = []

    def post_results(self, batch: ResultBatch) -> ResultBatchAnswer:
        if isinstance(self.batch, Exception):
            raise self.batch
        return ResultBatchAnswer([BatchedAnswer(item.job, self.batch(item.job)) for item in batch.results])

    def post_result(self, job_id: int, post: ResultPost) -> ResultAnswer:
        self.singles.append(job_id)
        return ResultAnswer("stored")


def three_waiting(folder: Path) -> Outbox:
    box = Outbox(folder)
    for job in (1, 2, 3):
        box.keep(job, ResultPost("run-1", 1, "profile", {"x": job}), time.time() + 600)
    return box


def test_a_server_without_the_batch_gets_them_one_by_one(tmp_path: Path) -> None:
    box = three_waiting(tmp_path)
    server = StubServer(Refused(404, "Not Found"))
    assert box.deliver(server) == 0  # type: ignore[arg-type]
    assert sorted(server.singles) == [1, 2, 3] and box.waiting() == []


def test_each_answer_of_a_batch_is_acted_on_alone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    box = three_waiting(tmp_path)
    server = StubServer(lambda job: {1: "stored", 2: "refused", 3: "unstored"}[job])
    assert box.deliver(server) == 1  # type: ignore[arg-type]
    assert [w.job_id for w in box.waiting()] == [3]  # posted again next round
    assert server.singles == []
    assert "job 2: its waiting result cannot be posted" in caplog.text
