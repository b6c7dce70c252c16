"""A fusion sweep's rows summarized the way seed paper 000 draws them (section 5, figures 8 to 10).

Each function reads one sweep's rows with one lean query (the columns, and from the rows' ``data``
only what it needs: the per-round times a pooled ratio is made of, a row's stored interval, the
operator names figure 9 labels its lines by) and returns plain data for the pages and the API:

* ``pair_matrix``: figure 8a, throughput relative to sequential for each unordered pair of
  operator kinds (the size-2 combination rows), per fused variant: the paired ratio over every
  timed round of the pair's rows (``devicelab.measure.ratios.paired_ratio``: the median of the
  per-round log ratios with a bootstrap interval), its busy ratio, and how many rows there were.
  The paper reports the average over "all possible combination of operators"; a pair's interval
  says whether it differs from 1 at all.
* ``triples``: figure 8b, every size-3 combination row's paired ratio, per variant, with its kinds.
* ``identical_series``: figure 9, N identical operators from one network fused, the throughput
  per N for each operator, rounded to the wave and not.
* ``mflops_points``: figure 10, each combination row's total MFLOPs against its throughput, gain
  (above 1) or loss.
* ``headlines`` and ``check_counts``: median, range, and how many ratios lie *significantly*
  above 1, below 1 or within noise per combination size and variant; how many fused kernels were
  checked correct, incorrect, not run, or refused;
* ``plan_view``: a fusion plan's stored comparison as its page shows it (no query).

Rows with an ``error`` (the fuser or the driver refused the set) have no throughput: they are
left out of every figure and counted in ``check_counts``. Rows whose fused output was wrong are
drawn (their time was measured) and counted as incorrect.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.fusion.spec import KINDS
from devicelab.fusion.sweep import COMBINATION, IDENTICAL, VARIANTS
from devicelab.measure.ratios import RatioEstimate, paired_ratio
from devicelab.measure.stats import summarize
from devicelab.wire import PayloadError
from server.fusion.models import KINDS_SEPARATOR, FusionMeasurement, FusionPlanResult, FusionSweepResult

ROUNDED, UNROUNDED = VARIANTS[True], VARIANTS[False]
PAIR, TRIPLE = 2, 3


def kind_sort_key(kind: str) -> tuple[int, str]:
    """Where a kind sorts: the paper's order (``KINDS``), unknown kinds after it by name."""
    return (KINDS.index(kind), "") if kind in KINDS else (len(KINDS), kind)


def variant_sort_key(variant: str) -> tuple[int, str]:
    """Rounded first, then unrounded, then anything else by name."""
    order = (ROUNDED, UNROUNDED)
    return (order.index(variant), "") if variant in order else (len(order), variant)


def split_kinds(key: str) -> tuple[str, ...]:
    """The kinds of a stored ``|C|DWC|`` key, in order."""
    return tuple(k for k in key.split(KINDS_SEPARATOR) if k)


def _measured(sweep: FusionSweepResult, experiment: str, size: int | None = None) -> Any:
    rows = FusionMeasurement.objects.filter(sweep=sweep, experiment=experiment, error="", throughput__isnull=False)
    return rows if size is None else rows.filter(size=size)


# -- figure 8a ---------------------------------------------------------------------------------


def estimate_of(raw: Any) -> RatioEstimate | None:
    """A stored ratio (``RatioEstimate.as_dict()``), or None when missing or not one (a row stored
    before ratios had intervals)."""
    if not isinstance(raw, Mapping):
        return None
    try:
        return RatioEstimate.from_dict(dict(raw))
    except (PayloadError, TypeError, ValueError):
        return None


def _numbers(values: Any) -> list[float]:
    return [float(v) for v in values if isinstance(v, int | float)] if isinstance(values, list) else []


@dataclass
class _Rounds:
    """The timed rounds of some rows pooled: each row's rounds pair sequential with fused."""

    sequential: list[float]
    fused: list[float]
    busy_sequential: list[float]
    busy_fused: list[float]

    def add(self, seq: Any, fused: Any, busy_seq: Any, busy_fused: Any) -> None:
        """One row's rounds (a row whose sides differ in length is left out: it is not paired)."""
        a, b = _numbers(seq), _numbers(fused)
        if a and len(a) == len(b):
            self.sequential += a
            self.fused += b
            c, d = _numbers(busy_seq), _numbers(busy_fused)
            if c and len(c) == len(d) == len(a):
                self.busy_sequential += c
                self.busy_fused += d

    def span(self) -> RatioEstimate | None:
        """Sequential over fused device span, paired over the pooled rounds."""
        return _pooled(self.sequential, self.fused)

    def busy(self) -> RatioEstimate | None:
        """The same on the kernels' busy times (None unless every row had them)."""
        return _pooled(self.busy_sequential, self.busy_fused) if len(self.busy_fused) == len(self.fused) else None


def _pooled(num: Sequence[float], den: Sequence[float]) -> RatioEstimate | None:
    pairs = [(n, d) for n, d in zip(num, den, strict=True) if n > 0 and d > 0]
    return paired_ratio([n for n, _ in pairs], [d for _, d in pairs]) if pairs else None


ROUND_COLUMNS = (
    "data__sequential__device_samples_ms",
    "data__fused__device_samples_ms",
    "data__sequential__busy_samples_ms",
    "data__fused__busy_samples_ms",
)


@dataclass(frozen=True)
class PairCell:
    """One unordered pair of kinds in one variant: the paired ratio over its rows' rounds."""

    kinds: tuple[str, str]  # in kind order: ("C", "DWC"), ("P", "P")
    variant: str
    estimate: RatioEstimate  # sequential / fused device span, over every round of the pair's rows
    busy: RatioEstimate | None  # the same on the kernels' own times
    count: int  # rows

    @property
    def ratio(self) -> float:
        """The span ratio's point estimate."""
        return self.estimate.ratio


@dataclass(frozen=True)
class PairMatrix:
    """Figure 8a's heatmap data: the kinds on both axes and each measured pair, per variant."""

    kinds: tuple[str, ...]  # every kind that appears in a measured pair, in kind order
    variants: tuple[str, ...]
    cells: Mapping[str, Mapping[tuple[str, str], PairCell]]  # variant -> pair (kind order) -> cell

    def cell(self, variant: str, a: str, b: str) -> PairCell | None:
        """The cell of kinds ``a`` and ``b`` (either order) in ``variant``; None if not measured."""
        pair = (a, b) if kind_sort_key(a) <= kind_sort_key(b) else (b, a)
        return self.cells.get(variant, {}).get(pair)

    def counts(self, variant: str) -> dict[str, int]:
        """How many pairs of ``variant`` lie significantly above 1, below 1, or within noise."""
        out = {"above": 0, "below": 0, "within_noise": 0}
        for cell in self.cells.get(variant, {}).values():
            out[cell.estimate.verdict.replace(" ", "_")] += 1
        return out


def pair_matrix(sweep: FusionSweepResult) -> PairMatrix:
    """Figure 8a: each pair of kinds' paired ratio over its size-2 combination rows' rounds, per variant."""
    rounds: dict[str, dict[tuple[str, str], _Rounds]] = defaultdict(dict)
    counts: dict[tuple[str, tuple[str, str]], int] = defaultdict(int)
    for kinds, variant, *sides in _measured(sweep, COMBINATION, PAIR).values_list("kinds", "variant", *ROUND_COLUMNS):
        a, b = sorted(split_kinds(kinds), key=kind_sort_key)
        rounds[variant].setdefault((a, b), _Rounds([], [], [], [])).add(*sides)
        counts[(variant, (a, b))] += 1
    cells: dict[str, dict[tuple[str, str], PairCell]] = {}
    for variant, by_pair in rounds.items():
        cells[variant] = {}
        for pair, pooled in sorted(by_pair.items(), key=lambda kv: [kind_sort_key(k) for k in kv[0]]):
            span = pooled.span()
            if span is not None:
                cells[variant][pair] = PairCell(pair, variant, span, pooled.busy(), counts[(variant, pair)])
    kinds = sorted({k for by_pair in cells.values() for pair in by_pair for k in pair}, key=kind_sort_key)
    return PairMatrix(tuple(kinds), tuple(sorted(cells, key=variant_sort_key)), cells)


# -- figure 8b ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TriplePoint:
    """One size-3 combination row: its kinds and paired ratio relative to sequential."""

    kinds: tuple[str, ...]
    instance: int
    throughput: float
    estimate: RatioEstimate | None  # its interval (None: a row stored without one)
    busy_ratio: float | None


def triples(sweep: FusionSweepResult) -> dict[str, list[TriplePoint]]:
    """Figure 8b: every measured size-3 combination row's paired ratio, per variant (rounded
    first), each variant's points in kind order."""
    out: dict[str, list[TriplePoint]] = defaultdict(list)
    rows = _measured(sweep, COMBINATION, TRIPLE).values_list(
        "kinds", "instance", "variant", "throughput", "data__ratio", "busy_ratio"
    )
    for kinds, instance, variant, throughput, ratio, busy in rows:
        out[variant].append(TriplePoint(split_kinds(kinds), instance, throughput, estimate_of(ratio), busy))
    for points in out.values():
        points.sort(key=lambda p: ([kind_sort_key(k) for k in p.kinds], p.instance))
    return {v: out[v] for v in sorted(out, key=variant_sort_key)}


# -- figure 9 ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IdenticalPoint:
    """N copies of one operator fused: the paired ratio over the rounds of the rows at that N."""

    n: int
    throughput: float  # the span ratio's point estimate
    count: int
    estimate: RatioEstimate | None = None  # its interval


@dataclass(frozen=True)
class IdenticalSeries:
    """One operator of one network fused with N copies of itself, in one variant (figure 9's lines)."""

    model: str
    operator: str
    kind: str
    variant: str
    points: tuple[IdenticalPoint, ...]  # by N

    @property
    def label(self) -> str:
        """What the line shows: the network, and its operator and kind."""
        return f"{self.model} · {self.operator} ({self.kind})"


def identical_series(sweep: FusionSweepResult) -> list[IdenticalSeries]:
    """Figure 9: throughput against N identical operators, one series per (network, operator,
    variant), the paired ratio over the rounds of the rows at each N; by network, operator, then
    rounded first."""
    by_line: dict[tuple[str, str, str, str], dict[int, _Rounds]] = defaultdict(dict)
    counts: dict[tuple[str, str, str, str, int], int] = defaultdict(int)
    rows = _measured(sweep, IDENTICAL).values_list(
        "kinds", "size", "variant", "data__operators__0__model", "data__operators__0__name", *ROUND_COLUMNS
    )
    for kinds, size, variant, model, operator, *sides in rows:
        kind = split_kinds(kinds)[0] if kinds.strip(KINDS_SEPARATOR) else "?"
        line = (str(model or "?"), str(operator or "?"), kind, variant)
        by_line[line].setdefault(size, _Rounds([], [], [], [])).add(*sides)
        counts[(*line, size)] += 1
    series = []
    for line, by_n in by_line.items():
        points = []
        for n, pooled in sorted(by_n.items()):
            span = pooled.span()
            if span is not None:
                points.append(IdenticalPoint(n, span.ratio, counts[(*line, n)], span))
        series.append(IdenticalSeries(*line, tuple(points)))
    series.sort(key=lambda s: (s.model, s.operator, variant_sort_key(s.variant)))
    return series


# -- figure 10 ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class MflopsPoint:
    """One combination row: its operators' total MFLOPs against its throughput."""

    kinds: tuple[str, ...]
    size: int
    variant: str
    total_mflops: float
    throughput: float
    verdict: str  # its interval: "above", "below" or "within noise" ("" stored without one: within noise)

    @property
    def gain(self) -> bool:
        """Whether fusing beat running the operators one after another, beyond the noise."""
        return self.verdict == "above"


def mflops_points(sweep: FusionSweepResult) -> list[MflopsPoint]:
    """Figure 10: each measured combination row's total MFLOPs, paired ratio and its verdict (by
    size, kinds, variant)."""
    rows = _measured(sweep, COMBINATION).values_list(
        "kinds", "size", "variant", "total_mflops", "throughput", "verdict"
    )
    points = [MflopsPoint(split_kinds(k), size, v, mflops, t, w or "within noise") for k, size, v, mflops, t, w in rows]
    points.sort(key=lambda p: (p.size, [kind_sort_key(k) for k in p.kinds], variant_sort_key(p.variant)))
    return points


# -- headline numbers --------------------------------------------------------------------------


@dataclass(frozen=True)
class Headline:
    """The span ratios of one combination size in one variant, over its measured rows: how many
    lie significantly above 1, below 1, or within noise (each row's own interval), and their spread."""

    size: int
    variant: str
    count: int
    median: float  # of the rows' point estimates
    min: float
    max: float
    above: int  # rows whose interval lies wholly above 1
    below: int
    within_noise: int
    busy_median: float | None  # of the rows' busy ratios (None: none recorded)

    @property
    def sets(self) -> str:
        """'pairs', 'triples' or 'sets of N'."""
        return {PAIR: "pairs", TRIPLE: "triples"}.get(self.size, f"sets of {self.size}")

    @property
    def share_above_1(self) -> float:
        """The share of rows significantly above 1 (the paper's "share of combinations above 1",
        counting only what the noise cannot explain)."""
        return self.above / self.count

    @property
    def share_below_1(self) -> float:
        """The share of rows significantly below 1."""
        return self.below / self.count


def headline_of(
    size: int, variant: str, throughputs: Sequence[float], verdicts: Sequence[str], busy: Sequence[float | None] = ()
) -> Headline:
    """The headline numbers of some rows' span ratios (at least one) and their verdicts (a row
    stored without an interval counts as within noise)."""
    stats = summarize(throughputs)
    above = sum(1 for v in verdicts if v == "above")
    below = sum(1 for v in verdicts if v == "below")
    busy_values = [b for b in busy if b is not None]
    return Headline(
        size,
        variant,
        stats.n,
        stats.median,
        stats.min,
        stats.max,
        above,
        below,
        stats.n - above - below,
        statistics.median(busy_values) if busy_values else None,
    )


def headlines(sweep: FusionSweepResult) -> list[Headline]:
    """Median, range and the counts significantly above 1, below 1 and within noise of the
    combination rows, per size and variant (pairs first, rounded first)."""
    values: dict[tuple[int, str], list[tuple[float, str, float | None]]] = defaultdict(list)
    rows = _measured(sweep, COMBINATION).values_list("size", "variant", "throughput", "verdict", "busy_ratio")
    for size, variant, throughput, verdict, busy in rows:
        values[(size, variant)].append((throughput, verdict, busy))
    keys = sorted(values, key=lambda k: (k[0], variant_sort_key(k[1])))
    return [_headline(size, variant, values[(size, variant)]) for size, variant in keys]


def _headline(size: int, variant: str, rows: Sequence[tuple[float, str, float | None]]) -> Headline:
    return headline_of(size, variant, [t for t, _, _ in rows], [v for _, v, _ in rows], [b for _, _, b in rows])


@dataclass(frozen=True)
class CheckCounts:
    """How a sweep's fused kernels compared with the sequential runs."""

    rows: int
    correct: int  # the fused output equals the sequential one (bit for bit or within 1e-6)
    incorrect: int
    unchecked: int  # measured rows with no check recorded
    errors: int  # refused by the fuser or the driver: no throughput, left out of the figures

    @property
    def measured(self) -> int:
        """Rows with a throughput."""
        return self.rows - self.errors


def check_counts(sweep: FusionSweepResult) -> CheckCounts:
    """Correct, incorrect, unchecked and refused rows of a sweep (one query)."""
    rows = correct = incorrect = errors = 0
    for is_correct, error in FusionMeasurement.objects.filter(sweep=sweep).values_list("correct", "error"):
        rows += 1
        if error:
            errors += 1
        elif is_correct is True:
            correct += 1
        elif is_correct is False:
            incorrect += 1
    return CheckCounts(rows, correct, incorrect, rows - errors - correct - incorrect, errors)


def pair_medians(job_ids: Iterable[int], variant: str = ROUNDED) -> dict[int, Headline]:
    """For listing many sweeps at once: each sweep job's pair headline in ``variant`` (one query;
    jobs with no measured pair are left out)."""
    values: dict[int, list[tuple[float, str, float | None]]] = defaultdict(list)
    rows = FusionMeasurement.objects.filter(
        sweep__job_id__in=list(job_ids),
        experiment=COMBINATION,
        size=PAIR,
        variant=variant,
        error="",
        throughput__isnull=False,
    ).values_list("sweep__job_id", "throughput", "verdict", "busy_ratio")
    for job_id, throughput, verdict, busy in rows:
        if throughput is not None:  # filtered above; the column is nullable
            values[job_id].append((throughput, verdict, busy))
    return {job_id: _headline(PAIR, variant, v) for job_id, v in values.items()}


# -- a plan ------------------------------------------------------------------------------------
#
# A plan's result is stored whole (``FusionPlanResult.data``: ``PlanComparison.as_dict()``, layout
# version 1, see ``devicelab.fusion.plan_run``). The reading below takes what the page shows and
# tolerates what is missing, falling back to the stored headline columns, so that a page never
# fails on a stored result.

STRATEGY_LABELS = {"sequential": "sequential", "plan": "plan", "fuse_all": "fuse all"}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _samples(timing: Mapping[str, Any]) -> list[float]:
    values = timing.get("device_samples_ms")
    if not isinstance(values, list):
        return []
    numbers = [_number(v) for v in values]
    return [v for v in numbers if v is not None]


@dataclass(frozen=True)
class StrategyTime:
    """One way of running the networks together: its median end-to-end time on the device clock,
    the spread of its runs (10th to 90th percentile; None without raw samples), its throughput
    relative to sequential and its output check."""

    name: str  # "sequential", "plan", "fuse_all"
    label: str
    median_ms: float
    p10_ms: float | None
    p90_ms: float | None
    runs: int
    ratio: float | None  # sequential / this strategy's device span, paired over rounds (None: sequential)
    estimate: RatioEstimate | None  # that ratio with its interval (None: sequential, or stored without one)
    busy: RatioEstimate | None  # the same on the kernels' own times
    correct: bool | None  # its written buffers against the sequential run's (None: the reference)
    check_note: str
    launches: int | None
    fused_launches: int | None


@dataclass(frozen=True)
class PlanStepView:
    """One launch of the planner's schedule that fuses kernels, and where its benefit came from."""

    index: int
    labels: tuple[str, ...]  # graph/kernel of each fused kernel
    kinds: tuple[str, ...]
    source: str  # "measured" (a sweep's throughput for these kinds) or "model" (the latency model)
    predicted_throughput: float | None
    predicted_saving_ms: float | None
    padding_fraction: float | None
    measured_rows: int | None  # the sweep rows behind a measured benefit


@dataclass(frozen=True)
class PlanView:
    """What a plan's page shows of its stored comparison."""

    networks: tuple[str, ...]
    strategies: tuple[StrategyTime, ...]  # sequential, plan, fuse all
    steps: tuple[PlanStepView, ...]  # the plan's fused launches
    alone_steps: int  # the plan's launches of one kernel
    sources: Mapping[str, int]  # the plan's fused launches by where their benefit came from
    correct: bool
    calibration: str  # how the latency model's constants were found
    measured_kinds: int  # tuples of kinds with a measured throughput
    notes: tuple[str, ...]

    def strategy(self, name: str) -> StrategyTime | None:
        """The strategy called ``name``."""
        return next((s for s in self.strategies if s.name == name), None)


def _step(raw: Mapping[str, Any]) -> PlanStepView:
    sequential, predicted = _number(raw.get("predicted_sequential_ms")), _number(raw.get("predicted_ms"))
    return PlanStepView(
        index=_int(raw.get("index")) or 0,
        labels=tuple(str(x) for x in raw.get("labels") or []),
        kinds=tuple("—" if k is None else str(k) for k in raw.get("kinds") or []),
        source=str(raw.get("source") or "?"),
        predicted_throughput=_number(raw.get("predicted_throughput")),
        predicted_saving_ms=sequential - predicted if sequential is not None and predicted is not None else None,
        padding_fraction=_number(raw.get("padding_fraction")),
        measured_rows=_int(raw.get("measured_rows")),
    )


def plan_view(stored: FusionPlanResult) -> PlanView:
    """A stored plan result as its page shows it: each strategy's median and 10th-90th percentile
    from its raw device samples, its paired span and busy ratios against sequential with their
    intervals, its output check, and the plan's fused launches."""
    data = _mapping(stored.data)
    timing, ratios, checks, plans = (_mapping(data.get(k)) for k in ("timing", "ratios", "checks", "plans"))
    headline_ms = {"sequential": stored.sequential_ms, "plan": stored.plan_ms, "fuse_all": stored.fuse_all_ms}
    headline_ratio = {"plan": stored.plan_ratio, "fuse_all": stored.fuse_all_ratio}
    strategies = []
    for name, label in STRATEGY_LABELS.items():
        side = _mapping(timing.get(name))
        samples = _samples(side)
        median = _number(_mapping(side.get("device")).get("median"))
        p10, p90 = (float(v) for v in np.percentile(samples, [10, 90])) if samples else (None, None)
        ratio, check, plan = _mapping(ratios.get(name)), _mapping(checks.get(name)), _mapping(plans.get(name))
        failed = [str(b) for b in check.get("failed") or []]
        note = str(_mapping(check.get("buffers")).get("note") or _mapping(check.get("outputs")).get("note") or "")
        strategies.append(
            StrategyTime(
                name=name,
                label=label,
                median_ms=median if median is not None else headline_ms[name],
                p10_ms=p10,
                p90_ms=p90,
                runs=len(samples),
                ratio=None if name == "sequential" else (_number(ratio.get("throughput")) or headline_ratio[name]),
                estimate=estimate_of(ratio.get("ratio")),
                busy=estimate_of(ratio.get("busy_ratio")),
                correct=check.get("correct") if isinstance(check.get("correct"), bool) else None,
                check_note="; ".join(x for x in (note, ", ".join(failed[:5])) if x),
                launches=_int(plan.get("launches")),
                fused_launches=_int(plan.get("fused_launches")),
            )
        )
    raw_steps = [s for s in _mapping(plans.get("plan")).get("steps") or [] if isinstance(s, Mapping)]
    steps = tuple(_step(s) for s in raw_steps if s.get("fused"))
    sources: dict[str, int] = {}
    for step in steps:
        sources[step.source] = sources.get(step.source, 0) + 1
    measured = data.get("measured")
    return PlanView(
        networks=tuple(str(n) for n in (stored.networks or data.get("models") or [])),
        strategies=tuple(strategies),
        steps=steps,
        alone_steps=len(raw_steps) - len(steps),
        sources=sources,
        correct=bool(stored.correct),
        calibration=str(_mapping(data.get("model")).get("calibration") or ""),
        measured_kinds=len(measured) if isinstance(measured, list) else 0,
        notes=tuple(str(n) for n in data.get("notes") or []),
    )


__all__ = [
    "PAIR",
    "ROUNDED",
    "TRIPLE",
    "UNROUNDED",
    "CheckCounts",
    "Headline",
    "IdenticalPoint",
    "IdenticalSeries",
    "MflopsPoint",
    "PairCell",
    "PlanStepView",
    "PlanView",
    "StrategyTime",
    "PairMatrix",
    "TriplePoint",
    "check_counts",
    "estimate_of",
    "headline_of",
    "headlines",
    "identical_series",
    "kind_sort_key",
    "mflops_points",
    "pair_matrix",
    "pair_medians",
    "plan_view",
    "split_kinds",
    "triples",
    "variant_sort_key",
]
