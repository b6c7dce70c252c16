"""A sharing sweep submitted through the API runs end to end on a real worker's OpenCL device (PoCL
here, any OpenCL driver elsewhere): its progress moves, its rows are stored in the order measured,
every output check passes, the throughputs and latencies are positive and consistent, and table 1
compares space-time with space-only. A sweep cancelled while it runs stops at its worker's next
progress report and stores nothing; the device takes the next sweep at once.

Small on purpose: one small SGEMM shape, R = 1 and 2, two strategies, three timed rounds (a few
seconds of measuring once the kernels are built; full sweeps are in benchmarks/)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import cancel_one_sweep_then_run_another

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
TIME_BUDGET_S = 120  # below the worker's limit: the server's default budget is its own limit's


def _submit(api: Any, device: Any, spec: dict[str, Any]) -> int:
    body = {"device": device.pk, "spec": spec, "time_budget_s": TIME_BUDGET_S}
    response = api.post("/api/sharing/sweeps/", body, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


@pytest.mark.django_db(transaction=True)
def test_a_sharing_sweep_runs_on_a_worker_and_a_cancelled_one_stops(start_worker: Any, e2e_api: Any) -> None:
    from server.tenancy.models import SharingSweepResult

    _, tiny_id, body, _ = cancel_one_sweep_then_run_another(
        start_worker,
        e2e_api,
        lambda device, spec: _submit(e2e_api, device, spec),
        (LONG_SPEC, TINY_SPEC),
        detail_url="/api/sharing/sweeps/{id}/",
        result_model=SharingSweepResult,
        measuring_from=0.0,  # past building its kernels
        finish_within=120,
    )

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
