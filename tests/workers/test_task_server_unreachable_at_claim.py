"""A claim the server does not answer (down, restarting, a 5xx) is transient: the task raises
``ServerUnreachable``, retried with backoff like a busy device, and the job stays queued; once
the retries are spent the job is left queued for the server to send again, not failed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import requests

from workers.failures import TRANSIENT_ERRORS
from workers.server_api import ServerUnreachable
from workers.tasks import run_profiling_job


def test_an_unanswered_claim_is_retried_and_the_job_stays_queued(
    as_device_process: Any, agent: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job()

    def down(request: Any) -> None:
        if request.url.endswith(f"/api/lab/jobs/{job.pk}/claim"):
            raise requests.ConnectionError("[Errno 111] Connection refused")

    agent.machine.adapter.before = down
    assert ServerUnreachable in TRANSIENT_ERRORS
    with pytest.raises(ServerUnreachable, match="Connection refused"):
        run_profiling_job(job.pk)
    job.refresh_from_db()
    assert job.state == "queued" and job.attempts == 0

    # The retries spent: nothing to tell a server that does not answer; the job waits, queued.
    run_profiling_job.on_failure(ServerUnreachable("POST .../claim: [Errno 111]"), "task-id", [job.pk], {}, None)
    job.refresh_from_db()
    assert job.state == "queued"

    # The server answers again: the same message runs.
    agent.machine.adapter.before = None
    assert run_profiling_job(job.pk) == "succeeded"
