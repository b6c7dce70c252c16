"""What every sharing strategy is, and the two host-side schedulers the strategies use.

A **step** serves one request of every tenant the strategy has (the paper's saturated request
queues, section 2): it starts when all requests are there and ends when the last result is
back. A step's sample is its makespan (host wall clock), each tenant's latency (step start to
that tenant's result) and, where the strategy owns the events, the span of its kernels on the
device clock.

* ``round_robin``: the time-only scheduler. One tenant at a time, each run to completion before
  the next starts, in an order that rotates by one tenant per step, so no tenant is always
  served first.
* ``TenantThreads``: the space-only submitters. One host thread per tenant, parked on a barrier;
  a step releases them all at once, each submits its tenant's work on its own queue and waits
  for it, and the step ends when the last one is done. The device decides how the work overlaps.
"""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from devicelab.tenancy.memory import Footprint

BARRIER_TIMEOUT_S = 600.0  # a submitter thread that never returns breaks the step instead of hanging it


@dataclass(frozen=True)
class StepSample:
    """One step: makespan, each served tenant's latency (ms, host clock) and the device span."""

    makespan_ms: float
    latencies_ms: tuple[float, ...]
    device_ms: float | None = None  # first kernel start to last kernel end (None: not observed)


def device_span_ms(events: Sequence[cl.Event]) -> float | None:
    """First start to last end of ``events`` on the device clock (ms)."""
    if not events:
        return None
    starts = [ev.profile.start for ev in events]
    ends = [ev.profile.end for ev in events]
    return max(0, max(ends) - min(starts)) / 1e6


def elapsed_ms(t0_ns: int, t1_ns: int) -> float:
    """Milliseconds between two ``perf_counter_ns`` readings."""
    return (t1_ns - t0_ns) / 1e6


class SharingStrategy(ABC):
    """One way of sharing the device among tenants, set up and ready to run steps."""

    name: str
    tenants: int  # requests served per step
    launches_per_step: int  # kernel launches (commands) per step
    footprint: Footprint
    same_kernel_as_exclusive: bool  # a tenant's numbers come from the exclusive run's kernel (bitwise)

    @abstractmethod
    def step(self, first: int) -> StepSample:
        """Serve one request of every tenant (``first``: the tenant a rotating order starts at)."""

    @abstractmethod
    def outputs(self) -> list[np.ndarray]:
        """Each served tenant's result of the last step, read back to the host."""

    @abstractmethod
    def release(self) -> None:
        """Free what the strategy allocated (threads, queues, buffers)."""


def rotated(count: int, first: int) -> list[int]:
    """``first, first + 1, ..., first - 1`` modulo ``count``."""
    return [(first + i) % count for i in range(count)]


def round_robin(run_tenant: Callable[[int], None], count: int, first: int) -> StepSample:
    """Run every tenant's work to completion, one after another from ``first`` (time-only)."""
    done = [0] * count
    t0 = time.perf_counter_ns()
    for r in rotated(count, first):
        run_tenant(r)
        done[r] = time.perf_counter_ns()
    return StepSample(elapsed_ms(t0, max(done)), tuple(elapsed_ms(t0, d) for d in done))


class TenantThreads:
    """One parked host thread per tenant, released together by ``step`` (see the module docstring)."""

    def __init__(self, works: Sequence[Callable[[], None]], name: str = "tenant") -> None:
        self.works = list(works)
        n = len(self.works)
        self._start = threading.Barrier(n + 1, timeout=BARRIER_TIMEOUT_S)
        self._end = threading.Barrier(n + 1, timeout=BARRIER_TIMEOUT_S)
        self._done = [0] * n
        self._errors: list[BaseException] = []
        self._stop = False
        self._threads = [
            threading.Thread(target=self._loop, args=(i,), name=f"{name}-{i}", daemon=True) for i in range(n)
        ]
        for t in self._threads:
            t.start()

    def _loop(self, i: int) -> None:
        while True:
            try:
                self._start.wait()
            except threading.BrokenBarrierError:
                return
            if self._stop:
                return
            try:
                self.works[i]()
            except BaseException as e:  # reported by step() in the calling thread
                self._errors.append(e)
            self._done[i] = time.perf_counter_ns()
            try:
                self._end.wait()
            except threading.BrokenBarrierError:
                return

    def step(self) -> StepSample:
        """Release every thread at once and wait for all; the step's sample."""
        t0 = time.perf_counter_ns()
        self._start.wait()
        self._end.wait()
        if self._errors:
            error = self._errors[0]
            self._errors.clear()
            raise error
        return StepSample(elapsed_ms(t0, max(self._done)), tuple(elapsed_ms(t0, d) for d in self._done))

    def close(self) -> None:
        """Stop and join the threads."""
        self._stop = True
        try:
            self._start.wait(timeout=BARRIER_TIMEOUT_S)
        except threading.BrokenBarrierError:
            pass
        for t in self._threads:
            t.join(timeout=BARRIER_TIMEOUT_S)


__all__ = [
    "SharingStrategy",
    "StepSample",
    "TenantThreads",
    "device_span_ms",
    "elapsed_ms",
    "rotated",
    "round_robin",
]
