"""Plain helpers of the end-to-end tests: waiting, test graphs, and rows through the real API."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from devicelab.graph import Graph, GraphBuilder, graph_to_json

# The workers the tests start heart-beat every second and count as offline after 4 s of silence.
HEARTBEAT_SECONDS = 1
OFFLINE_AFTER_SECONDS = 4
# An idle device's queued job whose message went out longer ago than this is sent again.
RESEND_AFTER_SECONDS = 3

QUICK = {"runs": 5, "warmup_runs": 1}
LONG = {"runs": 100, "warmup_runs": 2}


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def tiny_graph(name: str = "tiny") -> Graph:
    """Five operators on a 16x16 input: a job on it takes well under a second."""
    b = GraphBuilder(name, (1, 3, 16, 16))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2, bias=False)))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def long_graph(name: str = "long") -> Graph:
    """A small residual net on 96x96 (about 50 ms per run here): with ``LONG`` a job takes ~10 s."""
    b = GraphBuilder(name, (1, 3, 96, 96))
    x = b.relu(b.bn(b.conv(b.input, 48, 3, bias=False)))
    for _ in range(6):
        y = b.relu(b.bn(b.conv(x, 48, 3, bias=False)))
        x = b.relu(b.add(x, b.bn(b.conv(y, 48, 3, bias=False))))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def upload(api: Any, graph: Graph) -> int:
    """Upload a graph-JSON model through the API; returns its id."""
    resp = api.post(f"/api/models/?name={graph.name}", data=graph_to_json(graph), content_type="application/json")
    assert resp.status_code in (200, 201), resp.content
    return int(resp.json()["id"])


def submit(api: Any, model_id: int, device_id: int, settings: dict[str, Any] | None = None) -> int:
    """Queue a job through the API; returns its id."""
    resp = api.post(
        "/api/jobs/", {"model": model_id, "device": device_id, "settings": settings or QUICK}, format="json"
    )
    assert resp.status_code == 201, resp.content
    return int(resp.json()["id"])


def job_row(job_id: int) -> Any:
    """The job row as it is in the database now."""
    from server.profiling.models import ProfilingJob

    return ProfilingJob.objects.get(pk=job_id)


def wait_finished(job_id: int, timeout: float = 90) -> Any:
    """Wait until the job reached a final state; return its row."""
    return wait_for(lambda: (j := job_row(job_id)).is_finished and j, timeout, f"job {job_id} to finish")


def wait_running(job_id: int, timeout: float = 60) -> Any:
    """Wait until the job runs and has reported progress; return its row."""
    return wait_for(
        lambda: (j := job_row(job_id)).state == "running" and j.progress > 0 and j,
        timeout,
        f"job {job_id} to make progress",
    )
