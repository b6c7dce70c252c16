"""A fusion sweep submitted through the API runs end to end on a real worker's OpenCL device (PoCL
here, any OpenCL driver elsewhere): its progress moves, its rows are stored, every fused kernel is
checked correct, and every throughput is positive. A sweep cancelled while it runs stops at its
worker's next progress report and stores nothing; the device takes the next sweep at once.

Small on purpose: one small zoo network, three kinds, pairs only, three timed rounds (about 20 s
of measuring on a 2-core machine; full sweeps are in benchmarks/)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.helpers import cancel_one_sweep_then_run_another

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


def _submit(api: Any, device: Any, spec: dict[str, Any]) -> int:
    response = api.post("/api/fusion/sweeps/", {"device": device.pk, "zoo": [NETWORK], "spec": spec}, format="json")
    assert response.status_code == 201, response.content
    return int(response.json()["id"])


@pytest.mark.django_db(transaction=True)
def test_a_sweep_runs_on_a_worker_and_a_cancelled_one_stops(start_worker: Any, e2e_api: Any) -> None:
    from server.fusion.models import FusionSweepResult

    _, tiny_id, body, progress = cancel_one_sweep_then_run_another(
        start_worker,
        e2e_api,
        lambda device, spec: _submit(e2e_api, device, spec),
        (LONG_SPEC, TINY_SPEC),
        detail_url="/api/fusion/sweeps/{id}/",
        result_model=FusionSweepResult,
        measuring_from=0.1,  # past loading its network
        finish_within=150,
    )
    assert any(0 < p < 1 for p in progress), progress

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
