"""Sharing sweeps as a worker would store them, for the summary and page tests, without running
them: results built from devicelab's own dataclasses (``rows.SharingRow`` filled round by round,
``memory.MemoryBudget`` and ``gemm_strategies.gemm_footprint`` for the footprints and the
memory-bound rows, ``sweep.SharingResult`` for table 1 and the largest R), so their plain data is
exactly what ``as_dict()`` gives, with chosen throughputs; jobs queued with
``submit_sharing_sweep``, claimed with ``claim_job`` and stored with ``ingest_sharing``.

The realistic sweep: the paper's 512x1x512 and 256x128x1152 and MobileNet-V2, R = 1, 2, 10, 20,
64, five strategies, a memory cap of 100 MB (256x128x1152 at R = 64 is memory-bound for the
shared strategies), a wrong output (512x1x512, space-time at R = 64), a failed row, the
variable-sized super-kernel unsupported for the network, and the network's R = 64 left out by the
time budget.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from devicelab.tenancy.ceiling import CeilingRun
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import gemm_footprint
from devicelab.tenancy.memory import Footprint, MemoryBound, MemoryBudget
from devicelab.tenancy.online_on_device import OnlineRunRecord
from devicelab.tenancy.online_spec import OnlineSpec
from devicelab.tenancy.results import SharingSweepRecord
from devicelab.tenancy.rows import SharingRow
from devicelab.tenancy.sweep import SharingResult, SharingSpec, pair_with_ceiling
from tests.server.fusion_factories import claim

DEVICE_MEMORY = 5_400_000_000
CAP = 100_000_000
SHAPES = ((512, 1, 512), (256, 128, 1152))
NETWORK = "mobilenet_v2"
NETWORK_FLOPS = 615_000_000
NETWORK_TENANT_BYTES = 1_500_000
TENANTS = (1, 2, 10, 20, 64)
STRATEGIES = ("exclusive", "time_only", "space_only", "space_time", "space_time_vbatched")
TIME_BUDGET_S = 600.0
ROUNDS = (0.9, 1.0, 1.1)  # each round's makespan over the median: the median is the one chosen

# GFLOP/s of each strategy at R = 1, 2, 10, 20, 64 (None: not measured there)
GFLOPS: dict[str, dict[str, tuple[float | None, ...]]] = {
    "512x1x512": {
        "exclusive": (6.0, 6.0, 6.0, 6.0, 6.0),
        "time_only": (5.0, 5.0, 5.0, 5.0, 5.0),
        "space_only": (4.0, 4.5, 4.0, 3.0, 2.0),
        "space_time": (5.0, 5.5, 6.0, 7.5, 6.5),  # over time-only: 1.1, 1.2, 1.5; R = 64 is wrong
        "space_time_vbatched": (4.8, 5.0, 5.5, 7.0, 6.0),
    },
    "256x128x1152": {
        "exclusive": (80.0, 80.0, 80.0, 80.0, 80.0),
        "time_only": (60.0, 30.0, 20.0, 25.0, None),
        "space_only": (70.0, 40.0, 40.0, 50.0, None),
        "space_time": (75.0, 30.0, 30.0, 40.0, None),  # over space-only: 0.75, 0.75, 0.8
        "space_time_vbatched": (70.0, 28.0, 27.0, 35.0, None),
    },
    NETWORK: {
        "exclusive": (28.0, 28.0, 27.0, 26.0),
        "time_only": (27.0, 33.0, 27.0, 25.0),
        "space_only": (30.0, 39.0, 36.0, None),  # R = 20 failed
        "space_time": (20.0, 25.0, 18.0, 15.0),  # over the better: 25/39, 18/36, 15/25
        "space_time_vbatched": (None, None, None, None),  # SGEMM only
    },
}
# how much faster the fastest tenant is than the slowest (latency = makespan x (1 - spread x t / (R - 1)))
SPREAD = {"time_only": 0.5, "space_only": 0.2, "space_time": 0.0, "space_time_vbatched": 0.0}
FAILED = "RuntimeError: a submitter thread did not finish its step within 60 s"
NOT_MEASURED = ({"workload": NETWORK, "tenants": 64},)
# numpy's ceiling per round at every R (the better of one thread and all): median 35 and 150
CEILING_GFLOPS = {"512x1x512": (34.0, 35.0, 37.0), "256x128x1152": (120.0, 150.0, 187.0)}
CEILING_ENVIRONMENT = {"numpy": "2.4.6", "blas": "openblas", "blas_version": "0.3.31", "threads": 4}
DEVICE = {
    "identity": "opencl:test/pthread-test-cpu",
    "name": "pthread-test-cpu",
    "platform": "Portable Computing Language",
    "platform_version": "OpenCL 3.0 PoCL 6.0",
    "driver_version": "6.0",
    "device_type": "CPU",
    "compute_units": 2,
    "global_mem_size": DEVICE_MEMORY,
    "max_mem_alloc_size": DEVICE_MEMORY // 2,
    "preferred_vector_width_float": 8,
    "runtime": {"pyopencl": "2025.1", "POCL_MAX_PTHREAD_COUNT": None},
}


def spec() -> SharingSpec:
    """The realistic sweep's spec."""
    return SharingSpec(
        shapes=SHAPES,
        networks=(NETWORK,),
        tenants=TENANTS,
        strategies=STRATEGIES,
        warmup=2,
        runs=3,
        memory_cap_bytes=CAP,
    )


def _workload(name: str) -> dict[str, Any]:
    if name == NETWORK:
        return {"kind": "network", "name": NETWORK, "flops": NETWORK_FLOPS, "steps": 64}
    shape = GemmShape(*(int(v) for v in name.split("x")))
    return {"kind": "sgemm", "name": shape.name, "m": shape.m, "n": shape.n, "k": shape.k, "flops": shape.flops}


def _footprint(workload: str, strategy: str, tenants: int) -> Footprint:
    if workload == NETWORK:
        if strategy == "exclusive":
            return Footprint(NETWORK_TENANT_BYTES, 0, NETWORK_TENANT_BYTES // 4)
        return Footprint(0, NETWORK_TENANT_BYTES, NETWORK_TENANT_BYTES // 4)
    return gemm_footprint(strategy, GemmShape(*(int(v) for v in workload.split("x"))), tenants)


def sharing_row(workload: str, tenants: int, strategy: str, gflops: float | None, correct: bool = True) -> SharingRow:
    """One row as the sweep fills it: memory checked against the budget first, then three timed
    rounds whose median makespan gives ``gflops`` (None: the strategy does not run here)."""
    row = SharingRow(_workload(workload), tenants, strategy)
    if workload == NETWORK and strategy == "space_time_vbatched":
        row.fail("unsupported", f"{strategy} is for SGEMM workloads; networks run [...]")
        return row
    budget = MemoryBudget(DEVICE_MEMORY, DEVICE_MEMORY // 2, CAP)
    footprint = _footprint(workload, strategy, tenants)
    row.memory = budget.as_dict(footprint, tenants)
    try:
        budget.check(footprint, tenants, strategy)
    except MemoryBound as e:
        row.fail("memory_bound", str(e))
        return row
    if gflops is None:
        row.fail("error", FAILED)
        return row
    row.served_per_step = 1 if strategy == "exclusive" else tenants
    row.launches_per_step = 1 if strategy in ("exclusive", "space_time", "space_time_vbatched") else tenants
    median_ms = row.workload["flops"] * row.served_per_step / (gflops * 1e9) * 1e3
    spread = SPREAD.get(strategy, 0.0)
    for factor in ROUNDS:
        makespan = median_ms * factor
        served = row.served_per_step
        latencies = tuple(makespan * (1 - spread * t / max(served - 1, 1)) for t in range(served))
        row.add(makespan, latencies, makespan * 0.9)
    row.checks = {
        "against": "exclusive",
        "rule": "bitwise",
        "correct": correct,
        "bitwise": correct,
        "max_relative_error": 0.0 if correct else 0.5,
        "tenants_checked": list(range(min(tenants, 8))),
    }
    return row


def sharing_result(
    rows: Sequence[SharingRow] | None = None,
    complete: bool = False,
    not_measured: Sequence[Mapping[str, Any]] = NOT_MEASURED,
    notes: Sequence[str] = ("the time budget of 600 s ran out: 1 of 15 (workload, R) units were not measured",),
) -> dict[str, Any]:
    """``sharing_on_device``'s result for ``rows`` (``realistic_rows()``)."""
    result = SharingResult(spec(), dict(DEVICE), list(rows if rows is not None else realistic_rows()))
    result.ceiling_runs = ceiling_runs(result.rows)
    result.notes = list(notes)
    result.elapsed_s = 512.5
    out = result.as_dict()
    out.update(time_budget_s=TIME_BUDGET_S, complete=complete, not_measured=[dict(u) for u in not_measured])
    return out


def ceiling_run(workload: str, tenants: int) -> CeilingRun:
    """numpy's ceiling of one (shape, R) as the sweep records it: round by round ``CEILING_GFLOPS``,
    one thread better in the first round, all threads in the others."""
    shape = GemmShape(*(int(v) for v in workload.split("x")))
    run = CeilingRun(shape.m, shape.n, shape.k, tenants, environment=dict(CEILING_ENVIRONMENT))
    for i, gflops in enumerate(CEILING_GFLOPS[workload]):
        best_ms = run.flops / (gflops * 1e6)
        run.one_thread_ms.append(best_ms if i == 0 else best_ms * 1.5)
        run.all_threads_ms.append(best_ms * 2 if i == 0 else best_ms)
    return run


def ceiling_runs(rows: Sequence[SharingRow]) -> list[CeilingRun]:
    """The ceiling of every (shape, R) of ``rows`` with its ``CEILING_GFLOPS``, each row paired with
    its own (``of_ceiling``), as the sweep does."""
    runs = []
    for workload, tenants in dict.fromkeys((r.workload["name"], r.tenants) for r in rows):
        if workload in CEILING_GFLOPS:
            run = ceiling_run(workload, tenants)
            pair_with_ceiling([r for r in rows if (r.workload["name"], r.tenants) == (workload, tenants)], run)
            runs.append(run)
    return runs


ONLINE_SPEC = OnlineSpec(workload="256x128x1152", tenants=4, load=0.8, duration_s=2.0)


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


def online_record() -> OnlineRunRecord:
    """An online run as its worker posts it: t1 of 1 ms, three policies measured, one memory-bound."""
    comparison = (
        _line("time_only", 0.5, 1.0),
        _line("space_only", 0.75, 1.0),
        _line("space_time", 0.875, 2.5),
        {"policy": "space_time_native", "status": "memory_bound"},
    )
    return OnlineRunRecord(
        spec=ONLINE_SPEC,
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


def realistic_rows() -> list[SharingRow]:
    """The realistic sweep's rows, in the order the sweep measures them."""
    rows = []
    for workload, by_strategy in GFLOPS.items():
        for i, tenants in enumerate(TENANTS):
            if workload == NETWORK and i >= len(by_strategy["exclusive"]):
                break  # the time budget left the network's R = 64 out
            for strategy in STRATEGIES:
                wrong = workload == "512x1x512" and tenants == 64 and strategy == "space_time"
                rows.append(sharing_row(workload, tenants, strategy, by_strategy[strategy][i], correct=not wrong))
    return rows


def geomean(values: Sequence[float]) -> float:
    """The geometric mean, as the test expects it."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def queued_sharing(team: Any, device: Any, spec_dict: Mapping[str, Any] | None = None) -> Any:
    """A sharing sweep job submitted through ``submit_sharing_sweep``, queued."""
    from server.tenancy.services import submit_sharing_sweep

    return submit_sharing_sweep(
        team, device, {"spec": dict(spec_dict or spec().as_dict()), "time_budget_s": TIME_BUDGET_S}
    )


def stored_sharing(team: Any, device: Any, result: Mapping[str, Any] | None = None) -> Any:
    """A sharing sweep job, claimed and stored: succeeded, with ``result`` (``sharing_result()``)."""
    from server.tenancy.services import ingest_sharing

    result = dict(result or sharing_result())
    job = queued_sharing(team, device, result["spec"])
    token = claim(job)
    assert ingest_sharing(job.pk, token, SharingSweepRecord.from_dict(result)) is not None
    job.refresh_from_db()
    return job


__all__ = [
    "ONLINE_SPEC",
    "online_record",
    "CAP",
    "CEILING_GFLOPS",
    "DEVICE_MEMORY",
    "GFLOPS",
    "NETWORK",
    "claim",
    "geomean",
    "queued_sharing",
    "realistic_rows",
    "sharing_result",
    "sharing_row",
    "spec",
    "stored_sharing",
]
