"""Executing the fusion planner's schedule against running every kernel alone and fusing all ready
kernels, on one OpenCL device: outputs checked, times interleaved (``compare_plan``).

Three strategies run the same kernels of the same loaded graphs (``plan_load``):

* ``sequential``: every kernel launched alone in the interleaved topological order (``plan``),
  one after another on one in-order profiling queue;
* ``plan``: the planner's schedule (``plan.plan_fusion``), with its benefits from the sweep rows
  given (``sweep_rows``) where they cover a group's kinds and from the latency model elsewhere,
  the model calibrated on the device first (``plan_calibrate``);
* ``fuse_all``: every ready kernel fused at every step, as far as the fuser accepts
  (``plan.plan_fuse_all``).

**Output check.** Every buffer a kernel writes (its tensor's bytes) is filled with one sentinel
and the sequential strategy runs; the buffers are read. They are filled with another sentinel,
the strategy under test runs, and they are read again (``compare.compare_outputs``): it must write
exactly the same elements, each bit for bit or within 1e-6 relative. The check is reported for
each graph's final outputs and for every written buffer.

**Timing.** The three strategies run in rounds, one run each per round, the order rotating;
``warmup`` rounds are dropped and ``runs`` kept (``compare.time_interleaved``). A run's device
time is its events' span (first start to last end, gaps included), its host time the wall clock
around the enqueue and ``queue.finish()``, its busy time the sum of its kernels' own times. Per
kept round, the time of ``plan`` and of ``fuse_all`` relative to ``sequential`` of the same round
is a ratio: its samples, statistics (``measure.stats``) and, the other way round, the paired span
and busy ratios (sequential time / strategy time, > 1: faster; ``measure.ratios.paired_ratio``
with its bootstrap interval over rounds).

``PlanComparison.as_dict()`` is plain JSON data with a stable layout (``version`` 1); see its
docstring. Progress goes to a callback (fraction, message) that may raise to stop; the graphs'
buffers are freed on the way out, whatever happens.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.fusion.compare import SENTINELS, compare_outputs, side_ratios, time_interleaved
from devicelab.fusion.plan import (
    DEFAULT_MAX_GROUP,
    FUSE_ALL,
    PLAN,
    SEQUENTIAL,
    STRATEGIES,
    FusionPlan,
    PlanKernel,
    plan_fuse_all,
    plan_fusion,
    plan_sequential,
)
from devicelab.fusion.plan_calibrate import (
    DEFAULT_PROBES,
    Probe,
    calibrate_model,
    pick_probes,
    run_probes,
    time_kernels_alone,
)
from devicelab.fusion.plan_load import FuserGate, GraphInfo, LoadedGraphs, WrittenBuffer, load_graphs
from devicelab.fusion.plan_model import LatencyModel, MeasuredTable, fusion_costs_from_rows, measured_table
from devicelab.fusion.results import OutputCheck, PlanEnvironment, SideTiming
from devicelab.fusion.run import ReadyLaunch, enqueue_launches, ready_fused, ready_subkernel
from devicelab.graph.ir import Graph
from devicelab.measure.harness import Progress, ReportFn
from devicelab.measure.ratios import RatioEstimate
from devicelab.measure.stats import SampleStats, summarize

VERSION = 1  # of PlanComparison.as_dict()'s layout
CALIBRATION_RUNS = 3
NOTE_LIMIT = 5  # failing buffers named in a check's note


def _finite(x: float | None) -> float | None:
    """A float for JSON: NaN and infinities become None (PostgreSQL's JSON has neither)."""
    return x if x is None or math.isfinite(x) else None


@dataclass(frozen=True)
class StrategyCheck:
    """A strategy's outputs against the sequential run's: each graph's outputs, every written buffer."""

    outputs: OutputCheck
    buffers: OutputCheck
    failed: tuple[str, ...]  # the buffers (``graph/tensor``) that differ

    @property
    def correct(self) -> bool:
        """Every written buffer matches."""
        return self.buffers.correct and self.outputs.correct

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        out: dict[str, Any] = {"correct": self.correct, "failed": list(self.failed)}
        for name, check in (("outputs", self.outputs), ("buffers", self.buffers)):
            d = check.as_dict()
            d["max_relative_error"] = _finite(d["max_relative_error"])
            out[name] = d
        return out


@dataclass(frozen=True)
class RatioSummary:
    """A strategy against sequential, round by round (see the module docstring)."""

    time_ratio: SampleStats  # of the per-round strategy / sequential device time
    time_ratio_samples: tuple[float, ...]
    throughput: float  # the span ratio's point estimate (``ratio.ratio``)
    ratio: RatioEstimate  # sequential / strategy device span, paired over rounds, with its interval
    busy_ratio: RatioEstimate | None  # the same on the kernels' own times (None: no busy samples)
    wall_time_ratio: float  # median over rounds of strategy / sequential host time

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "time_ratio": self.time_ratio.as_dict(),
            "time_ratio_samples": list(self.time_ratio_samples),
            "throughput": self.throughput,
            "ratio": self.ratio.as_dict(),
            "busy_ratio": None if self.busy_ratio is None else self.busy_ratio.as_dict(),
            "wall_time_ratio": self.wall_time_ratio,
        }


def summarize_ratio(sequential: SideTiming, other: SideTiming) -> RatioSummary:
    """Per-round ratios of one strategy's times to the sequential ones of the same rounds, and
    the paired span and busy ratios (sequential over strategy) with their intervals."""
    pairs = [
        (s, o) for s, o in zip(sequential.device_samples_ms, other.device_samples_ms, strict=True) if s > 0 and o > 0
    ]
    span, busy = side_ratios(sequential, other)
    if not pairs or span is None:
        raise ValueError("no round with both device times above the clock's resolution")
    ratios = [o / s for s, o in pairs]
    walls = [o / s for s, o in zip(sequential.wall_samples_ms, other.wall_samples_ms, strict=True) if s > 0]
    return RatioSummary(
        summarize(ratios), tuple(ratios), span.ratio, span, busy, float(np.median(walls)) if walls else math.nan
    )


@dataclass(frozen=True)
class PlanComparison:
    """The three strategies on the same graphs: plans, samples, ratios, output checks, the model."""

    device: str
    platform: str
    driver_version: str
    wave_size: int
    precision: str
    round_to_wave: bool
    max_group: int
    warmup: int
    runs: int
    graphs: tuple[GraphInfo, ...]
    kernels: tuple[PlanKernel, ...]
    plans: dict[str, FusionPlan]  # by strategy
    timings: dict[str, SideTiming]  # by strategy
    ratios: dict[str, RatioSummary]  # PLAN and FUSE_ALL against SEQUENTIAL
    checks: dict[str, StrategyCheck]  # PLAN and FUSE_ALL against SEQUENTIAL
    model: LatencyModel
    measured: MeasuredTable
    probes: tuple[Probe, ...]
    refusals: dict[str, int]  # why the fuser refused groups the schedules asked for, counted
    notes: tuple[str, ...]
    elapsed_s: float
    environment: PlanEnvironment = field(default_factory=lambda: PlanEnvironment())
    layouts: dict[str, tuple[str | None, ...]] = field(default_factory=dict)  # per strategy and step
    min_throughput: float = 1.0  # the predicted throughput a group had to beat to be fused in the plan

    @property
    def correct(self) -> bool:
        """Both fused strategies computed what the sequential run did."""
        return all(c.correct for c in self.checks.values())

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON data, layout ``version`` 1:

        * ``device``, ``platform``, ``driver_version``, ``wave_size``, ``precision``,
          ``round_to_wave``, ``max_group``, ``min_throughput``, ``warmup``, ``runs``;
        * ``models`` (each graph's model name), ``graphs`` (``graph``, ``model``, ``kernels``,
          ``input_shapes``);
        * ``strategies``: ``["sequential", "plan", "fuse_all"]``; ``launches``: per strategy;
        * ``kernels``: per kernel in interleaved order, ``index``, ``graph``, ``model``, ``name``,
          ``kernel``, ``kind``, ``mflops``, ``mbytes``, sizes, ``after`` (indices it follows),
          ``measured_ms`` (alone) and ``group``: per strategy, the index of its step;
        * ``plans``: per strategy, its steps (``kernels`` by index, ``labels``, ``kinds``,
          ``fused``, ``ready``, ``predicted_sequential_ms``, ``predicted_ms``,
          ``predicted_throughput``, ``source``: "measured", "model" or "alone", ``padding``,
          ``padding_fraction``, ``layout``: the fused kernel's, "paper" or "packed", None
          alone), ``launches``, ``fused_launches``, ``predicted_ms``, ``sources``;
        * ``timing``: per strategy, ``device`` and ``wall`` statistics (ms) and raw samples;
        * ``ratios``: for ``plan`` and ``fuse_all``, ``time_ratio`` (stats of the per-round
          strategy / sequential device time) with its samples, ``throughput`` (median of
          sequential / strategy: ``ratio.ratio``), ``ratio`` and ``busy_ratio`` (paired estimates
          with their intervals, ``measure.ratios``), ``wall_time_ratio``;
        * ``checks``: for ``plan`` and ``fuse_all``, ``correct``, ``outputs`` and ``buffers``
          (each ``correct``, ``bitwise``, ``max_relative_error``, ``note``), ``failed``;
          ``correct``: both;
        * ``benefit_sources``: per strategy, fused launches predicted from ``measured`` rows and
          by the ``model``; ``predicted_ms``: per strategy;
        * ``model`` (its constants, ``calibration`` and ``notes``), ``measured`` (the table used:
          ``kinds``, ``throughput``, ``rows``, ``experiments``), ``probes``, ``refusals``,
          ``notes``, ``elapsed_s``, ``environment``.

        Non-finite numbers are None."""
        groups = {s: p.step_of() for s, p in self.plans.items()}
        kernels = []
        for k in self.kernels:
            d = k.as_dict()
            d["group"] = {s: groups[s].get(k.index) for s in STRATEGIES if s in groups}
            kernels.append(d)
        plans = {}
        for s, p in self.plans.items():
            d = p.as_dict()
            layouts = self.layouts.get(s, ())
            for step in d["steps"]:
                step["predicted_throughput"] = _finite(step["predicted_throughput"])
                step["layout"] = layouts[step["index"]] if step["index"] < len(layouts) else None
            plans[s] = d
        ratios = {}
        for s, r in self.ratios.items():
            d = r.as_dict()
            d["wall_time_ratio"] = _finite(d["wall_time_ratio"])
            ratios[s] = d
        return {
            "version": VERSION,
            "device": self.device,
            "platform": self.platform,
            "driver_version": self.driver_version,
            "wave_size": self.wave_size,
            "precision": self.precision,
            "round_to_wave": self.round_to_wave,
            "max_group": self.max_group,
            "min_throughput": self.min_throughput,
            "warmup": self.warmup,
            "runs": self.runs,
            "models": [g.model for g in self.graphs],
            "graphs": [g.as_dict() for g in self.graphs],
            "strategies": list(STRATEGIES),
            "launches": {s: p.launches for s, p in self.plans.items()},
            "kernels": kernels,
            "plans": plans,
            "timing": {s: t.as_dict() for s, t in self.timings.items()},
            "ratios": ratios,
            "checks": {s: c.as_dict() for s, c in self.checks.items()},
            "correct": self.correct,
            "benefit_sources": {s: p.sources for s, p in self.plans.items()},
            "predicted_ms": {s: p.predicted_ms for s, p in self.plans.items()},
            "model": self.model.as_dict(),
            "measured": self.measured.as_dict(),
            "probes": [p.as_dict() for p in self.probes],
            "refusals": dict(self.refusals),
            "notes": list(self.notes),
            "elapsed_s": self.elapsed_s,
            "environment": dict(self.environment),
        }


# ---------------------------------------------------------------------------------------------
# Launches and the output check


class Launches:
    """Ready launches of the schedules' steps, one per kernel alone and one per fused group."""

    def __init__(self, found: FoundDevice, loaded: LoadedGraphs, gate: FuserGate) -> None:
        self.found = found
        self.loaded = loaded
        self.gate = gate
        self._ready: dict[tuple[int, ...], ReadyLaunch] = {}
        self.built = 0  # fused programs this comparison built (not from the cache)

    def of(self, group: tuple[int, ...]) -> ReadyLaunch:
        """The launch of one step."""
        hit = self._ready.get(group)
        if hit is None:
            if len(group) == 1:
                hit = ready_subkernel(self.found, self.loaded.subs[group[0]])
            else:
                hit = ready_fused(self.found, self.gate.fused(group))
                self.built += hit.built_now
            self._ready[group] = hit
        return hit

    def for_plan(self, plan: FusionPlan, on_step: Callable[[int], None] | None = None) -> list[ReadyLaunch]:
        """Every step's launch, in order."""
        out = []
        for s in plan.steps:
            out.append(self.of(s.kernels))
            if on_step is not None:
                on_step(s.index)
        return out


def _fill(queue: cl.CommandQueue, written: Sequence[WrittenBuffer], value: float, dtype: np.dtype[Any]) -> None:
    pattern = np.array([value], dtype=dtype)
    for w in written:
        cl.enqueue_fill_buffer(queue, w.buffer, pattern, 0, w.nbytes)
    queue.finish()


def _read(queue: cl.CommandQueue, written: Sequence[WrittenBuffer], dtype: np.dtype[Any]) -> list[np.ndarray]:
    out = []
    for w in written:
        host = np.empty(w.nbytes // dtype.itemsize, dtype)
        cl.enqueue_copy(queue, host, w.buffer, is_blocking=False)
        out.append(host)
    queue.finish()
    return out


def combine_checks(checks: Sequence[OutputCheck], labels: Sequence[str]) -> tuple[OutputCheck, tuple[str, ...]]:
    """One check for many buffers: correct and bitwise when each is, the worst error, and a note
    naming the first few that fail."""
    failed = [(label, c) for label, c in zip(labels, checks, strict=True) if not c.correct]
    errors = [c.max_relative_error for c in checks]
    note = "; ".join(f"{label}: {c.note.split(': ', 1)[-1]}" for label, c in failed[:NOTE_LIMIT])
    if len(failed) > NOTE_LIMIT:
        note += f"; and {len(failed) - NOTE_LIMIT} more"
    combined = OutputCheck(
        correct=not failed,
        bitwise=all(c.bitwise for c in checks),
        max_relative_error=math.nan if any(math.isnan(e) for e in errors) else max(errors, default=0.0),
        note=note,
    )
    return combined, tuple(label for label, _ in failed)


def check_strategy(
    queue: cl.CommandQueue,
    reference: Sequence[ReadyLaunch],
    launches: Sequence[ReadyLaunch],
    written: Sequence[WrittenBuffer],
    dtype: np.dtype[Any],
) -> StrategyCheck:
    """Run the reference and the strategy from sentinel-filled buffers and compare every written
    buffer (see the module docstring)."""
    _fill(queue, written, SENTINELS[0], dtype)
    enqueue_launches(queue, reference)
    want = _read(queue, written, dtype)
    _fill(queue, written, SENTINELS[1], dtype)
    enqueue_launches(queue, launches)
    got = _read(queue, written, dtype)
    each = [compare_outputs([w], [g]) for w, g in zip(want, got, strict=True)]
    labels = [w.label for w in written]
    buffers, failed = combine_checks(each, labels)
    outs = [i for i, w in enumerate(written) if w.is_output]
    outputs, _ = combine_checks([each[i] for i in outs], [labels[i] for i in outs])
    return StrategyCheck(outputs, buffers, failed)


# ---------------------------------------------------------------------------------------------
# The comparison


def _calibrated(
    queue: cl.CommandQueue,
    loaded: LoadedGraphs,
    gate: FuserGate,
    launches: Launches,
    table: MeasuredTable,
    rows: Sequence[Mapping[str, Any]] | None,
    round_to_wave: bool,
    probes: int,
    calibration_runs: int,
    report: Progress,
) -> tuple[list[PlanKernel], LatencyModel, list[Probe]]:
    """The kernels with their times alone, and the latency model calibrated on the device: fusion
    costs from the sweep rows' timings, or else from probes of the fuse-all groups."""
    alone = [launches.of((k.index,)) for k in loaded.kernels]
    report(0.15, f"timing {len(alone)} kernels alone")
    times = time_kernels_alone(queue, alone, calibration_runs)
    kernels = [replace(k, measured_ms=ms) for k, ms in zip(loaded.kernels, times.kernel_ms, strict=True)]
    timed: list[Probe] = []
    if len(fusion_costs_from_rows(rows or [], times.gap_ms, round_to_wave)) < 2:
        report(0.2, "calibrating the latency model with fused probes")
        draft = LatencyModel(launch_ms=times.gap_ms)  # the fuse-all groups do not depend on the model
        fuse_all = plan_fuse_all(
            kernels,
            draft,
            wave_size=gate.wave_size,
            measured=table,
            round_to_wave=round_to_wave,
            accept=gate,
            padding_of=gate.padding,
        )
        timed = run_probes(queue, gate, launches.of, kernels, pick_probes(fuse_all, probes), report, (0.2, 0.35))
    return kernels, calibrate_model(kernels, times, timed, rows, round_to_wave), timed


def compare_plan(
    found: FoundDevice,
    graphs: Sequence[Graph],
    *,
    sweep_rows: Iterable[Mapping[str, Any]] | Mapping[Any, float] | None = None,
    max_group: int = DEFAULT_MAX_GROUP,
    warmup: int = 5,
    runs: int = 30,
    round_to_wave: bool = True,
    progress: ReportFn | None = None,
    precision: str = "fp32",
    probes: int = DEFAULT_PROBES,
    calibration_runs: int = CALIBRATION_RUNS,
    min_throughput: float = 1.0,
) -> PlanComparison:
    """Plan fusion for graphs run together (or one graph's branches) on one device, then check and
    time the sequential run, the plan and fuse-all (see the module docstring). ``sweep_rows``:
    measured throughputs, as sweep rows (``FusionRow.as_dict()``) or ``{kinds: throughput}``;
    ``min_throughput``: the predicted throughput a group must beat to be fused in the plan."""
    if runs < 1 or warmup < 0 or max_group < 1 or min_throughput < 1.0:
        raise ValueError(
            f"need runs >= 1, warmup >= 0, max_group >= 1 and min_throughput >= 1, not {runs}, {warmup}, "
            f"{max_group}, {min_throughput}"
        )
    t0 = time.monotonic()
    report = Progress(progress)
    wave = found.limits.wave_size
    rows = None if sweep_rows is None or isinstance(sweep_rows, Mapping) else list(sweep_rows)
    table = measured_table(rows if rows is not None else sweep_rows, round_to_wave)
    loaded = load_graphs(found, graphs, precision, report, (0.0, 0.15))
    queue = cl.CommandQueue(context_for(found), found.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    try:
        gate = FuserGate(found, loaded.subs, wave, round_to_wave)
        launches = Launches(found, loaded, gate)
        kernels, model, timed = _calibrated(
            queue, loaded, gate, launches, table, rows, round_to_wave, probes, calibration_runs, report
        )
        common: dict[str, Any] = {
            "wave_size": wave,
            "measured": table,
            "round_to_wave": round_to_wave,
            "padding_of": gate.padding,
        }
        plans = {
            SEQUENTIAL: plan_sequential(kernels, model, **common),
            PLAN: plan_fusion(
                kernels, model, max_group=max_group, accept=gate, min_throughput=min_throughput, **common
            ),
            FUSE_ALL: plan_fuse_all(kernels, model, accept=gate, **common),
        }
        report(0.35, f"the plan fuses {plans[PLAN].fused_launches} launches; building the fused kernels")
        total_steps = sum(p.launches for p in plans.values())
        done = 0

        def built_one(_: int) -> None:
            nonlocal done
            done += 1
            if report.due():
                report(0.35 + 0.25 * done / total_steps, f"building launches {done}/{total_steps}")

        ready = {s: launches.for_plan(p, built_one) for s, p in plans.items()}
        report(0.6, "checking the outputs")
        checks = {
            s: check_strategy(queue, ready[SEQUENTIAL], ready[s], loaded.written, loaded.dtype)
            for s in (PLAN, FUSE_ALL)
        }
        sides = time_interleaved(
            queue, [ready[s] for s in STRATEGIES], warmup, runs, report, (0.65, 1.0), "sequential, plan, fuse_all"
        )
    finally:
        try:
            queue.finish()  # nothing of ours may still run when the buffers go
        finally:
            loaded.release()
    notes = list(model.notes)
    timings = dict(zip(STRATEGIES, sides, strict=True))
    ratios = {s: summarize_ratio(timings[SEQUENTIAL], timings[s]) for s in (PLAN, FUSE_ALL)}
    if table:
        notes.append(f"measured benefits for {len(table)} tuples of kinds")
    if plans[PLAN].fused_launches == 0:
        notes.append("the planner predicted no group faster fused than alone: the plan is the sequential run")
    for s, c in checks.items():
        if not c.correct:
            notes.append(f"{s}: outputs differ from the sequential run ({c.buffers.note})")
    notes.append(f"{launches.built} fused programs built, the others came from this process's cache")
    report(1.0, "done")
    return PlanComparison(
        device=found.limits.name,
        platform=found.limits.platform,
        driver_version=found.limits.driver_version,
        wave_size=wave,
        precision=precision,
        round_to_wave=round_to_wave,
        max_group=max_group,
        warmup=warmup,
        runs=runs,
        graphs=tuple(loaded.infos),
        kernels=tuple(kernels),
        plans=plans,
        timings=timings,
        ratios=ratios,
        checks=checks,
        model=model,
        measured=table,
        probes=tuple(timed),
        refusals=gate.refusal_reasons(),
        layouts={s: tuple(gate.layout(step.kernels) for step in p.steps) for s, p in plans.items()},
        min_throughput=min_throughput,
        notes=tuple(notes),
        elapsed_s=time.monotonic() - t0,
        environment={
            "time_definition": "device: first kernel start to last kernel end of one strategy's launches on one "
            "in-order profiling queue; busy: the sum of the kernels' own start-to-end times, the gaps between "
            "launches left out; wall: host clock around the enqueue and queue.finish()",
            "ratio_definition": "per timed round, strategy time / sequential time of the same round",
            "throughput_definition": "sequential over strategy device span, paired over timed rounds (> 1: faster); "
            "busy_ratio: the same on the sum of the kernels' own times",
            "noise_definition": "95 % percentile bootstrap interval over rounds (devicelab.measure.ratios); a ratio "
            "whose interval holds 1 is within noise",
            "check_definition": "every buffer a kernel writes, bit for bit or within 1e-6 relative to its largest "
            "value, against the sequential run",
        },
    )


__all__ = [
    "VERSION",
    "Launches",
    "PlanComparison",
    "RatioSummary",
    "StrategyCheck",
    "check_strategy",
    "combine_checks",
    "compare_plan",
    "summarize_ratio",
]
