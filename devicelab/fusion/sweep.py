"""Fusion sweeps (seed paper 000, section 5, figures 8 to 10): combinations of operator kinds, and
N identical operators, each measured sequential against fused, with and without wave rounding.

``plan_sweep`` decides what to measure, from an ``OperatorPool`` (networks loaded on a device,
``pool``) and a ``SweepSpec``, deterministically for a seed:

* **Representatives.** For each kind (``kinds``) up to ``representatives`` operators are drawn,
  spread over the networks (round-robin over the networks in a seeded order).
* **Combinations of kinds.** Every 2- and 3-combination (``sizes``) of the kinds the pool has,
  with repetition by default (figure 8a's diagonal, and the paper's triples of squeezes). Where
  a size has more than ``max_combinations``, that many are sampled with the seed, and the result
  says so. Each combination is measured ``instances`` times, each time with operators drawn from
  the representatives (distinct ones where the kind has enough), by a generator seeded with the
  seed and the combination, so a combination's operators do not depend on which others were
  sampled.
* **Identical operators** (figure 9): from each network, ``identical_per_model`` operators, each
  fused with copies of itself, N = ``identical_counts`` (1 to 8).

``run_sweep`` measures each planned set (``compare``): its sub-kernels get private outputs, each
fused variant (rounded to the wave or not, in each of the spec's ``layouts``: ``"auto"`` by
default, the packed layout wherever it is exact; ``"paper"`` beside it for comparison) is checked
once against the library's own kernels run one after another, then every variant and its
**sequential side** run interleaved, ``warmup`` rounds dropped and ``runs`` kept.

The sequential side of a variant is each operator's kernel rewritten by the fuser *alone*, in
that variant's layout and rounding, launched one after another. The rewrite by itself changes
the code the compiler sees: packed, a 2-D kernel whose second extent is 1 becomes a 1-D kernel
whose ``get_global_id(1)`` is the constant 0, and PoCL folds the index arithmetic away (an
element-wise add of MobileNet-V2 ran 1.4-1.8x faster rewritten alone, so "1 x EW", nothing
fused, read 1.82x against the library's kernel). Against the rewritten kernels alone, a ratio
is what fusing adds: N = 1 is the same kernel on both sides.

Each (set, layout, variant) is one ``FusionRow``: the operators with their MFLOPs, the layout
asked for and the one used, both sides' samples and statistics, the **span ratio** (sequential
over fused device span, first start to last end, paired over rounds with its bootstrap interval:
``measure.ratios``), the **busy ratio** (the same on the sum of the kernels' own times: above 1
is the device used better, a span ratio above the busy ratio is launch gaps saved), the host
clock's ratio beside them, and the output check. A variant the fuser refuses becomes a row with
``error`` set (every variant of the set, when the driver refuses). The sets run in a seeded
order, so a sweep stopped by ``time_budget_s`` has measured a seeded sample, and says so.

Progress goes to a callback (fraction, message) as backends take it; the callback may raise to
stop the sweep (the exception propagates, the private buffers are freed, the pool stays loaded).
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import context_for
from devicelab.fusion.compare import (
    OutputCheck,
    PrivateOutputs,
    SideTiming,
    check_outputs,
    ratio_of,
    side_ratios,
    time_interleaved,
)
from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import FusedKernel, SubKernel, fuse
from devicelab.fusion.kinds import kind_order
from devicelab.fusion.pool import OperatorPool, PoolOperator
from devicelab.fusion.results import CombinationCount, FusionRowRecord, OperatorRef, SweepEnvironment
from devicelab.fusion.run import ready_fused, ready_subkernel
from devicelab.fusion.spec import AUTO, LAYOUTS, SweepSpec
from devicelab.measure.harness import Progress, ReportFn
from devicelab.measure.ratios import RatioEstimate
from devicelab.wire import fields_json

COMBINATION = "combination"
IDENTICAL = "identical"
VARIANTS = {True: "rounded", False: "unrounded"}


@dataclass(frozen=True)
class SweepUnit:
    """One set of operators to measure sequential against fused."""

    experiment: str  # COMBINATION or IDENTICAL
    kinds: tuple[str, ...]  # the operators' kinds, in order
    instance: int  # which draw of this combination (which operator of the network, for IDENTICAL)
    operators: tuple[PoolOperator, ...]

    @property
    def label(self) -> str:
        """What it fuses, for progress messages."""
        if self.experiment == IDENTICAL:
            return f"{len(self.operators)} x {self.operators[0].ref.model}/{self.operators[0].ref.name}"
        return " + ".join(self.kinds)


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep will measure, decided from the pool and the spec alone."""

    spec: SweepSpec
    units: tuple[SweepUnit, ...]  # in measuring order (seeded)
    representatives: dict[str, tuple[PoolOperator, ...]]
    operators_per_kind: dict[str, int]
    combinations: tuple[CombinationCount, ...]
    notes: tuple[str, ...]

    @property
    def sampled(self) -> bool:
        """Whether combinations were sampled rather than all planned."""
        return any(c.planned < c.total for c in self.combinations)


@dataclass(frozen=True)
class FusionRow:
    """One set of operators and one fused variant, measured (``error`` empty) or refused."""

    experiment: str
    kinds: tuple[str, ...]
    instance: int
    variant: str  # "rounded" or "unrounded"
    wave_size: int
    operators: tuple[OperatorRef, ...]
    fused_global_size: tuple[int, ...] | None = None
    fused_local_size: tuple[int, ...] | None = None
    padding: int | None = None  # work-items of the fused launch that belong to no operator
    sequential: SideTiming | None = None
    fused: SideTiming | None = None
    throughput: float | None = None  # the span ratio's point estimate (``ratio.ratio``)
    ratio: RatioEstimate | None = None  # sequential / fused device span, paired over rounds
    busy_ratio: RatioEstimate | None = None  # sequential / fused kernels' own time, paired over rounds
    throughput_wall: float | None = None  # the span ratio's point estimate on the host clock
    check: OutputCheck | None = None
    error: str = ""
    requested_layout: str = AUTO  # the layout ``fuse`` was asked for: "auto", "packed" or "paper"
    layout: str = ""  # the layout it used: "packed" or "paper" ("" when it refused the set)

    @property
    def size(self) -> int:
        """How many operators are fused."""
        return len(self.operators)

    @property
    def rounded(self) -> bool:
        """Whether parts and offsets were rounded to the wave."""
        return self.variant == VARIANTS[True]

    @property
    def mflops(self) -> tuple[float, ...]:
        """Each operator's MFLOPs."""
        return tuple(op.mflops for op in self.operators)

    @property
    def padding_fraction(self) -> float | None:
        """The share of the fused launch's work-items that belong to no operator."""
        if self.padding is None or self.fused_global_size is None:
            return None
        return self.padding / math.prod(self.fused_global_size)

    @property
    def correct(self) -> bool | None:
        """Whether the fused kernel computed what the sequential run did (None: not run)."""
        return None if self.check is None else self.check.correct

    @property
    def total_mflops(self) -> float:
        """The MFLOPs of all its operators."""
        return sum(self.mflops)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: one stored row, ``FusionRowRecord``'s fields."""
        return FusionRowRecord.of(self).as_dict()


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: where and what it measured, and one row per set and variant."""

    device: str
    wave_size: int
    precision: str
    models: tuple[str, ...]
    spec: SweepSpec
    operators_per_kind: dict[str, int]
    representatives: dict[str, tuple[OperatorRef, ...]]
    combinations: tuple[CombinationCount, ...]
    sampled: bool  # combinations sampled, or stopped early by the time budget
    notes: tuple[str, ...]
    rows: tuple[FusionRow, ...]
    planned_units: int
    measured_units: int
    elapsed_s: float
    environment: SweepEnvironment = field(default_factory=lambda: SweepEnvironment())

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: ``FusionSweepRecord``'s."""
        return fields_json(self)


# ---------------------------------------------------------------------------------------------
# Planning


def _rng(seed: int, *parts: object) -> random.Random:
    """A generator seeded by the sweep's seed and what it draws for (string seeds are stable)."""
    return random.Random(":".join(str(p) for p in (seed, *parts)))


def _representatives(pool: OperatorPool, kind: str, count: int, seed: int) -> tuple[PoolOperator, ...]:
    """Up to ``count`` operators of a kind, round-robin over the networks in a seeded order."""
    rng = _rng(seed, "representatives", kind)
    per_model = [[op for op in pool.of_model(m) if op.kind == kind] for m in pool.models]
    per_model = [ops for ops in per_model if ops]
    rng.shuffle(per_model)
    for ops in per_model:
        rng.shuffle(ops)
    picked: list[PoolOperator] = []
    for layer in itertools.zip_longest(*per_model):
        picked.extend(op for op in layer if op is not None)
    return tuple(picked[:count])


def _draw(
    kinds: tuple[str, ...], reps: dict[str, tuple[PoolOperator, ...]], seed: int, instance: int
) -> tuple[PoolOperator, ...]:
    """Operators for one combination of kinds: distinct ones per kind where there are enough."""
    rng = _rng(seed, "draw", "+".join(kinds), instance)
    chosen: dict[str, list[PoolOperator]] = {}
    for kind, count in Counter(kinds).items():
        options = list(reps[kind])
        chosen[kind] = rng.sample(options, count) if len(options) >= count else rng.choices(options, k=count)
    return tuple(chosen[k].pop() for k in kinds)


def plan_sweep(pool: OperatorPool, spec: SweepSpec) -> SweepPlan:
    """What ``run_sweep`` will measure for this pool and spec (the same for the same seed)."""
    by_kind = pool.by_kind()
    counts = {k: len(by_kind[k]) for k in spec.kinds}
    available = tuple(k for k in spec.kinds if counts[k])
    notes: list[str] = []
    missing = [k for k in spec.kinds if not counts[k]]
    if missing:
        notes.append(f"no operator of kind {', '.join(missing)} in {', '.join(pool.models)}: left out")
    reps = {k: _representatives(pool, k, spec.representatives, spec.seed) for k in available}

    units: list[SweepUnit] = []
    combos: list[CombinationCount] = []
    for size in spec.sizes:
        make = itertools.combinations_with_replacement if spec.repeats else itertools.combinations
        every = list(make(available, size))
        chosen = every
        if spec.max_combinations is not None and len(every) > spec.max_combinations:
            picked = _rng(spec.seed, "sample", size).sample(range(len(every)), spec.max_combinations)
            chosen = [every[i] for i in sorted(picked)]
            notes.append(f"sampled {len(chosen)} of {len(every)} {size}-combinations of kinds with seed {spec.seed}")
        combos.append(CombinationCount(size, len(every), len(chosen)))
        for kinds in chosen:
            for instance in range(spec.instances):
                units.append(SweepUnit(COMBINATION, kinds, instance, _draw(kinds, reps, spec.seed, instance)))

    if spec.identical_counts and spec.identical_per_model:
        for model in pool.models:
            candidates = [op for op in pool.of_model(model) if op.kind in available]
            rng = _rng(spec.seed, "identical", model)
            for instance, op in enumerate(rng.sample(candidates, min(spec.identical_per_model, len(candidates)))):
                for n in spec.identical_counts:
                    units.append(SweepUnit(IDENTICAL, (op.kind,) * n, instance, (op,) * n))

    _rng(spec.seed, "order").shuffle(units)  # a sweep stopped early has measured a seeded sample
    return SweepPlan(spec, tuple(units), reps, counts, tuple(combos), tuple(notes))


# ---------------------------------------------------------------------------------------------
# Measuring


@dataclass
class _Bench:
    """What every measured set shares: the device, its queue and the reporting."""

    pool: OperatorPool
    spec: SweepSpec
    queue: cl.CommandQueue
    wave_size: int
    dtype: np.dtype[Any]
    progress: Progress


def _rows_refused(bench: _Bench, unit: SweepUnit, why: dict[tuple[str, bool], str]) -> list[FusionRow]:
    """Rows for the (layout, rounding) variants of a set that were refused, and why."""
    refs = tuple(op.ref for op in unit.operators)
    return [
        FusionRow(
            unit.experiment,
            unit.kinds,
            unit.instance,
            VARIANTS[r],
            bench.wave_size,
            refs,
            error=error,
            requested_layout=layout,
        )
        for (layout, r), error in why.items()
    ]


def _error(e: Exception) -> str:
    return f"{type(e).__name__}: {str(e).strip()[:2000]}"


def _alone(subs: Sequence[SubKernel], wave_size: int, layout: str, rounded: bool) -> list[FusedKernel]:
    """Each sub-kernel rewritten by the fuser on its own, in the layout and rounding of a fused
    variant: the sequential side that variant is compared with (see the module docstring)."""
    return [fuse([sub], wave_size, round_to_wave=rounded, layout=layout) for sub in subs]


def _measure(bench: _Bench, unit: SweepUnit, at: tuple[float, float]) -> list[FusionRow]:
    """Check and time one set: every fused variant (layout and rounding) the fuser takes against
    its sub-kernels rewritten alone in that variant, all interleaved; a variant it refuses is a
    row with ``error`` set."""
    found, spec = bench.pool.found, bench.spec
    private = PrivateOutputs(found, [op.sub for op in unit.operators], bench.queue)
    refused: dict[tuple[str, bool], str] = {}
    try:
        try:
            fused: dict[tuple[str, bool], FusedKernel] = {}
            alone: dict[tuple[str, bool], list[FusedKernel]] = {}
            for layout in spec.layouts:
                for r in spec.rounding:
                    try:
                        fused[layout, r] = fuse(private.subs, bench.wave_size, round_to_wave=r, layout=layout)
                        alone[layout, r] = _alone(private.subs, bench.wave_size, layout, r)
                    except FusionError as e:
                        fused.pop((layout, r), None)
                        refused[layout, r] = _error(e)
            if not fused:
                return _rows_refused(bench, unit, refused)
            original = [ready_subkernel(found, s) for s in private.subs]
            ready = {v: ready_fused(found, f) for v, f in fused.items()}
            baselines = {v: [ready_fused(found, k) for k in alone[v]] for v in fused}
            # The check compares with the library's own kernels: the rewrite must not change a bit.
            checks = {v: check_outputs(bench.queue, original, ready[v], private.buffers, bench.dtype) for v in ready}
            sides = time_interleaved(
                bench.queue,
                [*baselines.values(), *([launch] for launch in ready.values())],
                spec.warmup,
                spec.runs,
                bench.progress,
                at,
                unit.label,
            )
        except (FusionError, cl.Error) as e:
            variants = [(layout, r) for layout in spec.layouts for r in spec.rounding]
            return _rows_refused(bench, unit, {v: refused.get(v, _error(e)) for v in variants})
    finally:
        private.release()
    refs = tuple(op.ref for op in unit.operators)
    rows = _rows_refused(bench, unit, refused)
    timed = zip(fused.items(), sides[: len(fused)], sides[len(fused) :], strict=True)
    for ((layout, r), f), seq, side in timed:
        span, busy = side_ratios(seq, side)
        wall = ratio_of(seq.wall_samples_ms, side.wall_samples_ms)
        rows.append(
            FusionRow(
                unit.experiment,
                unit.kinds,
                unit.instance,
                VARIANTS[r],
                bench.wave_size,
                refs,
                fused_global_size=f.global_size,
                fused_local_size=ready[layout, r].local_size,
                padding=f.padding,
                sequential=seq,
                fused=side,
                throughput=None if span is None else span.ratio,
                ratio=span,
                busy_ratio=busy,
                throughput_wall=None if wall is None else wall.ratio,
                check=checks[layout, r],
                requested_layout=layout,
                layout=f.layout,
            )
        )
    return rows


def _row_order(row: FusionRow) -> tuple[Any, ...]:
    return (
        row.experiment != COMBINATION,
        row.size,
        [kind_order(k) for k in row.kinds],
        row.operators[0].model if row.experiment == IDENTICAL else "",
        row.instance,
        LAYOUTS.index(row.requested_layout),
        not row.rounded,
    )


def run_sweep(pool: OperatorPool, spec: SweepSpec | None = None, progress: ReportFn | None = None) -> SweepResult:
    """Plan and measure a sweep on the pool's device (see the module docstring)."""
    t0 = time.monotonic()
    plan = plan_sweep(pool, spec or SweepSpec())
    spec = plan.spec
    found = pool.found
    report = Progress(progress)
    queue = cl.CommandQueue(context_for(found), found.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
    bench = _Bench(pool, spec, queue, spec.wave_size or found.limits.wave_size, pool.dtype, report)
    notes = list(plan.notes)
    rows: list[FusionRow] = []
    n = len(plan.units)
    measured = 0
    report(0.0, f"{n} sets of operators to measure")
    for i, unit in enumerate(plan.units):
        if spec.time_budget_s is not None and time.monotonic() - t0 > spec.time_budget_s:
            notes.append(
                f"time budget of {spec.time_budget_s:g} s reached: measured {i} of {n} sets "
                f"(a seeded sample, seed {spec.seed})"
            )
            break
        rows.extend(_measure(bench, unit, (i / n, (i + 1) / n)))
        measured += 1
        report((i + 1) / n, f"{unit.label}: measured ({i + 1}/{n})")
    report(1.0, "done")
    refused = sum(1 for r in rows if r.error)
    wrong = sum(1 for r in rows if r.correct is False)
    if refused:
        notes.append(f"{refused} rows were refused by the fuser or the driver (see their error)")
    if wrong:
        notes.append(f"{wrong} fused kernels did not compute what the sequential run did")
    return SweepResult(
        device=found.limits.name,
        wave_size=bench.wave_size,
        precision=pool.precision,
        models=pool.models,
        spec=spec,
        operators_per_kind=plan.operators_per_kind,
        representatives={k: tuple(op.ref for op in ops) for k, ops in plan.representatives.items()},
        combinations=plan.combinations,
        sampled=plan.sampled or measured < n,
        notes=tuple(notes),
        rows=tuple(sorted(rows, key=_row_order)),
        planned_units=n,
        measured_units=measured,
        elapsed_s=time.monotonic() - t0,
        environment={
            "platform": found.limits.platform,
            "driver_version": found.limits.driver_version,
            "device_wave_size": found.limits.wave_size,
            "time_definition": "device: first kernel start to last kernel end of one side's launches on one "
            "in-order profiling queue; busy: the sum of the kernels' own start-to-end times, the gaps between "
            "launches left out; wall: host clock around the enqueue and queue.finish()",
            "throughput_definition": "sequential over fused device span, paired over timed rounds (the median of "
            "the per-round log ratios); sequential: each operator's kernel rewritten by the fuser alone, in the "
            "fused variant's layout and rounding, launched one after another",
            "noise_definition": "95 % percentile bootstrap interval over rounds (devicelab.measure.ratios); a ratio "
            "whose interval holds 1 is within noise. busy_ratio: the same on the sum of the kernels' own times",
        },
    )


def mean_throughput(rows: Sequence[FusionRow]) -> float:
    """The mean span ratio of measured rows (NaN when none was measured): figure 8's averages."""
    values = [r.throughput for r in rows if r.throughput is not None]
    return float(np.mean(values)) if values else math.nan


__all__ = [
    "COMBINATION",
    "IDENTICAL",
    "VARIANTS",
    "CombinationCount",
    "FusionRow",
    "SweepPlan",
    "SweepResult",
    "SweepSpec",
    "SweepUnit",
    "mean_throughput",
    "plan_sweep",
    "run_sweep",
]
