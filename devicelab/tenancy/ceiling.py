"""The ceiling beside the device: numpy's SGEMM (its BLAS) on the same cores, on the same work.

On PoCL the "device" is this machine's CPU, so the fair ceiling for R tenants' SGEMMs is what a
tuned BLAS gets from the same cores *on the same R problems*: each tenant's own A and B (from the
sweep's seed, ``operands.tenant_matrices``), one product after another, timed as one step. It is
the ceiling of "R independent SGEMMs served on the host's CPU by a tuned library", not of one
cache-hot matrix: R distinct operands do not all stay in cache (measured 2026-12-07: 512x1x512
read 36 GFLOP/s on one matrix against 4.4-6.4 over R distinct tenants).

Each round it times the step twice, with one BLAS thread and with all of them (threadpoolctl),
in an order that alternates by round, and keeps the better: a multi-threaded BLAS on a loaded
machine can collapse (1.7 GFLOP/s read against 68-87 single-threaded on the same shapes), and a
matrix-vector product is often faster on one thread. The rounds are interleaved with the
strategies' (``sweep._interleave`` runs one ceiling step per round, in the rotation), so a burst
of load hits the ceiling too and its samples pair with the strategies' by round.

It runs in a separate Python process: PoCL's worker threads keep spinning for a while after a
kernel, and numpy's BLAS threads in the same process then fight them for the cores (measured
2026-11-26: 256x128x1152 at 5 GFLOP/s right after PoCL work in one process, 187 in a fresh one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np

WHAT = (
    "numpy's SGEMM (its BLAS) of every tenant's own A and B, one after another, on this machine's cores "
    "in a separate process; per round the better of one BLAS thread and all of them; its rounds "
    "interleaved with the strategies' (a ceiling of R independent SGEMMs by a tuned host library, "
    "not of one cache-hot matrix)"
)
TIMEOUT_S = 300.0

# The separate process: reads one JSON command a line, answers one JSON line.
_PROGRAM = r"""
import json, sys, time, types
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits
from devicelab.tenancy.operands import tenant_matrices

def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n"); sys.stdout.flush()

def step(work):
    t0 = time.perf_counter_ns()
    for a, b, c in work:
        np.matmul(a, b, out=c)
    return (time.perf_counter_ns() - t0) / 1e6

work = []
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "load":
        m, n, k = cmd["shape"]
        sizes = types.SimpleNamespace(m=m, n=n, k=k)
        work = [(*tenant_matrices(sizes, cmd["seed"], t), np.empty((m, n), np.float32)) for t in range(cmd["tenants"])]
        blas = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        reply({"numpy": np.__version__, "blas": blas[0].get("internal_api", "") if blas else "",
               "blas_version": blas[0].get("version", "") if blas else "",
               "threads": max((p.get("num_threads", 1) for p in blas), default=1)})
    elif cmd["op"] == "step":
        out = {}
        for mode in (("one", "all") if cmd["round"] % 2 == 0 else ("all", "one")):
            with threadpool_limits(limits=1 if mode == "one" else None, user_api="blas"):
                out[mode] = step(work)
        reply({"one_thread_ms": out["one"], "all_threads_ms": out["all"]})
    elif cmd["op"] == "checksums":
        reply({"sums": [float(c.astype(np.float64).sum()) for _, _, c in work]})
"""


@dataclass
class CeilingRun:
    """The ceiling of one (shape, R): one sample per timed round, paired with the strategies'."""

    m: int
    n: int
    k: int
    tenants: int
    one_thread_ms: list[float] = field(default_factory=list)
    all_threads_ms: list[float] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    error: str = ""

    @property
    def flops(self) -> int:
        """The FLOPs of one step: every tenant's SGEMM once."""
        return 2 * self.m * self.n * self.k * self.tenants

    def gflops_samples(self) -> list[float]:
        """GFLOP/s per round, of the better of one thread and all threads."""
        return [self.flops / (min(one, every) * 1e6) for one, every in zip(self.one_thread_ms, self.all_threads_ms)]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data: per round the two timings and the GFLOP/s kept, their median and best."""
        samples = self.gflops_samples()
        return {
            "tenants": self.tenants,
            "gflops": float(np.median(samples)) if samples else None,
            "best_gflops": max(samples) if samples else None,
            "gflops_samples": samples,
            "one_thread_ms": list(self.one_thread_ms),
            "all_threads_ms": list(self.all_threads_ms),
            "one_thread_better": sum(o < a for o, a in zip(self.one_thread_ms, self.all_threads_ms)),
            "error": self.error,
        }


class CeilingProcess:
    """numpy's SGEMM of every tenant's own operands, in a process of its own, one step at a time."""

    def __init__(self, m: int, n: int, k: int, tenants: int, seed: int) -> None:
        self.run = CeilingRun(m, n, k, tenants)
        env = dict(os.environ)
        # the process imports devicelab.tenancy.operands from the same tree as this one
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _PROGRAM],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            self.run.environment = self._ask({"op": "load", "shape": [m, n, k], "seed": seed, "tenants": tenants})
        except BaseException:
            self.release()
            raise

    def _ask(self, command: dict[str, Any]) -> dict[str, Any]:
        stdin, stdout = self._pipes()
        stdin.write(json.dumps(command) + "\n")
        stdin.flush()
        line = stdout.readline()
        if not line:
            self._proc.wait(timeout=TIMEOUT_S)
            stderr = self._proc.stderr.read() if self._proc.stderr else ""
            raise RuntimeError(f"the ceiling's process ended (exit {self._proc.returncode}): {stderr.strip()[-500:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def _pipes(self) -> tuple[IO[str], IO[str]]:
        if self._proc.stdin is None or self._proc.stdout is None:
            raise RuntimeError("the ceiling's process has no pipes")
        return self._proc.stdin, self._proc.stdout

    def step(self, round_index: int, keep: bool) -> None:
        """Time one step both ways (the order alternating by round); keep the sample if ``keep``."""
        got = self._ask({"op": "step", "round": round_index})
        if keep:
            self.run.one_thread_ms.append(float(got["one_thread_ms"]))
            self.run.all_threads_ms.append(float(got["all_threads_ms"]))

    def checksums(self) -> list[float]:
        """Each tenant's last product summed in float64 (what the tests compare with the device's data)."""
        return [float(s) for s in self._ask({"op": "checksums"})["sums"]]

    def release(self) -> None:
        """End the process (closing its input ends its loop)."""
        if self._proc.poll() is None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        for pipe in (self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                pipe.close()


def ceiling_summary(runs: list[CeilingRun]) -> dict[str, Any] | None:
    """The sweep's ``ceiling``: what it is a ceiling of, the library, and per shape its runs by R
    (``per_tenants``), with the shape's median and best over every round of every R."""
    if not runs:
        return None
    env = next((r.environment for r in runs if r.environment), {})
    shapes: dict[str, Any] = {}
    for run in runs:
        name = f"{run.m}x{run.n}x{run.k}"
        entry = shapes.setdefault(name, {"per_tenants": {}})
        entry["per_tenants"][str(run.tenants)] = run.as_dict()
    for entry in shapes.values():
        pooled = [g for r in entry["per_tenants"].values() for g in r["gflops_samples"]]
        entry["gflops"] = float(np.median(pooled)) if pooled else None
        entry["best_gflops"] = max(pooled) if pooled else None
    errors = [f"{r.m}x{r.n}x{r.k} R={r.tenants}: {r.error}" for r in runs if r.error]
    out: dict[str, Any] = {
        "what": WHAT,
        "numpy": env.get("numpy", np.__version__),
        "blas": env.get("blas", ""),
        "blas_version": env.get("blas_version", ""),
        "threads": env.get("threads"),
        "shapes": shapes,
    }
    if errors and not any(s["gflops"] is not None for s in shapes.values()):
        out["error"] = "; ".join(errors)
    elif errors:
        out["errors"] = errors
    return out


__all__ = ["WHAT", "CeilingProcess", "CeilingRun", "ceiling_summary"]
