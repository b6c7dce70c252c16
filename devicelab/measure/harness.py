"""The one measuring harness every backend uses, so a CPU, an OpenCL and an Android result mean
the same thing.

A measurement has three parts, always in this order and always kept apart:

* **cold start**: loading (a session, the programs and buffers, a model pushed to a phone) and
  the first run, each timed on its own, because a user meets them once and a warm run never;
* **warm-up**: runs that are made and dropped, until caches, allocators and drivers settle;
* **timed runs**: the samples that are kept.

The harness does not run anything itself: a backend hands it callables. A run callable returns
its sample, whatever that is (a wall time in ms, an OpenCL run's event times, the time a phone's
benchmark tool printed), so a run need not happen in this process.

Progress goes to an optional callback, never backwards, by count (about ten reports per phase)
and, after any run, whenever the last report is older than ``PROGRESS_INTERVAL_S``: a job of
long runs still moves, and a worker that learns of a cancellation only when it reports learns of
it soon.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

ReportFn = Callable[[float, str], None]
"""Called with a fraction in [0, 1] and a short message (the backends' ``ProgressFn``)."""

PROGRESS_INTERVAL_S = 1.0  # the longest a running phase stays silent (checked after each run)
REPORTS_PER_PHASE = 10


def wall_ms(fn: Callable[..., object], *args: object) -> float:
    """Call ``fn(*args)`` once and return its wall time (ms, on the high-resolution monotonic clock)."""
    t0 = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - t0) / 1e6


def split_evenly(count: int, parts: int) -> list[int]:
    """``count`` split into at most ``parts`` sizes, as even as possible, larger ones first."""
    n = max(1, min(parts, count))
    q, r = divmod(count, n)
    return [q + (i < r) for i in range(n)]


class Progress:
    """Monotonic progress reporting that tolerates no callback and knows when it last reported."""

    def __init__(
        self,
        fn: ReportFn | None,
        *,
        interval_s: float = PROGRESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.fn = fn
        self.interval_s = interval_s
        self.clock = clock
        self.last = 0.0
        self.last_at = clock()

    def __call__(self, fraction: float, message: str) -> None:
        """Report ``fraction`` (never less than what was reported before, never above 1)."""
        self.last = max(self.last, min(1.0, fraction))
        self.last_at = self.clock()
        if self.fn is not None:
            self.fn(self.last, message)

    def due(self) -> bool:
        """Whether the last report is older than the interval."""
        return self.clock() - self.last_at >= self.interval_s


class Meter:
    """``total`` steps of one phase, spread over the fractions ``start`` .. ``end`` of a job's
    progress, reported by count (about ``REPORTS_PER_PHASE`` times) or when a report is due."""

    def __init__(self, progress: Progress, start: float, end: float, total: int) -> None:
        self.progress = progress
        self.start = start
        self.end = end
        self.total = max(1, total)
        self.done = 0
        self.every = max(1, self.total // REPORTS_PER_PHASE)

    def step(self, message: str) -> None:
        """Count one step; report it if it is one of the counted reports, the last, or due."""
        self.done += 1
        if self.done % self.every == 0 or self.done >= self.total or self.progress.due():
            self.progress(self.start + (self.end - self.start) * min(1.0, self.done / self.total), message)


def repeat(
    run: Callable[[], T], count: int, meter: Meter, label: str, *, first: int = 0, of: int | None = None
) -> list[T]:
    """Call ``run`` ``count`` times and keep what each call returns, stepping ``meter`` after each
    with the message ``"<label> i/of"`` (``i`` counted from ``first``; ``of`` defaults to ``count``)."""
    of = count if of is None else of
    out: list[T] = []
    for i in range(count):
        out.append(run())
        meter.step(f"{label} {first + i + 1}/{of}")
    return out


class Harness:
    """One measurement: cold start apart (``load``, ``first_run``), warm-up runs dropped
    (``warm_up``), timed runs kept (``timed``), progress reported all along."""

    def __init__(
        self,
        progress: ReportFn | None,
        *,
        interval_s: float = PROGRESS_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.progress = Progress(progress, interval_s=interval_s, clock=clock)
        self.load_ms: float | None = None
        self.first_run_ms: float | None = None

    def report(self, fraction: float, message: str) -> None:
        """Report progress between the harness's phases (export, set-up, reading results)."""
        self.progress(fraction, message)

    def load(self, load: Callable[[], T], at: float = 0.0, message: str = "loading") -> T:
        """Load what the runs need (session, programs, model on the device), timed as ``load_ms``."""
        self.progress(at, message)
        t0 = time.perf_counter_ns()
        loaded = load()
        self.load_ms = (time.perf_counter_ns() - t0) / 1e6
        return loaded

    def first_run(self, run: Callable[[], object], at: float, message: str = "first run") -> None:
        """The first run after loading, timed as ``first_run_ms`` (it pays the lazy set-up the
        load left: allocations, just-in-time compilation)."""
        self.progress(at, message)
        self.first_run_ms = wall_ms(run)

    def meter(self, start: float, end: float, total: int) -> Meter:
        """A meter for a phase of ``total`` steps between ``start`` and ``end`` (for a backend
        that interleaves its own runs)."""
        return Meter(self.progress, start, end, total)

    def warm_up(self, run: Callable[[], object], count: int, start: float, end: float, label: str = "warm-up") -> None:
        """``count`` runs whose results are dropped."""
        repeat(run, count, self.meter(start, end, count), label)

    def timed(self, run: Callable[[], T], count: int, start: float, end: float, label: str = "timed run") -> list[T]:
        """``count`` runs, each one's sample kept, in order."""
        return repeat(run, count, self.meter(start, end, count), label)

    def done(self) -> None:
        """Report the measurement finished."""
        self.progress(1.0, "done")

    def cold_start(self) -> tuple[float, float]:
        """``(load_ms, first_run_ms)``; a ``RuntimeError`` if either was not measured."""
        if self.load_ms is None or self.first_run_ms is None:
            raise RuntimeError("the cold start was not measured: call load() and first_run() first")
        return self.load_ms, self.first_run_ms


__all__ = [
    "PROGRESS_INTERVAL_S",
    "Harness",
    "Meter",
    "Progress",
    "ReportFn",
    "repeat",
    "split_evenly",
    "wall_ms",
]
