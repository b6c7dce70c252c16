"""The online policies: an arrival trace replayed in real time on the host clock against a server.

Common to every policy:

* the replay starts at ``t0`` (``time.perf_counter``); request i becomes pending at ``t0 +
  arrival_s`` and nothing before that knows it exists;
* a tenant has at most one request in service and its requests are served in arrival order (a
  tenant is one model instance: a request uses the tenant's buffers);
* a request's **start** is when the policy hands it to the device (host clock), its **finish**
  when its result is on the host; latency = finish - arrival, and it **met** its target when the
  latency is at most the target.

The policies:

* ``time_only``: one request at a time, first come first served over all tenants, each on its
  tenant's own queue (and, for SGEMM, its own context) and run to completion before the next.
* ``space_only``: every tenant has a host thread that submits each of its requests on the
  tenant's own queue when it arrives (after the tenant's previous one is done) and waits for it;
  the device decides how the tenants' kernels overlap.
* ``space_time``: one dispatcher collects the pending requests and serves a batch of them as
  super-kernels, one batch at a time. **The launch rule**, evaluated whenever a request arrives,
  a batch finishes or a timer set by the rule fires:

  1. the *candidate batch* is the oldest pending request of every tenant that has one (one per
     tenant: at most one request in service per tenant), oldest first, at most ``max_batch``;
  2. it is launched now if it is **full** (``max_batch`` requests; by default R, every tenant);
  3. or if waiting longer would risk its tightest deadline (**deadline**): ``now >=
     min(deadline) - (est(b) * (1 + margin) + guard_ms)``, with ``est(b)`` the estimated time to
     serve a batch of its size b (``ServiceEstimate``), ``margin`` and ``guard_ms`` the allowance
     for the estimate's error and the host's wake-up delay;
  4. or if its oldest request has waited ``window_ms`` (**window**);
  5. otherwise the dispatcher sleeps until the next arrival or the earlier of the times at which
     3 or 4 would fire. While a batch runs, arrivals wait; when it finishes the rule is applied
     again at once (a window that expired meanwhile launches immediately).

  A request that joins a candidate batch can only move its launch earlier (a larger b or a
  tighter deadline brings rule 3 forward). With ``window_ms = 0`` the dispatcher launches
  whatever is pending whenever the device is free (batches grow only with the backlog).
  ``est(b)`` starts from a calibration before the replay (median host wall time of batches of
  1, 2, 4, ... up to ``max_batch`` tenants, linear in between) and is updated after every batch
  by an exponential moving average of that size's observed time.
* ``space_time_native`` (networks only): the same dispatcher and rule, its batches run every
  step as the backend's own kernel with a tenant axis (``network_strategies``'
  ``space_time_native``), so a request's outputs are the bits of its tenant's exclusive run.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from devicelab.tenancy.arrivals import ArrivalTrace, Request
from devicelab.tenancy.online_servers import RequestServer, Served

POLICIES: tuple[str, ...] = ("time_only", "space_only", "space_time", "space_time_native")
NETWORK_ONLY_POLICIES = ("space_time_native",)
LEAD_S = 0.05  # the replay's clock starts this long after the policy is ready (threads started)
JOIN_POLL_S = 0.25  # how often the main thread reports progress while the space-only threads run
CALIBRATION_REPEATS = 5
ESTIMATE_SMOOTHING = 0.2  # weight of a new observation in a batch size's moving average


@dataclass
class RequestRecord:
    """What happened to one request (times in s after the replay's ``t0``, host clock)."""

    request: Request
    start_s: float | None = None
    finish_s: float | None = None
    device_start_ns: int | None = None  # the kernels that served it, on the device clock
    device_end_ns: int | None = None
    batch: int | None = None  # space-time: the batch that served it
    batch_size: int = 1
    correct: bool | None = None  # its output against the tenant's exclusive run
    relative_error: float = 0.0

    @property
    def latency_ms(self) -> float | None:
        """Finish minus arrival (None: not served)."""
        return None if self.finish_s is None else (self.finish_s - self.request.arrival_s) * 1e3

    @property
    def met(self) -> bool:
        """Served within its target."""
        latency = self.latency_ms
        return latency is not None and latency <= self.request.target_ms

    def as_dict(self, device_t0_ns: int | None) -> dict[str, Any]:
        """Plain data (ms after ``t0``; device times after the run's first kernel start)."""
        r = self.request
        on_device = self.device_start_ns is not None and self.device_end_ns is not None and device_t0_ns is not None
        return {
            "id": r.id,
            "tenant": r.tenant,
            "arrival_ms": r.arrival_s * 1e3,
            "target_ms": r.target_ms,
            "start_ms": None if self.start_s is None else self.start_s * 1e3,
            "finish_ms": None if self.finish_s is None else self.finish_s * 1e3,
            "latency_ms": self.latency_ms,
            "met": self.met,
            "device_start_ms": (self.device_start_ns - device_t0_ns) / 1e6 if on_device else None,  # type: ignore[operator]
            "device_ms": (self.device_end_ns - self.device_start_ns) / 1e6 if on_device else None,  # type: ignore[operator]
            "batch": self.batch,
            "batch_size": self.batch_size,
            "correct": self.correct,
            "relative_error": self.relative_error,
        }


@dataclass(frozen=True)
class BatchRecord:
    """One space-time launch: whom it served, why it was launched, and when."""

    id: int
    requests: tuple[int, ...]
    tenants: tuple[int, ...]
    reason: str  # full, deadline or window
    start_s: float
    finish_s: float
    estimate_ms: float  # est(b) when it was launched

    def as_dict(self) -> dict[str, Any]:
        """Plain data (ms after the replay's ``t0``)."""
        return {
            "id": self.id,
            "requests": list(self.requests),
            "tenants": list(self.tenants),
            "size": len(self.requests),
            "reason": self.reason,
            "start_ms": self.start_s * 1e3,
            "finish_ms": self.finish_s * 1e3,
            "wall_ms": (self.finish_s - self.start_s) * 1e3,
            "estimate_ms": self.estimate_ms,
        }


class ServiceEstimate:
    """``est(b)``: host wall ms to serve a batch of b (see the module docstring)."""

    def __init__(self, measured: Mapping[int, float], max_batch: int, smoothing: float = ESTIMATE_SMOOTHING) -> None:
        if not measured:
            raise ValueError("a service estimate needs at least one measured batch size")
        sizes = sorted(measured)
        self.measured = {b: float(measured[b]) for b in sizes}
        self.smoothing = smoothing
        grid = np.arange(1, max_batch + 1, dtype=np.float64)
        self.ms = [0.0, *np.interp(grid, sizes, [measured[b] for b in sizes]).tolist()]  # index b

    def __call__(self, batch: int) -> float:
        return self.ms[min(max(batch, 1), len(self.ms) - 1)]

    def observe(self, batch: int, ms: float) -> None:
        """Move size ``batch``'s estimate towards an observed time."""
        if 1 <= batch < len(self.ms):
            self.ms[batch] += self.smoothing * (ms - self.ms[batch])

    def as_dict(self) -> dict[str, Any]:
        """The calibration and the estimates at the end."""
        return {"calibrated_ms": {str(b): ms for b, ms in self.measured.items()}, "final_ms": self.ms[1:]}


def calibration_sizes(max_batch: int) -> list[int]:
    """1, 2, 4, ... below ``max_batch``, and ``max_batch``."""
    sizes = {max_batch}
    b = 1
    while b < max_batch:
        sizes.add(b)
        b *= 2
    return sorted(sizes)


def calibrate(server: RequestServer, max_batch: int, repeats: int = CALIBRATION_REPEATS) -> dict[int, float]:
    """Median host wall ms of serving tenants ``0 .. b-1`` together, per calibration size b
    (after one full batch that is not timed)."""
    server.serve(list(range(max_batch)))
    out = {}
    for b in calibration_sizes(max_batch):
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter_ns()
            server.serve(list(range(b)))
            times.append((time.perf_counter_ns() - t0) / 1e6)
        out[b] = float(np.median(times))
    return out


@dataclass(frozen=True)
class LaunchRule:
    """Space-time's rule (module docstring, steps 2-4)."""

    window_ms: float
    max_batch: int
    margin: float = 0.25
    guard_ms: float = 1.0

    def validate(self) -> None:
        """``ValueError`` naming what is wrong."""
        if not (math.isfinite(self.window_ms) and self.window_ms >= 0):
            raise ValueError(f"the window must be >= 0 ms, not {self.window_ms!r}")
        if self.max_batch < 1:
            raise ValueError(f"the largest batch must be at least 1, not {self.max_batch}")
        if self.margin < 0 or self.guard_ms < 0:
            raise ValueError("the deadline margin and guard must be >= 0")

    def decide(self, batch: Sequence[Request], now_s: float, estimate: ServiceEstimate) -> tuple[str | None, float]:
        """``(reason, fire_s)``: the reason to launch ``batch`` now (``full``, ``deadline``,
        ``window``), or None and the time at which rule 3 or 4 will fire."""
        if len(batch) >= self.max_batch:
            return "full", now_s
        window_at = batch[0].arrival_s + self.window_ms / 1e3
        need_s = (estimate(len(batch)) * (1 + self.margin) + self.guard_ms) / 1e3
        deadline_at = min(r.deadline_s for r in batch) - need_s
        fire = min(window_at, deadline_at)
        if now_s >= fire:
            return ("deadline" if deadline_at <= window_at else "window"), fire
        return None, fire

    def as_dict(self) -> dict[str, Any]:
        """Plain data."""
        return {
            "window_ms": self.window_ms,
            "max_batch": self.max_batch,
            "margin": self.margin,
            "guard_ms": self.guard_ms,
        }


class ReplayClock:
    """The host clock of a replay: seconds since ``t0``, and waits that a stop event cuts short."""

    def __init__(self, stop: threading.Event, lead_s: float = LEAD_S) -> None:
        self.stop = stop
        self.t0 = time.perf_counter() + lead_s

    def now_s(self) -> float:
        """Seconds since ``t0`` (negative before it)."""
        return time.perf_counter() - self.t0

    def wait_until(self, t_s: float) -> bool:
        """Sleep until ``t_s`` (s after ``t0``); False when the replay was stopped."""
        while not self.stop.is_set():
            delay = t_s - self.now_s()
            if delay <= 0:
                return True
            self.stop.wait(delay)  # may wake a little early: look at the clock again
        return False


CheckFn = Callable[[RequestRecord, np.ndarray], None]
TickFn = Callable[[int], None]  # called with the number of requests done; may raise to stop


class ReplayStopped(Exception):
    """The replay was stopped before every request was served."""


@dataclass
class Replay:
    """One policy's replay of a trace against its server; the records fill in as it runs."""

    trace: ArrivalTrace
    server: RequestServer
    check: CheckFn
    tick: TickFn = lambda done: None
    records: list[RequestRecord] = field(init=False)
    batches: list[BatchRecord] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.records = [RequestRecord(r) for r in self.trace.requests]

    def _finish(self, requests: Sequence[Request], got: Served, start_s: float, finish_s: float) -> None:
        for r, out in zip(requests, got.outputs, strict=True):
            rec = self.records[r.id]
            rec.start_s, rec.finish_s = start_s, finish_s
            rec.device_start_ns, rec.device_end_ns = got.device_start_ns, got.device_end_ns
            rec.batch_size = len(requests)
            self.check(rec, out)

    def time_only(self) -> None:
        """First come first served, one request at a time (module docstring)."""
        clock = ReplayClock(self.stop)
        for done, r in enumerate(self.trace.requests):
            if not clock.wait_until(r.arrival_s):
                raise ReplayStopped("stopped")
            start = clock.now_s()
            got = self.server.serve([r.tenant])
            self._finish([r], got, start, clock.now_s())
            self.tick(done + 1)

    def space_only(self) -> None:
        """One submitting thread per tenant (module docstring)."""
        errors: list[BaseException] = []

        def tenant_loop(requests: list[Request]) -> None:
            try:
                for r in requests:
                    if not clock.wait_until(r.arrival_s):
                        return
                    start = clock.now_s()
                    got = self.server.serve([r.tenant])
                    self._finish([r], got, start, clock.now_s())
            except BaseException as e:  # re-raised by the main thread
                errors.append(e)
                self.stop.set()

        clock = ReplayClock(self.stop)
        threads = [
            threading.Thread(
                target=tenant_loop, args=(self.trace.of_tenant(t),), name=f"online-tenant-{t}", daemon=True
            )
            for t in range(self.trace.tenants)
        ]
        for th in threads:
            th.start()
        try:
            for th in threads:
                while th.is_alive():
                    th.join(JOIN_POLL_S)
                    self.tick(sum(rec.finish_s is not None for rec in self.records))
        except BaseException:  # the progress callback stopped the replay: let the threads go first
            self.stop.set()
            for th in threads:
                th.join()
            raise
        if errors:
            raise errors[0]
        if not self._all_done():
            raise ReplayStopped("stopped")

    def _all_done(self) -> bool:
        return all(rec.finish_s is not None for rec in self.records)

    def space_time(self, rule: LaunchRule, estimate: ServiceEstimate) -> None:
        """The batching dispatcher (module docstring, the launch rule)."""
        requests = self.trace.requests
        n = len(requests)
        pending: list[deque[Request]] = [deque() for _ in range(self.trace.tenants)]
        arrived = done = 0
        clock = ReplayClock(self.stop)
        while done < n:
            now = clock.now_s()
            while arrived < n and requests[arrived].arrival_s <= now:
                pending[requests[arrived].tenant].append(requests[arrived])
                arrived += 1
            next_arrival = requests[arrived].arrival_s if arrived < n else math.inf
            heads = sorted((q[0] for q in pending if q), key=lambda r: r.id)[: rule.max_batch]
            if not heads:
                if not clock.wait_until(next_arrival):
                    raise ReplayStopped("stopped")
                continue
            reason, fire = rule.decide(heads, now, estimate)
            if reason is None:
                if not clock.wait_until(min(fire, next_arrival)):
                    raise ReplayStopped("stopped")
                continue
            for r in heads:
                pending[r.tenant].popleft()
            est = estimate(len(heads))
            start = clock.now_s()
            got = self.server.serve([r.tenant for r in heads])
            finish = clock.now_s()
            estimate.observe(len(heads), (finish - start) * 1e3)
            batch = BatchRecord(
                len(self.batches),
                tuple(r.id for r in heads),
                tuple(r.tenant for r in heads),
                reason,
                start,
                finish,
                est,
            )
            self.batches.append(batch)
            for r in heads:
                self.records[r.id].batch = batch.id
            self._finish(heads, got, start, finish)
            done += len(heads)
            self.tick(done)


__all__ = [
    "NETWORK_ONLY_POLICIES",
    "POLICIES",
    "BatchRecord",
    "LaunchRule",
    "Replay",
    "ReplayClock",
    "ReplayStopped",
    "RequestRecord",
    "ServiceEstimate",
    "calibrate",
    "calibration_sizes",
]
