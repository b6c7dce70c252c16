"""Fusion results as a worker reports them, for the API, client and CLI tests: a small sweep's
``SweepResult.as_dict()`` built from devicelab's own dataclasses with made-up timings (every pair
of three kinds, one refused, one wrong, figure 9's N = 1, 2), and helpers that finish a queued
fusion job through the services (claim, ingest) as its worker does; a plan's comparison is the
dashboard factories' (fusion_factories.py), made by the real planner."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from devicelab.fusion.compare import OutputCheck, SideTiming, side_ratios
from devicelab.fusion.pool import OperatorRef
from devicelab.fusion.results import FusionPlanRecord, FusionSweepRecord
from devicelab.fusion.sweep import (
    COMBINATION,
    IDENTICAL,
    VARIANTS,
    CombinationCount,
    FusionRow,
    SweepResult,
    SweepSpec,
)
from devicelab.measure.stats import summarize

KINDS = ("C_1x1", "DWC_s1", "EW")
REFUSED = ("DWC_s1", "EW")  # the fuser refuses this pair: its rows carry an error
WRONG = ("C_1x1", "C_1x1")  # this pair's unrounded kernel computes something else: correct False
RUNS = 3


def _ref(model: str, kind: str, i: int) -> OperatorRef:
    mflops = {"C_1x1": 1.6, "DWC_s1": 0.3, "EW": 0.05}[kind]
    return OperatorRef(model, f"{kind.lower()}_{i}", f"ll_{kind.lower()}", "conv2d", kind, mflops, (64 + i, 7), (8, 1))


def _side(base_ms: float) -> SideTiming:
    device = tuple(base_ms * (1 + 0.01 * r) for r in range(RUNS))
    wall = tuple(t + 0.02 for t in device)
    return SideTiming(summarize(device), summarize(wall), device, wall)


def _rows(experiment: str, kinds: tuple[str, ...], instance: int, model: str, speedup: float) -> list[FusionRow]:
    ops = tuple(_ref(model, k, i) for i, k in enumerate(kinds))
    rows = []
    for rounded in (True, False):
        variant = VARIANTS[rounded]
        if experiment == COMBINATION and kinds == REFUSED:
            rows.append(FusionRow(experiment, kinds, instance, variant, 8, ops, error="FusionError: not independent"))
            continue
        seq = _side(0.5 * len(kinds))
        fused = _side(0.5 * len(kinds) / (speedup if rounded else speedup * 0.95))
        span, busy = side_ratios(seq, fused)
        wrong = experiment == COMBINATION and kinds == WRONG and not rounded
        check = OutputCheck(not wrong, not wrong, 0.5 if wrong else 0.0, "output 0: differs" if wrong else "")
        rows.append(
            FusionRow(
                experiment,
                kinds,
                instance,
                variant,
                8,
                ops,
                fused_global_size=(sum(o.global_size[0] for o in ops) + (8 if rounded else 0), 7),
                fused_local_size=(8, 1),
                padding=(8 if rounded else 0) * 7,
                sequential=seq,
                fused=fused,
                throughput=None if span is None else span.ratio,
                ratio=span,
                busy_ratio=busy,
                throughput_wall=None if span is None else span.ratio,
                check=check,
            )
        )
    return rows


def sweep_result(models: Sequence[str] = ("tiny",), kinds: Sequence[str] = KINDS) -> dict[str, Any]:
    """A small sweep: every pair of ``kinds`` (with repetition) in both variants, one pair refused
    (``REFUSED``), one unrounded kernel wrong (``WRONG``), and one operator fused N = 1, 2 times."""
    spec = SweepSpec(sizes=(2,), kinds=tuple(kinds), representatives=1, identical_counts=(1, 2), warmup=1, runs=RUNS)
    rows: list[FusionRow] = []
    pairs = list(itertools.combinations_with_replacement(kinds, 2))
    for n, pair in enumerate(pairs):
        rows.extend(_rows(COMBINATION, pair, 0, models[n % len(models)], 0.8 + 0.1 * n))
    for count in spec.identical_counts:
        rows.extend(_rows(IDENTICAL, (kinds[0],) * count, 0, models[0], 1.0 + 0.05 * count))
    return SweepResult(
        device="Test GPU",
        wave_size=8,
        precision="fp32",
        models=tuple(models),
        spec=spec,
        operators_per_kind={k: 3 for k in kinds},
        representatives={k: (_ref(models[0], k, 0),) for k in kinds},
        combinations=(CombinationCount(2, len(pairs), len(pairs)),),
        sampled=False,
        notes=("1 set was refused by the fuser",),
        rows=tuple(rows),
        planned_units=len(pairs) + len(spec.identical_counts),
        measured_units=len(pairs) + len(spec.identical_counts),
        elapsed_s=12.5,
        environment={"platform": "Test", "device_wave_size": 8},
    ).as_dict()


def finish_sweep(job: Any, result: dict[str, Any] | None = None) -> Any:
    """Claim a queued sweep job and store ``result`` (a ``sweep_result()`` by default), as its
    worker would; the stored ``FusionSweepResult``."""
    from server.fusion.services import ingest_sweep
    from server.profiling.services import claim_job

    token = f"test-run-{job.pk}"
    assert claim_job(job.pk, token) is not None
    stored = ingest_sweep(job.pk, token, FusionSweepRecord.from_dict(result if result is not None else sweep_result()))
    assert stored is not None
    return stored


def finish_plan(job: Any, comparison: dict[str, Any] | None = None) -> Any:
    """Claim a queued plan job and store ``comparison``; the stored ``FusionPlanResult``."""
    from server.fusion.services import ingest_plan
    from server.profiling.services import claim_job

    token = f"test-run-{job.pk}"
    assert claim_job(job.pk, token) is not None
    from tests.server.fusion_factories import plan_comparison  # the real planner's, on synthetic kernels

    stored = ingest_plan(
        job.pk, token, FusionPlanRecord.from_dict(comparison if comparison is not None else plan_comparison())
    )
    assert stored is not None
    return stored
