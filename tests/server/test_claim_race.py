"""Workers racing for one job: exactly one claim wins, even from separate connections at once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from server.profiling.models import ProfilingJob
from server.profiling.services import claim_job

RACERS = 6


@pytest.mark.django_db(transaction=True)
def test_concurrent_claims_one_winner(member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    barrier = threading.Barrier(RACERS)
    winners: list[str] = []
    errors: list[BaseException] = []

    def race(token: str) -> None:
        try:
            barrier.wait(timeout=10)
            if claim_job(job.pk, token) is not None:
                winners.append(token)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connections.close_all()  # each thread has its own connection: close it here

    threads = [threading.Thread(target=race, args=(f"run-{i}",)) for i in range(RACERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert len(winners) == 1, winners
    job.refresh_from_db()
    assert (job.claimed_by, job.attempts) == (winners[0], 1)
    assert ProfilingJob.objects.running().count() == 1
