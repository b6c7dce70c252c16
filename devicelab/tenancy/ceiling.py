"""The ceiling beside the device: numpy's SGEMM (its BLAS) on the same cores.

On PoCL the "device" is this machine's CPU, so the fair ceiling for an SGEMM is what a tuned BLAS
gets from the same cores. It is measured in a fresh Python process: PoCL's worker threads keep
spinning for a while after a kernel, and numpy's BLAS threads in the same process then share the
cores with them (measured 2026-11-26: 256x128x1152 at 5 GFLOP/s right after PoCL work in one
process, 187 GFLOP/s in a fresh one).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from devicelab.tenancy.gemm import GemmShape

_PROGRAM = r"""
import json, sys, time
import numpy as np
shapes, repeats = json.loads(sys.argv[1]), int(sys.argv[2])
out = {}
for m, n, k in shapes:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    c = np.empty((m, n), np.float32)
    flops = 2 * m * n * k
    samples = []
    for i in range(repeats + 2):  # two dropped warm-up products
        t0 = time.perf_counter_ns(); np.matmul(a, b, out=c); t1 = time.perf_counter_ns()
        if i >= 2:
            samples.append(flops / (t1 - t0))
    out[f"{m}x{n}x{k}"] = {"gflops": sorted(samples)[len(samples) // 2], "best_gflops": max(samples), "samples": samples}
config = np.show_config(mode="dicts") if "mode" in np.show_config.__code__.co_varnames else {}
blas = config.get("Build Dependencies", {}).get("blas", {}) if isinstance(config, dict) else {}
print(json.dumps({"numpy": np.__version__, "blas": blas.get("name", ""), "blas_version": blas.get("version", ""), "shapes": out}))
"""

TIMEOUT_S = 300.0


def numpy_sgemm_gflops(shapes: Sequence[GemmShape], repeats: int = 15) -> dict[str, Any]:
    """numpy's GFLOP/s per shape (the median and the best of ``repeats`` products, each its own
    sample: a multi-threaded BLAS on a loaded machine is bimodal, so the best is the ceiling and
    the median says how loaded), with the numpy and BLAS versions. Measured in a fresh process
    (see the module docstring)."""
    payload = json.dumps([[s.m, s.n, s.k] for s in shapes])
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM, payload, str(repeats)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    result["repeats"] = repeats
    return result


__all__ = ["numpy_sgemm_gflops"]
