"""numpy's ceiling is measured on every tenant's own operands (not one cache-hot matrix), the
better of one BLAS thread and all of them, one step per round interleaved with the strategies,
and every measured SGEMM row gets its paired ratio to it; network-only strategies get no SGEMM rows."""

from __future__ import annotations

import json

import numpy as np

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.tenancy.ceiling import WHAT, CeilingProcess
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.operands import tenant_matrices
from devicelab.tenancy.spec import SharingSpec
from devicelab.tenancy.sweep import run_sharing_sweep

SHAPE = GemmShape(24, 8, 32)


def test_the_ceiling_multiplies_every_tenants_own_operands() -> None:
    ceiling = CeilingProcess(SHAPE.m, SHAPE.n, SHAPE.k, tenants=3, seed=5)
    try:
        ceiling.step(0, keep=False)
        ceiling.step(1, keep=True)
        ceiling.step(2, keep=True)
        sums = ceiling.checksums()
    finally:
        ceiling.release()
    expected = []
    for t in range(3):
        a, b = tenant_matrices(SHAPE, 5, t)
        expected.append(float((a.astype(np.float64) @ b.astype(np.float64)).sum()))
    assert np.allclose(sums, expected, rtol=1e-4, atol=1e-3)
    assert len(set(round(s, 3) for s in sums)) == 3, "each tenant has its own matrices"
    run = ceiling.run
    assert len(run.one_thread_ms) == len(run.all_threads_ms) == 2  # the warm-up step is dropped
    best = [run.flops / (min(o, a) * 1e6) for o, a in zip(run.one_thread_ms, run.all_threads_ms)]
    assert run.gflops_samples() == best
    assert run.environment["numpy"] == np.__version__ and run.environment["threads"] >= 1


def test_sweep_interleaves_the_ceiling_and_pairs_rows_with_it(found: FoundDevice) -> None:
    spec = SharingSpec(
        shapes=((SHAPE.m, SHAPE.n, SHAPE.k),),
        tenants=(1, 3),
        strategies=("exclusive", "time_only", "space_time", "space_time_native"),
        warmup=1,
        runs=4,
    )
    data = json.loads(json.dumps(run_sharing_sweep(found, spec).as_dict()))
    assert {r["strategy"] for r in data["rows"]} == {"exclusive", "time_only", "space_time"}
    assert any("space_time_native" in note for note in data["notes"])
    ceiling = data["ceiling"]
    assert ceiling["what"] == WHAT and "every tenant's own" in ceiling["what"]
    per = ceiling["shapes"][SHAPE.name]["per_tenants"]
    assert sorted(per) == ["1", "3"]
    for r, run in per.items():
        assert len(run["gflops_samples"]) == spec.runs == len(run["one_thread_ms"]) == len(run["all_threads_ms"])
        assert run["best_gflops"] >= run["gflops"] > 0
        # the step covers R products: its time grows with R, so the FLOPs are R problems' worth
        assert run["tenants"] == int(r)
    for row in data["rows"]:
        ratio = row["of_ceiling"]
        assert ratio is not None and ratio["rounds"] == spec.runs, row["strategy"]
        assert ratio["low"] <= ratio["ratio"] <= ratio["high"]
        assert ratio["verdict"] in ("above", "below", "within noise")
