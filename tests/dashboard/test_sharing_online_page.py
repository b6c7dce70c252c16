"""An online-scheduling run's page: the job page sends it there; while queued it shows the spec
and progress; once stored, t1 and the units it set and one row per policy (attainment, throughput,
latency, batch size, the output check), a memory-bound policy saying so."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.tenancy.online_on_device import OnlineRunRecord
from devicelab.tenancy.online_spec import OnlineSpec
from server.tenancy.services import ingest_online, submit_online_run
from tests.server.fusion_factories import claim

pytestmark = pytest.mark.django_db

SPEC = OnlineSpec(workload="256x128x1152", tenants=4, load=0.8, duration_s=2.0)


def _line(policy: str, attainment: float, batch: float) -> dict[str, Any]:
    return {
        "policy": policy,
        "status": "ok",
        "attainment": attainment,
        "per_s": 950.0,
        "goodput_per_s": 950.0 * attainment,
        "gflops": 71.7,
        "p50_ms": 1.25,
        "p99_ms": 6.5,
        "mean_batch": batch,
        "outputs_correct": True,
    }


def _record() -> OnlineRunRecord:
    comparison = (
        _line("time_only", 0.5, 1.0),
        _line("space_only", 0.75, 1.0),
        _line("space_time", 0.875, 2.5),
        {"policy": "space_time_native", "status": "memory_bound"},
    )
    return OnlineRunRecord(
        spec=SPEC,
        device={"name": "pthread-test-cpu", "compute_units": 2},
        t1_ms=1.0,
        target_ms=4.0,
        window_ms=1.0,
        offered_per_s=800.0,
        comparison=comparison,
        policies={"time_only": {"status": "ok"}},
        trace={"seed": 0, "summary": {"tenants": 4}},
        notes=("the device is a CPU driver",),
        elapsed_s=5.0,
    )


def test_a_run_is_drawn_on_its_own_page(
    make_member: Callable[..., Any], make_device: Callable[..., Any], web_client: Callable[..., Any]
) -> None:
    me = make_member()
    job = submit_online_run(me.team, make_device(kind="opencl", name="pocl-cpu"), {"spec": SPEC.as_dict()})
    client = web_client(me)
    assert client.get(f"/jobs/{job.pk}/").url == f"/sharing/online/{job.pk}/"
    queued = client.get(f"/sharing/online/{job.pk}/").content.decode()
    assert "Online scheduling #" in queued and "256x128x1152" in queued and 'id="progress-card"' in queued
    assert 'id="online-comparison"' not in queued

    token = claim(job)
    assert ingest_online(job.pk, token, OnlineRunRecord.from_dict(_record().as_dict())) is not None
    html = client.get(f"/sharing/online/{job.pk}/").content.decode()
    assert 'id="progress-card"' not in html and "1.000 ms" in html and "800 requests/s" in html
    rows = {p: html.split(f'data-policy="{p}"')[1].split("</tr>")[0] for p in ("time_only", "space_time")}
    assert "50 %" in rows["time_only"] and "1.00" in rows["time_only"]
    assert "88 %" in rows["space_time"] and "2.50" in rows["space_time"] and "correct" in rows["space_time"]
    assert "memory_bound" in html.split('data-policy="space_time_native"')[1].split("</tr>")[0]
    assert client.get(f"/sharing/online/{job.pk}/result/").status_code == 200
    other = make_member()
    assert web_client(other).get(f"/sharing/online/{job.pk}/").status_code == 404
