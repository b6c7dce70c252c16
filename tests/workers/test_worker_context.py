"""The agent hands its device processes their context through the environment; a Celery worker
not started by the agent says so instead of claiming jobs with no token."""

from __future__ import annotations

import pytest

from tests.workers.conftest import fake_cpu
from workers.context import ENV_VAR, NotAnAgentProcess, WorkerContext


def test_context_round_trips_through_the_environment() -> None:
    ctx = WorkerContext("lab-1", "f" * 32, {7: fake_cpu(1), 9: fake_cpu(2)})
    assert WorkerContext.from_env(ctx.to_env()) == ctx


def test_missing_context_names_the_way_to_start_a_worker() -> None:
    with pytest.raises(NotAnAgentProcess, match="latencylab worker"):
        WorkerContext.from_env({})
    assert ENV_VAR == "LATENCYLAB_WORKER_CONTEXT"
