"""Sequential against fused on one device: private outputs, the output check and interleaved timing.

What a sweep does with one set of sub-kernels (``sweep`` decides which sets):

* **Private outputs.** Every buffer a sub-kernel writes is replaced by a fresh one of the same
  size (``private_outputs``). Any set of pool operators is then independent, even two operators
  of one network where one reads what the other writes, or N copies of one operator (figure 9),
  and the networks' buffers, which the operators read, stay as the network run left them.
* **The output check** (``check_outputs``): the private outputs are filled with one sentinel, the
  sub-kernels run one after another, the outputs are read; filled with another sentinel, the
  fused kernel runs, the outputs are read. The fused kernel must write exactly the elements the
  sub-kernels wrote, each bit for bit or within 1e-6 relative to the largest value.
* **Interleaved timing** (``time_interleaved``): the sides (the sequential launches, and each
  fused variant) run in rounds, one run of each side per round, the order rotating from round to
  round so no side always goes first. Warm-up rounds are dropped, timed rounds kept. A run's
  device time is the span of its events (first start to last end, the gaps between the
  sequential launches included: they are what fusion saves), its busy time the sum of its
  kernels' own start-to-end times (the gaps left out: what is left is the device's use) and its
  host time the wall clock around the enqueue and ``queue.finish()``.
* **Paired ratios** (``side_ratios``): sequential over fused per round, on the span and on the
  busy time, each a ``measure.ratios.paired_ratio`` with its bootstrap interval over rounds. A
  span ratio above 1 with a busy ratio of 1 is saved launch gaps; a busy ratio above 1 is the
  device used better (the paper's claim). Progress is reported whenever a report is due
  (``Progress.due``), so a callback that raises stops the sweep within about a second.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.fusion.fuse import SubKernel
from devicelab.fusion.parse import parse_kernel
from devicelab.fusion.results import OutputCheck, SideTiming
from devicelab.fusion.run import ReadyLaunch, device_busy_ms, device_span_ms, enqueue_launches
from devicelab.measure.harness import Progress
from devicelab.measure.ratios import RatioEstimate, paired_ratio
from devicelab.measure.stats import summarize

RELATIVE_TOLERANCE = 1e-6
SENTINELS = (-12345.5, 98765.25)  # what private outputs hold before the sequential / fused run


class PrivateOutputs:
    """Sub-kernels whose written buffers are fresh ones of the same size (see the module
    docstring); ``release`` frees them."""

    def __init__(self, found: FoundDevice, subs: Sequence[SubKernel], queue: cl.CommandQueue) -> None:
        ctx = context_for(found)
        self.buffers: list[cl.Buffer] = []
        self.subs: list[SubKernel] = []
        try:
            for sub in subs:
                params = parse_kernel(sub.source, sub.options, sub.name).params
                args: list[Any] = []
                for param, value in zip(params, sub.args, strict=True):
                    if param.writes and isinstance(value, cl.Buffer):
                        fresh = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=value.size)
                        cl.enqueue_fill_buffer(queue, fresh, np.zeros(1, np.uint8), 0, value.size)
                        self.buffers.append(fresh)
                        value = fresh
                    args.append(value)
                self.subs.append(
                    SubKernel(
                        sub.name, sub.source, sub.options, sub.global_size, sub.local_size, tuple(args), sub.label
                    )
                )
            queue.finish()
        except BaseException:
            self.release()
            raise

    def release(self) -> None:
        """Free the private buffers."""
        for buf in self.buffers:
            buf.release()
        self.buffers.clear()


def compare_outputs(
    sequential: Sequence[np.ndarray], fused: Sequence[np.ndarray], sentinels: tuple[float, float] = SENTINELS
) -> OutputCheck:
    """Compare whole output buffers filled with ``sentinels[0]`` before the sequential run and
    ``sentinels[1]`` before the fused one."""
    bitwise, worst = True, 0.0
    for i, (seq, got) in enumerate(zip(sequential, fused, strict=True)):
        wrote_seq, wrote_fused = seq != seq.dtype.type(sentinels[0]), got != got.dtype.type(sentinels[1])
        if not wrote_seq.any():
            return OutputCheck(False, False, float("nan"), f"output {i}: the sub-kernels wrote nothing")
        if not np.array_equal(wrote_seq, wrote_fused):
            differ = int(np.count_nonzero(wrote_seq != wrote_fused))
            return OutputCheck(
                False, False, float("nan"), f"output {i}: {differ} elements written by one side and not the other"
            )
        want, have = seq[wrote_seq], got[wrote_seq]
        if np.array_equal(want.view(np.uint8), have.view(np.uint8)):
            continue
        bitwise = False
        want64, have64 = want.astype(np.float64), have.astype(np.float64)
        same_nan = np.isnan(want64) & np.isnan(have64)
        diff = np.where(same_nan, 0.0, np.abs(have64 - want64))
        scale = max(float(np.nanmax(np.abs(want64))) if want64.size else 0.0, 1e-30)
        err = float(np.max(diff)) / scale if not np.isnan(diff).any() else float("nan")
        worst = err if np.isnan(err) else max(worst, err)
        if not err <= RELATIVE_TOLERANCE:  # NaN fails too
            return OutputCheck(False, False, err, f"output {i}: differs by {err:.2e} relative")
    return OutputCheck(True, bitwise, worst, "")


def _fill(queue: cl.CommandQueue, buffers: Sequence[cl.Buffer], value: float, dtype: np.dtype[Any]) -> None:
    pattern = np.array([value], dtype=dtype)
    for buf in buffers:
        cl.enqueue_fill_buffer(queue, buf, pattern, 0, buf.size - buf.size % dtype.itemsize)


def _read(queue: cl.CommandQueue, buffers: Sequence[cl.Buffer], dtype: np.dtype[Any]) -> list[np.ndarray]:
    out = []
    for buf in buffers:
        host = np.empty(buf.size // dtype.itemsize, dtype)
        cl.enqueue_copy(queue, host, buf)
        out.append(host)
    queue.finish()
    return out


def check_outputs(
    queue: cl.CommandQueue,
    sequential: Sequence[ReadyLaunch],
    fused: ReadyLaunch,
    outputs: Sequence[cl.Buffer],
    dtype: np.dtype[Any],
) -> OutputCheck:
    """Run the sequential launches and the fused one on the same inputs and compare what they
    wrote into ``outputs`` (the private output buffers)."""
    _fill(queue, outputs, SENTINELS[0], dtype)
    enqueue_launches(queue, sequential)
    want = _read(queue, outputs, dtype)
    _fill(queue, outputs, SENTINELS[1], dtype)
    enqueue_launches(queue, [fused])
    got = _read(queue, outputs, dtype)
    return compare_outputs(want, got)


def _run_once(queue: cl.CommandQueue, launches: Sequence[ReadyLaunch]) -> tuple[float, float, float]:
    t0 = time.perf_counter_ns()
    events = enqueue_launches(queue, launches)
    queue.finish()
    wall = (time.perf_counter_ns() - t0) / 1e6
    return device_span_ms(events), wall, device_busy_ms(events)


def time_interleaved(
    queue: cl.CommandQueue,
    sides: Sequence[Sequence[ReadyLaunch]],
    warmup: int,
    runs: int,
    progress: Progress,
    at: tuple[float, float],
    label: str,
) -> list[SideTiming]:
    """``warmup`` dropped rounds, then ``runs`` kept rounds, each running every side once in an
    order that rotates; progress between the fractions ``at`` when a report is due."""
    if runs < 1:
        raise ValueError(f"at least one timed run is needed, not {runs}")
    samples: list[list[tuple[float, float, float]]] = [[] for _ in sides]
    total = warmup + runs
    for r in range(total):
        order = [(r + i) % len(sides) for i in range(len(sides))]
        for i in order:
            sample = _run_once(queue, sides[i])
            if r >= warmup:
                samples[i].append(sample)
        if progress.due():
            phase = "warm-up" if r < warmup else "timed run"
            done = r + 1 if r < warmup else r + 1 - warmup
            of = warmup if r < warmup else runs
            progress(at[0] + (at[1] - at[0]) * (r + 1) / total, f"{label}: {phase} {done}/{of}")
    out = []
    for side in samples:
        device = tuple(s[0] for s in side)
        wall = tuple(s[1] for s in side)
        busy = tuple(s[2] for s in side)
        out.append(SideTiming(summarize(device), summarize(wall), device, wall, busy))
    return out


def ratio_of(numerators: Sequence[float], denominators: Sequence[float]) -> RatioEstimate | None:
    """``paired_ratio`` over the rounds where both times are above 0 (below the clock's resolution a
    round says nothing); None when no round is left."""
    pairs = [(n, d) for n, d in zip(numerators, denominators, strict=True) if n > 0 and d > 0]
    if not pairs:
        return None
    return paired_ratio([n for n, _ in pairs], [d for _, d in pairs])


def side_ratios(sequential: SideTiming, fused: SideTiming) -> tuple[RatioEstimate | None, RatioEstimate | None]:
    """Sequential over fused per round, paired: on the device span, and on the kernels' busy time
    (None where a side has no busy samples)."""
    span = ratio_of(sequential.device_samples_ms, fused.device_samples_ms)
    has_busy = sequential.busy_samples_ms and len(sequential.busy_samples_ms) == len(fused.busy_samples_ms)
    busy = ratio_of(sequential.busy_samples_ms, fused.busy_samples_ms) if has_busy else None
    return span, busy


__all__ = [
    "RELATIVE_TOLERANCE",
    "SENTINELS",
    "OutputCheck",
    "PrivateOutputs",
    "SideTiming",
    "check_outputs",
    "compare_outputs",
    "ratio_of",
    "side_ratios",
    "time_interleaved",
]
