"""Plain helpers of the end-to-end tests: waiting, test graphs, and rows through the real API."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from devicelab.graph import Graph, GraphBuilder, graph_to_json
from tests.waiting import wait_for

# The workers the tests start heart-beat every second and count as offline after 4 s of silence.
HEARTBEAT_SECONDS = 1
OFFLINE_AFTER_SECONDS = 4
TRAINING_LEASE_SECONDS = 4
# An idle device's queued job whose message went out longer ago than this is sent again.
RESEND_AFTER_SECONDS = 3

QUICK = {"runs": 5, "warmup_runs": 1}
LONG = {"runs": 100, "warmup_runs": 2}


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


# An experiment's work plus the worker's start (loading networks, building kernels) is far below
# this; the default e2e limit (60 s, soft 30 s) is too tight for a loaded 2-core machine.
EXPERIMENT_TASK_TIME_LIMIT = "300"


def cancel_one_sweep_then_run_another(
    start_worker: Callable[..., Any],
    api: Any,
    submit: Callable[[Any, dict[str, Any]], int],
    specs: tuple[dict[str, Any], dict[str, Any]],
    *,
    detail_url: str,
    result_model: Any,
    measuring_from: float,
    finish_within: float,
) -> tuple[Any, int, dict[str, Any], list[float]]:
    """On a new worker's OpenCL device, queue a long sweep (``specs[0]``), cancel it once its
    progress passes ``measuring_from``, and check that it stops, stores nothing (no
    ``result_model`` row) and frees the device at once; then run the short one (``specs[1]``)
    queued behind it to its end, polling ``detail_url`` (``{id}`` to fill) for its progress.
    ``submit(device, spec)`` queues a sweep through ``api``. Gives the worker, the short sweep's id,
    its final body (checked succeeded) and the progress seen while it ran (checked never to go back)."""
    worker = start_worker(kinds="opencl", extra_env={"LATENCYLAB_TASK_TIME_LIMIT": EXPERIMENT_TASK_TIME_LIMIT})
    device = worker.device()
    assert device.kind == "opencl"
    long_spec, tiny_spec = specs

    # A long sweep runs past its setup; cancelling it stops the worker mid-sweep.
    long_id = submit(device, long_spec)
    wait_for(
        lambda: (j := job_row(long_id)).state == "running" and j.progress > measuring_from,
        120,
        "the long sweep to start measuring",
    )
    cancelled = api.post(f"/api/jobs/{long_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    cancelled_at = time.monotonic()

    # The tiny sweep queued behind it: the device's only consumer takes it once it dropped the other.
    tiny_id = submit(device, tiny_spec)
    wait_for(lambda: job_row(tiny_id).state != "queued", 60, "the device to take the next sweep")
    assert time.monotonic() - cancelled_at < 30, "the worker kept measuring the cancelled sweep"
    progress: list[float] = []

    def finished() -> Any:
        body = api.get(detail_url.format(id=tiny_id)).json()
        if body["state"] == "running" and (not progress or body["progress"] != progress[-1]):
            progress.append(body["progress"])
        return body["state"] not in ("queued", "running") and body

    body = wait_for(finished, finish_within, f"sweep {tiny_id} to finish", interval=0.1)
    assert body["state"] == "succeeded", body["failure_reason"] + "\n" + worker.log_tail()
    assert progress == sorted(progress), progress

    long = job_row(long_id)
    assert long.state == "cancelled" and long.progress < 1.0
    assert not result_model.objects.filter(job_id=long_id).exists()
    assert "'stopped'" in worker.log_tail(400)
    return worker, tiny_id, body, progress
