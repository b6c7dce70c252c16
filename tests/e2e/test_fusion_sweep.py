"""A fusion sweep submitted through the API runs end to end on a real worker's OpenCL device (PoCL
here, any OpenCL driver elsewhere): its progress moves, its rows are stored, every fused kernel is
checked correct, and every throughput is positive. A sweep cancelled while it runs stops at its
worker's next progress report and stores nothing; the device takes the next sweep at once.

Small on purpose: one small zoo network, three kinds, pairs only, three timed rounds (about 20 s
of measuring on a 2-core machine; full sweeps are in benchmarks/)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.helpers import job_row, wait_for

NETWORK = "mobilenet_v2_0.5"  # has 1x1 convolutions, stride-1 depthwise ones and adds (EW)
TINY_SPEC = {
    "sizes": [2],
    "kinds": ["C_1x1", "EW", "DWC_s1"],
    "representatives": 1,
    "runs": 3,
    "warmup": 1,
    "identical_counts": [1, 2],
    "rounding": [True, False],
}
# Pairs and triples of every kind with many rounds: minutes of work, cancelled after its first sets.
LONG_SPEC = {"sizes": [2, 3], "representatives": 1, "runs": 200, "warmup": 1, "identical_counts": []}
# The smallest sweep's work plus the worker's start is far below this; the default e2e limit
# (60 s, soft 30 s) is too tight for a loaded 2-core machine.
WORKER_TASK_TIME_LIMIT = "300"


def _submit(api: Any, device: Any, spec: dict[str, Any]) -> int:
    response = api.post("/api/fusion/sweeps/", {"device": device.pk, "zoo": [NETWORK], "spec": spec}, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


@pytest.mark.django_db(transaction=True)
def test_a_sweep_runs_on_a_worker_and_a_cancelled_one_stops(start_worker: Any, e2e_api: Any) -> None:
    from server.fusion.models import FusionSweepResult

    worker = start_worker(kinds="opencl", extra_env={"LATENCYLAB_TASK_TIME_LIMIT": WORKER_TASK_TIME_LIMIT})
    device = worker.device()
    assert device.kind == "opencl"

    # A long sweep runs past loading its network; cancelling it stops the worker mid-sweep.
    long_id = _submit(e2e_api, device, LONG_SPEC)
    wait_for(
        lambda: (j := job_row(long_id)).state == "running" and j.progress > 0.1,
        120,
        "the long sweep to load its network and start measuring",
    )
    cancelled = e2e_api.post(f"/api/jobs/{long_id}/cancel/")
    assert cancelled.status_code == 200 and cancelled.json()["state"] == "cancelled"
    cancelled_at = time.monotonic()

    # The tiny sweep queued behind it: the device's only consumer takes it once it dropped the other.
    tiny_id = _submit(e2e_api, device, TINY_SPEC)
    wait_for(lambda: job_row(tiny_id).state != "queued", 60, "the device to take the next sweep")
    assert time.monotonic() - cancelled_at < 30, "the worker kept measuring the cancelled sweep"
    progress: list[float] = []

    def finished() -> Any:
        body = e2e_api.get(f"/api/fusion/sweeps/{tiny_id}/").json()
        if body["state"] == "running" and (not progress or body["progress"] != progress[-1]):
            progress.append(body["progress"])
        return body["state"] not in ("queued", "running") and body

    body = wait_for(finished, 150, f"sweep {tiny_id} to finish", interval=0.1)
    assert body["state"] == "succeeded", body["failure_reason"] + "\n" + worker.log_tail()
    assert progress == sorted(progress) and any(0 < p < 1 for p in progress), progress

    long = job_row(long_id)
    assert long.state == "cancelled" and long.progress < 1.0
    assert not FusionSweepResult.objects.filter(job_id=long_id).exists()
    assert "'stopped'" in worker.log_tail(400)

    result = body["result"]
    assert result["networks"] == [NETWORK] and result["wave_size"] >= 1 and result["spec"]["runs"] == 3
    # 3 kinds: 6 pairs with repetition, and one operator fused N = 1, 2 times; 2 variants each
    assert result["combinations"] == [{"size": 2, "total": 6, "planned": 6}] and result["sampled"] is False
    assert result["planned_units"] == result["measured_units"] == 8
    counts = result["row_counts"]
    assert counts == {"total": 16, "errors": 0, "correct": 16, "incorrect": 0, "unchecked": 0}, result["notes"]

    page = e2e_api.get(f"/api/fusion/sweeps/{tiny_id}/rows/", {"page_size": 500, "detail": "true"}).json()
    rows = page["results"]
    assert page["count"] == len(rows) == 16
    assert {r["variant"] for r in rows} == {"rounded", "unrounded"}
    assert all(r["correct"] is True and r["error"] == "" for r in rows)
    assert all(r["throughput"] > 0 and r["throughput_wall"] > 0 and r["total_mflops"] > 0 for r in rows)
    assert all(len(r["data"]["sequential"]["device_samples_ms"]) == 3 for r in rows)
    pairs = {tuple(r["kinds"]) for r in rows if r["experiment"] == "combination"}
    assert pairs == {
        ("C_1x1", "C_1x1"),
        ("C_1x1", "DWC_s1"),
        ("C_1x1", "EW"),
        ("DWC_s1", "DWC_s1"),
        ("DWC_s1", "EW"),
        ("EW", "EW"),
    }
    with_ew = e2e_api.get(f"/api/fusion/sweeps/{tiny_id}/rows/", {"contains": "EW", "variant": "rounded"}).json()
    assert sorted(tuple(r["kinds"]) for r in with_ew["results"]) == [("C_1x1", "EW"), ("DWC_s1", "EW"), ("EW", "EW")]
