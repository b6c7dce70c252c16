"""A sharing sweep is a job: the task claims it on the worker's OpenCL device (PoCL), runs it
through devicelab.tenancy within its time budget, and stores its rows; bad requests are refused
at submission, naming the field."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.tenancy.results import SharingSweepRecord
from workers.tasks import run_profiling_job

_serial = itertools.count(1)

TINY_SPEC = {
    "shapes": [[64, 8, 64]],
    "tenants": [1, 2],
    "strategies": ["space_only", "space_time"],
    "warmup": 1,
    "runs": 3,
}


@pytest.fixture
def submit(opencl_agent: Any, make_member: Callable[..., Any]) -> Callable[[dict[str, Any]], Any]:
    """``submit(raw)``: a sharing sweep of a new team on the agent's OpenCL device."""
    from server.devices.models import Device
    from server.tenancy.services import submit_sharing_sweep

    team = make_member().team
    device = Device.objects.get(pk=opencl_agent.devices[0].pk)
    return lambda raw: submit_sharing_sweep(team, device, raw)


def _stored_result(sweep: Any) -> dict[str, Any]:
    """A stored sweep back in the form the worker hands to ingest_sharing."""
    return {
        "format": 1,
        "spec": sweep.spec,
        "device": sweep.device,
        "ceiling": sweep.ceiling,
        "rows": [r.data for r in sweep.rows.all()],
        "table1": sweep.table1,
        "largest_tenants": sweep.largest_tenants,
        "notes": sweep.notes,
        "elapsed_s": sweep.elapsed_s,
        "complete": sweep.complete,
        "not_measured": sweep.not_measured,
        "time_budget_s": sweep.time_budget_s,
    }


def test_a_sharing_sweep_job_runs_on_the_opencl_device_and_stores_checked_rows(submit: Any) -> None:
    from devicelab.tenancy.rows import STATUSES
    from server.tenancy.models import SharingStatus, SharingSweepResult
    from server.tenancy.services import sharing_rows

    job = submit({"spec": TINY_SPEC})
    assert job.kind == "sharing_sweep" and job.model is None and job.title == "sharing sweep of 1 shape"

    assert run_profiling_job(job.pk) == "succeeded"

    job.refresh_from_db()
    assert job.state == "succeeded" and job.progress == 1.0
    sweep = SharingSweepResult.objects.get(job=job)
    assert sweep.spec == job.settings["spec"] and sweep.workloads == ["64x8x64"]
    assert sweep.complete and sweep.not_measured == [] and sweep.time_budget_s == job.settings["time_budget_s"]
    assert sweep.device["identity"] and sweep.device_name and "pyopencl" in sweep.environment
    assert sweep.ceiling is not None and sweep.ceiling["shapes"]["64x8x64"]["gflops"] > 0
    rows = list(sweep.rows.all())
    assert [(r.tenants, r.strategy) for r in rows] == [
        (1, "space_only"),
        (1, "space_time"),
        (2, "space_only"),
        (2, "space_time"),
    ]
    assert {r.workload_kind for r in rows} == {"sgemm"}
    for r in rows:
        assert r.status == "ok" and r.error == "" and r.correct is True, (r, r.error, r.data["checks"])
        measured = (r.throughput_gflops, r.throughput_per_s, r.memory_bytes, r.latency_p50_ms, r.latency_p99_ms)
        gflops, per_s, memory, p50, p99 = (float("nan") if v is None else v for v in measured)  # nan fails
        assert gflops > 0 and per_s > 0 and memory > 0 and 0 < p50 <= p99
        assert r.straggler_gap_ms is not None and (
            r.straggler_gap_ms == 0.0 if r.tenants == 1 else r.straggler_gap_ms >= 0
        )
        assert len(r.data["makespan_ms"]["samples"]) == 3 and len(r.data["latency_ms"]["per_tenant"]) == r.tenants
    # R tenants are served per step: twice the requests at R = 2 as at R = 1
    st = {r.tenants: r for r in sharing_rows(sweep, strategy="space_time")}
    assert st[2].data["served_per_step"] == 2 and st[1].data["served_per_step"] == 1
    assert [r.strategy for r in sharing_rows(sweep, tenants=2, workload="64x8x64")] == ["space_only", "space_time"]
    assert not sharing_rows(sweep, status="memory_bound").exists()
    # table 1 over R in [2, 120]: here R = 2 alone, space-time against space-only
    (entry,) = sweep.table1
    assert entry["workload"]["name"] == "64x8x64" and [p["tenants"] for p in entry["per_tenants"]] == [2]
    assert entry["per_tenants"][0]["next_best"] == "space_only" and entry["speedup_geomean"] > 0
    assert {(e["strategy"], e["largest_measured"]) for e in sweep.largest_tenants} == {
        ("space_only", 2),
        ("space_time", 2),
    }
    assert set(SharingStatus.values) == set(STATUSES)

    # a second delivery of the same message finds the job done and stores nothing twice
    assert run_profiling_job(job.pk) == "not-queued"
    assert SharingSweepResult.objects.filter(job=job).count() == 1


def test_storing_is_idempotent_and_only_for_the_claiming_run(submit: Any) -> None:
    from server.profiling.services import claim_job
    from server.tenancy.models import SharingMeasurement, SharingSweepResult
    from server.tenancy.services import ingest_sharing

    first = submit({"spec": TINY_SPEC})
    assert run_profiling_job(first.pk) == "succeeded"
    result = SharingSweepRecord.from_dict(_stored_result(SharingSweepResult.objects.get(job=first)))

    job = submit({"spec": TINY_SPEC})
    assert claim_job(job.pk, "run-a", device_id=job.device_id) is not None
    assert ingest_sharing(job.pk, "run-b", result) is None  # not the run that holds the claim
    assert not SharingSweepResult.objects.filter(job=job).exists()

    stored = ingest_sharing(job.pk, "run-a", result)
    assert stored is not None and stored.rows.count() == 4
    again = ingest_sharing(job.pk, "run-a", result)  # a retried store finds it stored
    assert again is not None and again.pk == stored.pk
    assert SharingMeasurement.objects.filter(sweep__job=job).count() == 4
    job.refresh_from_db()
    assert job.state == "succeeded"


def test_the_time_budget_stops_the_sweep_and_keeps_the_units_measured(opencl_agent: Any, submit: Any) -> None:
    from devicelab.tenancy.on_device import sharing_on_device
    from server.tenancy.models import SharingSweepResult

    # R = 1 takes well under a second once the kernels are built (built once per device and tile
    # width, so built here first: under load a build takes seconds); R = 512 (512 submitter threads
    # a round for space-only, a 512-problem super-kernel) takes about a minute at 300 rounds: the
    # budget cuts it mid-way
    spec = {**TINY_SPEC, "shapes": [[64, 64, 64]], "tenants": [1, 512], "runs": 300, "ceiling": False}
    warm = sharing_on_device(opencl_agent.devices[0].found, {**spec, "tenants": [1], "runs": 1, "warmup": 0})
    assert warm.complete and len(warm.rows) == 2
    job = submit({"spec": spec, "time_budget_s": 3.0})

    assert run_profiling_job(job.pk) == "succeeded"

    sweep = SharingSweepResult.objects.get(job=job)
    assert not sweep.complete and sweep.time_budget_s == 3.0
    assert sweep.not_measured == [{"workload": "64x64x64", "tenants": 512}]
    assert [(r.tenants, r.status) for r in sweep.rows.all()] == [(1, "ok"), (1, "ok")]
    assert any("time budget of 3 s ran out" in n for n in sweep.notes)
    assert sweep.elapsed_s < 3.0 + 15  # stopped at the budget, not at the end of the unit


def test_a_sharing_sweep_is_refused_on_a_device_that_is_not_opencl(
    make_member: Callable[..., Any], make_agent: Callable[..., Any]
) -> None:
    from server.devices.models import Device
    from server.tenancy.services import submit_sharing_sweep

    agent = make_agent(f"test-cpu-worker-{next(_serial)}", kinds=["cpu"])
    agent.start()
    team = make_member().team
    with pytest.raises(ValidationError) as err:
        submit_sharing_sweep(team, Device.objects.get(pk=agent.devices[0].pk), {})
    assert "sharing sweeps run on OpenCL devices" in " ".join(err.value.message_dict["device"])


@pytest.mark.parametrize(
    ("raw", "field", "says"),
    [
        ({"spec": {"tenants": [0, 2]}}, "spec", "spec.tenants[0] must be between 1 and 4096, got 0"),
        ({"spec": {"tenants": [2, 4, 2]}}, "spec", "spec.tenants lists 2 twice"),
        ({"spec": {"tenants": ["4"]}}, "spec", "spec.tenants[0] must be an integer, got '4'"),
        ({"spec": {"strategies": ["space_time", "telepathy"]}}, "spec", "spec.strategies[1] 'telepathy' is not one of"),
        ({"spec": {"shapes": [[256, 128]]}}, "spec", "spec.shapes[0] must have 3 items, got 2"),
        ({"spec": {"shapes": "256x128x1152"}}, "spec", "spec.shapes must be a list, got '256x128x1152'"),
        ({"spec": {"networks": ["no_such_net"]}}, "spec", "spec.networks: no zoo model named ['no_such_net']"),
        ({"spec": {"runs": "many"}}, "spec", "spec.runs must be an integer"),
        ({"spec": {"warmup": -1}}, "spec", "spec.warmup must be between 0 and 1000, got -1"),
        ({"spec": {"memory_cap_bytes": 0}}, "spec", "spec.memory_cap_bytes must be between 1 and"),
        ({"spec": {"ceiling": "yes"}}, "spec", "spec.ceiling must be true or false, got 'yes'"),
        ({"spec": {"shapes": [], "networks": []}}, "spec", "needs at least one SGEMM shape or network"),
        ({"spec": {"speed": "max"}}, "spec", "unknown spec key(s) ['speed']"),
        ({"spec": [1, 2]}, "spec", "spec must be a JSON object"),
        ({"time_budget_s": 10**9}, "time_budget_s", "over what a job may take"),
        ({"time_budget_s": 0}, "time_budget_s", "a positive number of seconds"),
        ({"colour": "blue"}, "settings", "unknown key(s) ['colour']"),
    ],
)
def test_bad_sharing_requests_name_the_field(submit: Any, raw: dict[str, Any], field: str, says: str) -> None:
    from server.profiling.models import ProfilingJob

    before = ProfilingJob.objects.count()
    with pytest.raises(ValidationError) as err:
        submit(raw)
    assert field in err.value.message_dict and says in " ".join(err.value.message_dict[field])
    assert ProfilingJob.objects.count() == before


def test_the_default_sweep_is_the_papers_and_networks_are_zoo_names(submit: Any) -> None:
    from devicelab.tenancy.spec import SharingSpec
    from server.tenancy.services import time_limit_budget

    job = submit({})
    assert job.settings == {"spec": SharingSpec().as_dict(), "time_budget_s": time_limit_budget()}
    assert job.title == "sharing sweep of 3 shapes"
    assert job.settings["spec"]["tenants"] == [1, 2, 4, 8, 10, 16, 20, 32, 64, 120]

    both = submit({"spec": {"shapes": [[256, 128, 1152]], "networks": ["resnet18", "mobilenet_v2"]}})
    assert both.settings["spec"]["networks"] == ["resnet18", "mobilenet_v2"]
    assert both.title == "sharing sweep of 1 shape, 2 networks"
    networks_only = submit({"spec": {"shapes": [], "networks": ["mobilenet_v2"]}, "time_budget_s": 60})
    assert networks_only.title == "sharing sweep of 1 network" and networks_only.settings["time_budget_s"] == 60.0
