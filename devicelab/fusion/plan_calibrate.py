"""Calibrating the fusion planner's latency model (``plan_model``) with quick runs on the device.

* **Kernels alone.** Every kernel of the graphs runs alone, one after another on one in-order
  profiling queue, ``runs`` times. Each kernel's own time is the median of its events' durations;
  the launch cost the model saves per fused-away launch is the median gap between one kernel's
  end and the next one's start. ``base``, ``per_mflop`` and ``per_mb`` are fitted to these times
  (for kernels the planner has not timed; the timed ones keep their own time).
* **Fusion costs.** ``work_factor`` and ``padding_item`` are fitted to fused launches: the timings
  of sweep rows when a sweep is given and at least two of its rows carry them, otherwise a few
  *probes*: groups of the fuse-all schedule (which the comparison builds anyway), spread over
  their padding fraction, each timed interleaved with its kernels alone. A probe's sub-kernels'
  time alone is their events' durations summed, in the same rounds as the fused launch: the gaps
  are left out (their median moves a lot between runs on a shared machine), and so is the drift
  between the kernels' timing above and the probe's.

The model's ``calibration`` says which was done and how well each fit explains its points.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.fusion.plan import FusionPlan, PlanKernel
from devicelab.fusion.plan_load import FuserGate
from devicelab.fusion.plan_model import LatencyModel, fit_fusion_costs, fit_kernel_rates, fusion_costs_from_rows
from devicelab.fusion.run import ReadyLaunch, device_span_ms, enqueue_launches
from devicelab.measure.harness import Progress

PROBE_WARMUP = 2
PROBE_RUNS = 5
DEFAULT_PROBES = 6


@dataclass(frozen=True)
class KernelTimes:
    """Kernels timed alone: each one's median time and the median gap between launches (ms)."""

    kernel_ms: tuple[float, ...]
    gap_ms: float
    runs: int


def time_kernels_alone(queue: cl.CommandQueue, launches: Sequence[ReadyLaunch], runs: int) -> KernelTimes:
    """Run the launches one after another ``runs`` times and read their events."""
    durations: list[list[float]] = [[] for _ in launches]
    gaps: list[float] = []
    for _ in range(max(1, runs)):
        events = enqueue_launches(queue, launches)
        queue.finish()
        for i, e in enumerate(events):
            durations[i].append(max(0, e.profile.end - e.profile.start) / 1e6)
        gaps.extend(max(0, b.profile.start - a.profile.end) / 1e6 for a, b in zip(events, events[1:], strict=False))
    return KernelTimes(
        tuple(float(np.median(d)) for d in durations), float(np.median(gaps)) if gaps else 0.0, max(1, runs)
    )


@dataclass(frozen=True)
class Probe:
    """A fused launch timed to calibrate the model: its kernels, their time alone and its own."""

    kernels: tuple[int, ...]
    labels: tuple[str, ...]
    padding: int
    sequential_ms: float  # median span of its kernels launched alone (gaps included)
    work_ms: float  # median of their own times alone, summed
    fused_ms: float  # median time of the fused launch

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "kernels": list(self.kernels),
            "labels": list(self.labels),
            "padding": self.padding,
            "sequential_ms": self.sequential_ms,
            "work_ms": self.work_ms,
            "fused_ms": self.fused_ms,
        }


def pick_probes(fuse_all: FusionPlan, count: int) -> list[tuple[int, ...]]:
    """Up to ``count`` fused groups of a fuse-all schedule, spread over their padding fraction."""
    fused = sorted((s for s in fuse_all.steps if s.fused), key=lambda s: (s.prediction.padding_fraction, s.index))
    if count < 1 or not fused:
        return []
    picks = sorted({int(round(x)) for x in np.linspace(0, len(fused) - 1, min(count, len(fused)))})
    return [fused[i].kernels for i in picks]


def _durations_ms(events: Sequence[cl.Event]) -> float:
    """The events' own times summed (the gaps between them left out)."""
    return sum(max(0, e.profile.end - e.profile.start) for e in events) / 1e6


def run_probes(
    queue: cl.CommandQueue,
    gate: FuserGate,
    launch_of: Callable[[tuple[int, ...]], ReadyLaunch],
    kernels: Sequence[PlanKernel],
    groups: Sequence[tuple[int, ...]],
    progress: Progress,
    at: tuple[float, float],
) -> list[Probe]:
    """Time each group fused against its kernels alone, interleaved (``PROBE_WARMUP`` dropped
    rounds, ``PROBE_RUNS`` kept, the order alternating). ``launch_of`` gives the launch of a kernel
    alone or of a group fused. The kernels' time alone is their events' durations summed, so a
    probe compares work with work, measured in the same rounds."""
    out = []
    for n, group in enumerate(groups):
        sides = [[launch_of((i,)) for i in group], [launch_of(group)]]
        spans: list[float] = []
        alone: list[float] = []
        fused: list[float] = []
        for r in range(PROBE_WARMUP + PROBE_RUNS):
            for side in (0, 1) if r % 2 == 0 else (1, 0):
                events = enqueue_launches(queue, sides[side])
                queue.finish()
                if r < PROBE_WARMUP:
                    continue
                if side == 0:
                    spans.append(device_span_ms(events))
                    alone.append(_durations_ms(events))
                else:
                    fused.append(_durations_ms(events))
        out.append(
            Probe(
                group,
                tuple(kernels[i].label for i in group),
                gate.fused(group).padding,
                float(np.median(spans)),
                float(np.median(alone)),
                float(np.median(fused)),
            )
        )
        if progress.due():
            progress(at[0] + (at[1] - at[0]) * (n + 1) / len(groups), f"calibration probe {n + 1}/{len(groups)}")
    return out


def calibrate_model(
    kernels: Sequence[PlanKernel],
    times: KernelTimes,
    probes: Sequence[Probe] = (),
    rows: Sequence[Mapping[str, Any]] | None = None,
    round_to_wave: bool = True,
) -> LatencyModel:
    """The latency model from kernels timed alone and from sweep rows' timings (two or more) or
    else the probes (see the module docstring)."""
    rates = fit_kernel_rates([k.mflops for k in kernels], [k.mbytes for k in kernels], times.kernel_ms)
    base, per_mflop, per_mb = rates.coefficients
    notes = [
        f"kernel times: {len(kernels)} kernels timed alone, median of {times.runs} runs; launch gap "
        f"{times.gap_ms * 1000:.1f} us (median); the MFLOPs/MB fit for untimed kernels is off by "
        f"{rates.median_relative_error:.0%} (median)",
    ]
    timings = fusion_costs_from_rows(rows or [], times.gap_ms, round_to_wave)
    # (sub-kernels' time alone, how many, padding, fused time) of each fused launch
    launches = [(t.kernels_ms, t.size, t.padding_items, t.fused_ms) for t in timings]
    origin = f"{len(timings)} sweep rows"
    calibration = "device kernel times; fusion costs from sweep rows"
    if len(launches) < 2 and probes:
        launches = [(p.work_ms, len(p.kernels), p.padding, p.fused_ms) for p in probes]
        origin = f"{len(probes)} fused probes timed on the device"
        calibration = "device kernel times; fusion costs from device probes"
    if not launches:
        notes.append("no fused launch to calibrate the fusion costs: work factor 1, no padding cost")
        return LatencyModel(
            launch_ms=times.gap_ms,
            base_ms=base,
            ms_per_mflop=per_mflop,
            ms_per_mb=per_mb,
            calibration="device kernel times; fusion costs defaulted",
            notes=tuple(notes),
        )
    costs = fit_fusion_costs(
        [max(alone - n * base, 0.0) for alone, n, _, _ in launches],
        [pad for _, _, pad, _ in launches],
        [max(fused - base, 0.0) for _, _, _, fused in launches],
    )
    work_factor, padding_item = costs.coefficients
    notes.append(
        f"fusion costs from {origin}: work factor {work_factor:.3g}, {padding_item * 1e6:.3g} ns per padding "
        f"work-item; off by {costs.median_relative_error:.0%} (median)"
    )
    return LatencyModel(
        launch_ms=times.gap_ms,
        work_factor=work_factor,
        padding_item_ms=padding_item,
        base_ms=base,
        ms_per_mflop=per_mflop,
        ms_per_mb=per_mb,
        calibration=calibration,
        notes=tuple(notes),
    )


__all__ = ["KernelTimes", "Probe", "calibrate_model", "pick_probes", "run_probes", "time_kernels_alone"]
