"""What the fusion planner predicts a fused launch saves: measured sweep results, else a latency model.

**Measured benefits.** A sweep (``sweep.run_sweep``) measures the throughput of fused operators
relative to running them one after another, by tuple of operator kinds. ``MeasuredTable`` takes
its rows as plain data (the keys of ``FusionRow.as_dict()``: ``kinds``, ``throughput``,
``variant``, ``experiment``; rows with an ``error`` or a failed check are left out) and keeps,
for each tuple of kinds in canonical order (``kinds.KINDS``), the median throughput of the rows
of the planner's variant (rounded to the wave or not). Figure 9's identical operators (N copies
of one kind) count for the tuple of N times that kind. A plain mapping ``{("C_1x1", "DWC"):
1.04}`` is taken too.

**The latency model** (where no measurement covers a group), in milliseconds on the device clock
of one in-order queue:

    kernel_ms(k) = measured duration of k alone, else  base + per_mflop * MFLOPs_k + per_mb * MB_k
    work_ms(k)   = kernel_ms(k) - base
    alone_ms(k)  = launch + kernel_ms(k)
    fused_ms(G)  = launch + base + max(work_factor * sum_k work_ms(k), max_k work_ms(k))
                   + padding_item * padding(G)

* ``launch`` is what a launch adds to a run beyond its kernel's own time: the gap between one
  kernel's end and the next one's start on the queue. Fusing n kernels saves n - 1 of them.
* ``base`` is the part of a kernel's own time that does not grow with its work (a CPU runtime
  waking its threads, a GPU filling and draining): a fused launch pays it once.
* ``work_factor`` is how long the sub-kernels' work takes inside the fused kernel relative to
  their work alone, one after another: below 1 when the fused launch fills the device better
  (the paper's gain), above 1 when it costs (the fused launch runs work-groups of ``gcd(u_i)``
  work-items, not each kernel's own, and branches). Whatever it is, a fused launch takes at
  least its longest part's work.
* ``padding_item`` is what one work-item of the fused launch that belongs to no sub-kernel costs
  (section 4.2: the launch spans the largest extent in every dimension).
* ``per_mflop`` and ``per_mb`` estimate a kernel's time from its MFLOPs and the bytes it reads
  and writes, for kernels not timed alone.

``fit_kernel_rates`` fits ``base``, ``per_mflop`` and ``per_mb`` to kernel durations (``base``
is the intercept), ``fit_fusion_costs`` the ``work_factor`` and ``padding_item`` to fused launches (probes timed on the device, or sweep rows
with their timings: ``fusion_costs_from_rows``), both by non-negative least squares. The model
records how it was calibrated (``calibration``). No OpenCL driver is needed here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from devicelab.fusion.kinds import kind_order

MEASURED = "measured"  # the group's benefit is a sweep's measured throughput for its kinds
MODEL = "model"  # the latency model's prediction
ALONE = "alone"  # a kernel launched on its own: nothing to predict
VARIANT_NAMES = {True: "rounded", False: "unrounded"}  # as sweep rows name them


@dataclass(frozen=True)
class LatencyModel:
    """The constants of the latency model (see the module docstring), in ms, and their origin."""

    launch_ms: float = 0.005
    work_factor: float = 1.0
    padding_item_ms: float = 0.0
    base_ms: float = 0.005
    ms_per_mflop: float = 0.01
    ms_per_mb: float = 0.1
    calibration: str = "defaults"  # how the constants were found, in words
    notes: tuple[str, ...] = ()

    def estimate_ms(self, mflops: float, mbytes: float) -> float:
        """A kernel's own time estimated from its MFLOPs and MB read and written."""
        return self.base_ms + self.ms_per_mflop * mflops + self.ms_per_mb * mbytes

    def alone_ms(self, kernel_ms: float) -> float:
        """A kernel launched on its own: its time and the launch's."""
        return self.launch_ms + kernel_ms

    def work_ms(self, kernel_ms: float) -> float:
        """The part of a kernel's time that grows with its work."""
        return max(kernel_ms - self.base_ms, 0.0)

    def fused_ms(self, kernel_ms: Sequence[float], padding_items: int) -> float:
        """One fused launch of kernels taking ``kernel_ms`` alone, with this much padding."""
        work = [self.work_ms(ms) for ms in kernel_ms]
        return (
            self.launch_ms
            + self.base_ms
            + max(self.work_factor * sum(work), max(work, default=0.0))
            + self.padding_item_ms * padding_items
        )

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = asdict(self)
        d["notes"] = list(self.notes)
        return d


def canonical_kinds(kinds: Iterable[str]) -> tuple[str, ...]:
    """A tuple of kinds in the canonical order (repeats kept): the key of a measured benefit."""
    return tuple(sorted(kinds, key=kind_order))


@dataclass(frozen=True)
class MeasuredBenefit:
    """The measured throughput of fusing one tuple of kinds (relative to sequential: > 1 wins)."""

    kinds: tuple[str, ...]
    throughput: float  # median over the rows
    rows: int  # how many sweep rows it summarizes (0: given as a plain number)
    experiments: tuple[str, ...]  # the sweeps' experiments it came from ("combination", "identical")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "kinds": list(self.kinds),
            "throughput": self.throughput,
            "rows": self.rows,
            "experiments": list(self.experiments),
        }


class MeasuredTable:
    """Measured throughputs by tuple of kinds (see the module docstring)."""

    def __init__(self, entries: Mapping[tuple[str, ...], MeasuredBenefit] | None = None) -> None:
        self.entries: dict[tuple[str, ...], MeasuredBenefit] = dict(entries or {})

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]], round_to_wave: bool = True) -> MeasuredTable:
        """From sweep rows as plain data: the median throughput per tuple of kinds, of the rows of
        the planner's variant (a row without ``variant`` counts for both) that were measured and
        correct."""
        variant = VARIANT_NAMES[round_to_wave]
        values: dict[tuple[str, ...], list[float]] = {}
        experiments: dict[tuple[str, ...], set[str]] = {}
        for row in rows:
            if row.get("error") or row.get("correct") is False or row.get("throughput") is None:
                continue
            if row.get("variant", variant) != variant:
                continue
            throughput = float(row["throughput"])
            if not math.isfinite(throughput) or throughput <= 0:
                continue
            key = canonical_kinds(row["kinds"])
            values.setdefault(key, []).append(throughput)
            experiments.setdefault(key, set()).add(str(row.get("experiment", "")))
        return cls(
            {
                k: MeasuredBenefit(k, float(np.median(v)), len(v), tuple(sorted(experiments[k] - {""})))
                for k, v in values.items()
            }
        )

    @classmethod
    def from_mapping(cls, table: Mapping[Any, float]) -> MeasuredTable:
        """From ``{("C_1x1", "DWC"): 1.04, ...}``."""
        out = {}
        for kinds, throughput in table.items():
            key = canonical_kinds(kinds)
            out[key] = MeasuredBenefit(key, float(throughput), 0, ())
        return cls(out)

    def lookup(self, kinds: Sequence[str | None]) -> MeasuredBenefit | None:
        """The measured benefit of fusing kernels of these kinds (None if any has no kind, or the
        tuple was not measured)."""
        if any(k is None for k in kinds):
            return None
        return self.entries.get(canonical_kinds(k for k in kinds if k is not None))

    def __len__(self) -> int:
        return len(self.entries)

    def as_dict(self) -> list[dict[str, Any]]:
        """Plain data for JSON: one entry per tuple of kinds, in canonical order."""
        keys = sorted(self.entries, key=lambda k: (len(k), [kind_order(x) for x in k]))
        return [self.entries[k].as_dict() for k in keys]


def measured_table(
    source: Iterable[Mapping[str, Any]] | Mapping[Any, float] | MeasuredTable | None,
    round_to_wave: bool = True,
) -> MeasuredTable:
    """A ``MeasuredTable`` from sweep rows, a plain mapping, a table or nothing."""
    if source is None:
        return MeasuredTable()
    if isinstance(source, MeasuredTable):
        return source
    if isinstance(source, Mapping):
        return MeasuredTable.from_mapping(source)
    return MeasuredTable.from_rows(source, round_to_wave)


@dataclass(frozen=True)
class Fit:
    """Non-negative least-squares coefficients and how well they explain the data."""

    coefficients: tuple[float, ...]
    median_relative_error: float  # median of |fit - measured| / measured over the points
    points: int


def nonnegative_fit(columns: np.ndarray, target: np.ndarray) -> Fit:
    """Coefficients >= 0 minimizing the relative squared error (each point weighted by 1/target,
    so a 5 us kernel counts as much as a 5 ms one)."""
    a = np.asarray(columns, dtype=np.float64)
    y = np.asarray(target, dtype=np.float64)
    weight = 1.0 / np.maximum(y, 1e-9)
    from scipy.optimize import nnls

    coef, _ = nnls(a * weight[:, None], y * weight)
    fitted = a @ coef
    rel = np.abs(fitted - y) / np.maximum(y, 1e-9)
    return Fit(tuple(float(c) for c in coef), float(np.median(rel)) if len(y) else math.nan, len(y))


def fit_kernel_rates(mflops: Sequence[float], mbytes: Sequence[float], kernel_ms: Sequence[float]) -> Fit:
    """``base``, ``per_mflop`` and ``per_mb`` fitted to kernels timed alone."""
    cols = np.column_stack([np.ones(len(kernel_ms)), np.asarray(mflops, float), np.asarray(mbytes, float)])
    return nonnegative_fit(cols, np.asarray(kernel_ms, float))


def fit_fusion_costs(work_ms: Sequence[float], padding_items: Sequence[int], fused_work_ms: Sequence[float]) -> Fit:
    """``work_factor`` and ``padding_item`` fitted to fused launches: each one's time less the
    launch's fixed part (``fused_work_ms``) against its sub-kernels' work alone (``work_ms``,
    summed) and its padding work-items. With one launch, or no padding in any, only the work
    factor is fitted (and the padding cost is 0)."""
    work = np.asarray(work_ms, float)
    pad = np.asarray(padding_items, float)
    target = np.asarray(fused_work_ms, float)
    if len(target) < 2 or not pad.any():
        fit = nonnegative_fit(work[:, None], target)
        return Fit((fit.coefficients[0], 0.0), fit.median_relative_error, fit.points)
    return nonnegative_fit(np.column_stack([work, pad]), target)


@dataclass(frozen=True)
class RowTiming:
    """What a sweep row says about one fused launch: its sub-kernels' time alone (the sequential
    span less its gaps), how many they are, its padding and the fused kernel's time (ms)."""

    kernels_ms: float
    size: int
    padding_items: int
    fused_ms: float


def fusion_costs_from_rows(rows: Iterable[Mapping[str, Any]], launch_ms: float, round_to_wave: bool) -> list[RowTiming]:
    """The fused launches of sweep rows (of the planner's variant, measured and correct) with the
    timings ``fit_fusion_costs`` needs: median device times of both sides and the padding. A row
    whose sequential span is mostly gaps says little about the work and is left out."""
    variant = VARIANT_NAMES[round_to_wave]
    out = []
    for row in rows:
        if row.get("error") or row.get("correct") is False or row.get("variant", variant) != variant:
            continue
        seq, fused, padding = row.get("sequential"), row.get("fused"), row.get("padding")
        if not isinstance(seq, Mapping) or not isinstance(fused, Mapping) or padding is None:
            continue
        try:
            seq_ms = float(seq["device"]["median"])
            fused_ms = float(fused["device"]["median"])
        except (KeyError, TypeError, ValueError):
            continue
        size = int(row.get("size") or len(row.get("kinds", ())))
        kernels_ms = seq_ms - (size - 1) * launch_ms
        if kernels_ms > seq_ms / 2 and fused_ms > 0:
            out.append(RowTiming(kernels_ms, size, int(padding), fused_ms))
    return out


__all__ = [
    "ALONE",
    "MEASURED",
    "MODEL",
    "VARIANT_NAMES",
    "Fit",
    "LatencyModel",
    "MeasuredBenefit",
    "MeasuredTable",
    "RowTiming",
    "canonical_kinds",
    "fit_fusion_costs",
    "fit_kernel_rates",
    "fusion_costs_from_rows",
    "measured_table",
    "nonnegative_fit",
]
