"""A sharing sweep submitted through the API runs end to end on a real worker's OpenCL device (PoCL
here, any OpenCL driver elsewhere): its progress moves, its rows are stored in the order measured,
every output check passes, the throughputs and latencies are positive and consistent, and table 1
compares space-time with space-only. A sweep cancelled while it runs stops at its worker's next
progress report and stores nothing; the device takes the next sweep at once.

Small on purpose: one small SGEMM shape, R = 1 and 2, two strategies, three timed rounds (a few
seconds of measuring once the kernels are built; full sweeps are in benchmarks/)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.helpers import job_row, wait_for

SHAPE = [64, 32, 128]
TINY_SPEC = {"shapes": [SHAPE], "tenants": [1, 2], "strategies": ["space_only", "space_time"], "warmup": 1, "runs": 3}
# The paper's convolution shape up to R = 64 with many rounds: minutes of work, cancelled early.
LONG_SPEC = {
    "shapes": [[256, 128, 1152]],
    "tenants": [1, 2, 4, 8, 16, 32, 64],
    "strategies": ["time_only", "space_only", "space_time"],
    "warmup": 1,
    "runs": 2000,
    "ceiling": False,
}
# A job's work plus the worker's start (the kernels' first build included) is far below this; the
# default e2e limit (60 s, soft 30 s) is too tight for a loaded 2-core machine.
WORKER_TASK_TIME_LIMIT = "300"
TIME_BUDGET_S = 120  # below the worker's limit: the server's default budget is its own limit's


def _submit(api: Any, device: Any, spec: dict[str, Any]) -> int:
    body = {"device": device.pk, "spec": spec, "time_budget_s": TIME_BUDGET_S}
    response = api.post("/api/sharing/sweeps/", body, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


@pytest.mark.django_db(transaction=True)
def test_a_sharing_sweep_runs_on_a_worker_and_a_cancelled_one_stops(start_worker: Any, e2e_api: Any) -> None:
    from server.tenancy.models import SharingSweepResult

    worker = start_worker(kinds="opencl", extra_env={"LATENCYLAB_TASK_TIME_LIMIT": WORKER_TASK_TIME_LIMIT})
    device = worker.device()
    assert device.kind == "opencl"

    # A long sweep runs past building its kernels; cancelling it stops the worker mid-sweep.
    long_id = _submit(e2e_api, device, LONG_SPEC)
    wait_for(
        lambda: (j := job_row(long_id)).state == "running" and j.progress > 0.0,
        120,
        "the long sweep to start measuring",
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
        body = e2e_api.get(f"/api/sharing/sweeps/{tiny_id}/").json()
        if body["state"] == "running" and (not progress or body["progress"] != progress[-1]):
            progress.append(body["progress"])
        return body["state"] not in ("queued", "running") and body

    body = wait_for(finished, 120, f"sweep {tiny_id} to finish", interval=0.1)
    assert body["state"] == "succeeded", body["failure_reason"] + "\n" + worker.log_tail()
    assert progress == sorted(progress), progress

    long = job_row(long_id)
    assert long.state == "cancelled" and long.progress < 1.0
    assert not SharingSweepResult.objects.filter(job_id=long_id).exists()
    assert "'stopped'" in worker.log_tail(400)

    result = body["result"]
    name = "x".join(map(str, SHAPE))
    assert result["workloads"] == [name] and result["spec"]["runs"] == 3 and result["spec"]["tenants"] == [1, 2]
    assert result["complete"] is True and result["not_measured"] == [] and result["time_budget_s"] == TIME_BUDGET_S
    assert result["device_name"] and result["device"]["identity"] and 0 < result["elapsed_s"] < TIME_BUDGET_S
    assert result["ceiling"]["shapes"][name]["gflops"] > 0  # numpy on the same cores, in a fresh process
    assert result["row_counts"] == {
        "total": 4,
        "ok": 4,
        "memory_bound": 0,
        "unsupported": 0,
        "error": 0,
        "correct": 4,
        "incorrect": 0,
        "unchecked": 0,
    }, result["notes"]
    (entry,) = result["table1"]
    assert entry["workload"]["name"] == name and [p["tenants"] for p in entry["per_tenants"]] == [2]
    assert entry["per_tenants"][0]["next_best"] == "space_only" and entry["speedup_geomean"] > 0

    page = e2e_api.get(f"/api/sharing/sweeps/{tiny_id}/rows/", {"page_size": 500, "detail": "true"}).json()
    rows = page["results"]
    assert page["count"] == len(rows) == 4
    assert [(r["tenants"], r["strategy"]) for r in rows] == [
        (1, "space_only"),
        (1, "space_time"),
        (2, "space_only"),
        (2, "space_time"),
    ]
    flops = 2 * SHAPE[0] * SHAPE[1] * SHAPE[2]
    for r in rows:
        assert (r["workload"], r["workload_kind"], r["status"], r["error"]) == (name, "sgemm", "ok", "")
        assert r["correct"] is True and r["data"]["checks"]["bitwise"] is True, r["data"]["checks"]
        assert r["throughput_gflops"] > 0 and r["memory_bytes"] > 0
        assert 0 < r["latency_p50_ms"] <= r["latency_p99_ms"]
        # GFLOP/s and requests/s come from the same median makespan: R requests of 2mnk FLOPs each
        assert r["throughput_gflops"] * 1e9 == pytest.approx(r["throughput_per_s"] * flops, rel=1e-9)
        assert (
            len(r["data"]["makespan_ms"]["samples"]) == 3 and len(r["data"]["latency_ms"]["per_tenant"]) == r["tenants"]
        )
        assert r["data"]["served_per_step"] == r["tenants"]
        assert r["straggler_gap_ms"] == 0.0 if r["tenants"] == 1 else r["straggler_gap_ms"] >= 0.0
    st = e2e_api.get(f"/api/sharing/sweeps/{tiny_id}/rows/", {"strategy": "space_time", "tenants": 2}).json()
    assert [(r["tenants"], r["strategy"]) for r in st["results"]] == [(2, "space_time")]
