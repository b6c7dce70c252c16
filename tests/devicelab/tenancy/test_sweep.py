"""A tiny sharing sweep end to end: rows for every (workload, R, strategy) with samples, positive
throughput and checked outputs; a memory cap turns an R into memory-bound rows, not a crash; a
progress callback that raises stops the sweep with everything freed."""

from __future__ import annotations

import json
import threading

import pytest

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.graph.ir import Graph
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import gemm_footprint
from devicelab.tenancy.spec import SharingSpec
from devicelab.tenancy.sweep import run_sharing_sweep
from devicelab.tenancy.table1 import table1

SHAPE = (48, 8, 40)
STRATEGIES = ("exclusive", "exclusive_batched", "time_only", "space_only", "space_time", "space_time_vbatched")


def test_tiny_sweep_rows(found: FoundDevice, tiny: Graph) -> None:
    spec = SharingSpec(
        shapes=(SHAPE,), networks=("tiny",), tenants=(1, 2, 3), strategies=STRATEGIES, warmup=1, runs=3, ceiling=False
    )
    seen: list[float] = []
    result = run_sharing_sweep(found, spec, progress=lambda f, m: seen.append(f), graphs={"tiny": tiny})
    data = json.loads(json.dumps(result.as_dict()))  # plain JSON
    assert seen == sorted(seen) and seen[-1] == 1.0
    rows = data["rows"]
    assert len(rows) == 2 * 3 * len(STRATEGIES)
    for row in rows:
        where = f"{row['workload']['name']} R={row['tenants']} {row['strategy']}"
        if row["workload"]["kind"] == "network" and row["strategy"] == "space_time_vbatched":
            assert row["status"] == "unsupported", where
            continue
        assert row["status"] == "ok", f"{where}: {row['error']}"
        assert row["checks"]["correct"], f"{where}: {row['checks']}"
        assert row["throughput"]["gflops"] > 0 and row["throughput"]["per_s"] > 0, where
        assert len(row["makespan_ms"]["samples"]) == 3, where
        served = 1 if row["strategy"] == "exclusive" else row["tenants"]
        assert row["served_per_step"] == served and len(row["latency_ms"]["per_tenant"]) == served, where
        assert row["latency_ms"]["p99"] >= row["latency_ms"]["p50"] > 0, where
        assert row["straggler"]["gap_ms"] >= 0, where
        assert row["memory"]["bytes"] > 0 and row["memory"]["device_global_mem_bytes"] == found.limits.global_mem_size
    sgemm = [r for r in rows if r["workload"]["kind"] == "sgemm" and r["strategy"] != "exclusive_batched"]
    assert all(r["checks"]["bitwise"] for r in sgemm), "the same kernel must give the same bits"
    space_time = next(r for r in rows if r["workload"]["name"] == "tiny" and r["strategy"] == "space_time")
    assert space_time["network"]["batched_steps"] > 0
    entries = {e["workload"]["name"]: e for e in data["table1"]}
    assert [p["tenants"] for p in entries["48x8x40"]["per_tenants"]] == [2, 3]
    assert entries["48x8x40"]["speedup_geomean"] > 0
    assert entries["48x8x40"]["next_best"] in ("time_only", "space_only")
    assert data["table1"] == table1(rows)


def test_memory_cap_reports_memory_bound_rows(found: FoundDevice) -> None:
    shape = GemmShape(*SHAPE)
    cap = gemm_footprint("space_time", shape, 2).bytes(2) + 1  # room for two tenants, not three
    spec = SharingSpec(
        shapes=(SHAPE,),
        tenants=(2, 3),
        strategies=("exclusive", "time_only", "space_time"),
        warmup=0,
        runs=1,
        memory_cap_bytes=cap,
        ceiling=False,
    )
    result = run_sharing_sweep(found, spec)
    rows = {(r.tenants, r.strategy): r for r in result.rows}
    assert rows[(2, "space_time")].status == "ok" and rows[(2, "time_only")].status == "ok"
    for name in ("time_only", "space_time"):
        row = rows[(3, name)]
        assert row.status == "memory_bound" and "cap" in row.error, row.error
        assert row.as_dict()["throughput"] is None
        assert row.memory["largest_tenants_that_fit"] == 2
    assert rows[(3, "exclusive")].status == "ok", "one tenant still fits"
    largest = {e["strategy"]: e for e in result.largest_tenants()}
    assert largest["space_time"]["largest_measured"] == 2 and largest["space_time"]["smallest_memory_bound"] == 3


class Stop(Exception):
    pass


def test_progress_that_raises_stops_the_sweep(found: FoundDevice) -> None:
    calls = []

    def stop_once_set_up(fraction: float, message: str) -> None:
        calls.append(message)
        if "checking outputs" in message:  # every strategy is set up: threads, contexts, buffers
            raise Stop(message)

    spec = SharingSpec(
        shapes=(SHAPE,),
        tenants=(3,),
        strategies=("time_only", "space_only", "space_time"),
        warmup=2,
        runs=50,
        ceiling=False,
    )
    with pytest.raises(Stop):
        run_sharing_sweep(found, spec, progress=stop_once_set_up)
    assert calls[-1].endswith("checking outputs")
    assert not [t for t in threading.enumerate() if t.name.startswith("space-only") and t.is_alive()]
    again = run_sharing_sweep(
        found, SharingSpec(shapes=(SHAPE,), tenants=(2,), strategies=("space_only",), warmup=0, runs=1, ceiling=False)
    )
    assert again.rows[0].status == "ok"


def test_spec_round_trips_and_refuses_nonsense() -> None:
    spec = SharingSpec(shapes=((4, 5, 6),), tenants=(1, 3), runs=2)
    assert SharingSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec
    for bad in ({"tenants": [0]}, {"strategies": ["fast"]}, {"runs": 0}, {"shapes": [[1, 2]]}, {"colour": 1}):
        with pytest.raises(ValueError):
            SharingSpec.from_dict({**spec.as_dict(), **bad})
