"""A sharing sweep as a worker reports it, for the API, client and CLI tests: ``SharingResult.as_dict()``
built from devicelab's own dataclasses (``SharingRow``, ``SharingSpec``) with made-up timings, so
that table 1 and the largest R are devicelab's own; and a helper that finishes a queued sharing
job through the services (claim, ingest) as its worker does.

The sweep: one SGEMM shape and ResNet-18, R = 1, 2, 4, 8, four strategies. The shape is measured
at every R (16 rows, space-time fastest from R = 2, time-only's outputs wrong at R = 8); ResNet-18
at R = 1, 2, 4 (12 rows: space-time memory-bound and space-only failed at R = 4), and the time
budget left R = 8 out: 28 rows, 26 measured, 25 correct, 1 incorrect."""

from __future__ import annotations

from typing import Any

from devicelab.tenancy.ceiling import CeilingRun
from devicelab.tenancy.results import SharingSweepRecord
from devicelab.tenancy.rows import SharingRow
from devicelab.tenancy.sweep import SharingResult, SharingSpec, pair_with_ceiling

SHAPE = (256, 128, 1152)
SHAPE_NAME = "256x128x1152"
NETWORK = "resnet18"
TENANTS = (1, 2, 4, 8)
STRATEGIES = ("exclusive", "time_only", "space_only", "space_time")
RUNS = 3
# A step's makespan relative to exclusive's, per tenant served: space-time batches best.
COST = {"exclusive": 1.0, "time_only": 1.1, "space_only": 0.9, "space_time": 0.6}
WRONG = (SHAPE_NAME, 8, "time_only")  # this row's outputs differ from the exclusive run
MEMORY_BOUND = (NETWORK, 4, "space_time")
FAILED = (NETWORK, 4, "space_only")
NOT_MEASURED = [{"workload": NETWORK, "tenants": 8}]
BUDGET_NOTE = "the time budget of 60 s ran out: 1 of 8 (workload, R) units were not measured, from resnet18 at R = 8 on"


def _workload(name: str) -> dict[str, Any]:
    if name == SHAPE_NAME:
        m, n, k = SHAPE
        return {"kind": "sgemm", "name": name, "flops": 2 * m * n * k, "m": m, "n": n, "k": k}
    return {"kind": "network", "name": name, "flops": 3_640_000_000, "steps": 31}


def _memory(workload: str, tenants: int) -> dict[str, Any]:
    # under a cap of 8 MB: 17 tenants of the shape fit, 3 of ResNet-18 (R = 4 is memory-bound)
    fixed, per_tenant, budget = 1_000_000, 400_000 if workload == SHAPE_NAME else 2_000_000, 8_000_000
    return {
        "bytes": fixed + tenants * per_tenant,
        "fixed_bytes": fixed,
        "per_tenant_bytes": per_tenant,
        "budget_bytes": budget,
        "device_global_mem_bytes": 8_000_000_000,
        "cap_bytes": budget,
        "largest_tenants_that_fit": (budget - fixed) // per_tenant,
    }


def sharing_row(workload: str, tenants: int, strategy: str) -> SharingRow:
    """One row as the sweep makes it: samples per round and per tenant, memory and the check."""
    served = 1 if strategy == "exclusive" else tenants
    base_ms = (0.4 if workload == SHAPE_NAME else 20.0) * served * (COST[strategy] if tenants > 1 else 1.0)
    row = SharingRow(
        _workload(workload),
        tenants,
        strategy,
        served_per_step=served,
        launches_per_step=1,
        memory=_memory(workload, tenants),
    )
    if (workload, tenants, strategy) == MEMORY_BOUND:
        row.fail("memory_bound", "the footprint of 9.0 MB at R = 4 is over the budget of 8.0 MB")
        return row
    if (workload, tenants, strategy) == FAILED:
        row.fail("error", "RuntimeError: clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
        return row
    for r in range(RUNS):
        makespan = base_ms * (1 + 0.02 * r)
        # tenant t finishes at a share of the makespan: the last one is the straggler
        row.add(makespan, tuple(makespan * (t + 1) / served for t in range(served)), makespan * 0.9)
    correct = (workload, tenants, strategy) != WRONG
    row.checks = {
        "against": "exclusive",
        "rule": "bitwise",
        "correct": correct,
        "bitwise": correct,
        "max_relative_error": 0.0 if correct else 0.5,
        "tenants_checked": list(range(served)),
    }
    if strategy == "exclusive":
        row.checks["numpy"] = {"correct": True, "max_relative_error": 1e-7}
    return row


def sharing_result() -> dict[str, Any]:
    """The sweep of the module docstring, as ``sharing_on_device`` returns it."""
    spec = SharingSpec(
        shapes=(SHAPE,),
        networks=(NETWORK,),
        tenants=TENANTS,
        strategies=STRATEGIES,
        warmup=1,
        runs=RUNS,
        memory_cap_bytes=8_000_000,
    )
    rows = [sharing_row(SHAPE_NAME, r, s) for r in TENANTS for s in STRATEGIES]
    rows += [sharing_row(NETWORK, r, s) for r in TENANTS[:3] for s in STRATEGIES]
    device = {"identity": "test:gpu", "name": "Test GPU", "platform": "Test CL", "compute_units": 2}
    device["runtime"] = {"pyopencl": "2025.1", "POCL_MAX_PTHREAD_COUNT": None}
    runs = []
    for tenants in TENANTS:  # numpy's ceiling per R: 150, 180 and 120 GFLOP/s by round, all threads better
        run = CeilingRun(*SHAPE, tenants, environment={"numpy": "2.0.0", "blas": "openblas", "threads": 2})
        for gflops in (150.0, 180.0, 120.0):
            run.all_threads_ms.append(run.flops / (gflops * 1e6))
            run.one_thread_ms.append(run.all_threads_ms[-1] * 3)
        pair_with_ceiling([r for r in rows if (r.workload["name"], r.tenants) == (SHAPE_NAME, tenants)], run)
        runs.append(run)
    result = SharingResult(spec, device, rows, None, [BUDGET_NOTE], elapsed_s=42.5, ceiling_runs=runs).as_dict()
    return {**result, "time_budget_s": 60.0, "complete": False, "not_measured": list(NOT_MEASURED)}


def finish_sharing(job: Any, result: dict[str, Any] | None = None) -> Any:
    """Claim a queued sharing sweep and store ``result`` (``sharing_result()`` by default), as its
    worker would; the stored ``SharingSweepResult``."""
    from server.profiling.services import claim_job
    from server.tenancy.services import ingest_sharing

    token = f"test-run-{job.pk}"
    assert claim_job(job.pk, token) is not None
    stored = ingest_sharing(
        job.pk, token, SharingSweepRecord.from_dict(result if result is not None else sharing_result())
    )
    assert stored is not None
    return stored
