"""Fusion sweeps and plans as a worker would store them, for the summary and page tests, without
running them: results built from devicelab's own dataclasses (``sweep.FusionRow``/``SweepResult``,
and the real planner's schedules in a ``plan_run.PlanComparison``), so their plain data is exactly
what ``as_dict()`` gives, with chosen throughputs; jobs queued with ``submit_fusion_sweep`` /
``submit_fusion_plan``, claimed with ``claim_job`` and stored with ``ingest_sweep``/``ingest_plan``."""

from __future__ import annotations

import math
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from devicelab.fusion.compare import OutputCheck, SideTiming, side_ratios
from devicelab.fusion.plan import PlanKernel
from devicelab.fusion.pool import OperatorRef
from devicelab.fusion.results import FusionPlanRecord, FusionSweepRecord
from devicelab.fusion.sweep import COMBINATION, IDENTICAL, CombinationCount, FusionRow, SweepResult, SweepSpec
from devicelab.measure.stats import summarize

WAVE = 8
MFLOPS = {"C": 12.0, "C_1x1": 3.5, "S": 1.2, "P": 0.4, "DWC": 0.9, "DWC_s1": 0.6, "FC": 2.5, "EW": 0.05}
NETWORKS = ("mobilenet_v2", "squeezenet_1_0")


@dataclass(frozen=True)
class RowSpec:
    """One row to store: which kinds (or N copies of one operator), which variant, its outcome."""

    kinds: tuple[str, ...]
    variant: str
    throughput: float | None
    experiment: str = COMBINATION
    instance: int = 0
    model: str = NETWORKS[0]
    correct: bool = True
    error: str = ""
    # the per-round log ratios spread this much either side of the chosen throughput: at 0.3 a
    # ratio of 1.05 is within noise, at 0.02 it is above 1
    spread: float = 0.02


def _operator(kind: str, model: str, index: int) -> OperatorRef:
    return OperatorRef(
        model=model,
        name=f"{kind.lower()}_{index}",
        kernel=f"ll_{kind.lower()}",
        op_type={"P": "max_pool2d", "FC": "fully_connected", "EW": "add"}.get(kind, "conv2d"),
        kind=kind,
        mflops=MFLOPS[kind] * (1 + index),
        global_size=(64 * (index + 1), 7),
        local_size=None,
    )


# Symmetric around 0 with a median of 0: a row's paired ratio (the median of its per-round log
# ratios) is exactly the chosen throughput, its interval as wide as the spread.
_ROUND_OFFSETS = (-1.0, 0.5, -0.75, 0.25, 0.0, 0.0, -0.25, 0.75, -0.5, 1.0)


def _side(ms: float, phase: int = 0, spread: float = 0.0) -> SideTiming:
    device = tuple(ms * (1 + 0.01 * (((i + phase) % 5) - 2)) * math.exp(spread * _ROUND_OFFSETS[i]) for i in range(10))
    wall = tuple(t + 0.02 for t in device)
    busy = tuple(0.9 * t for t in device)  # the launch gaps: a tenth of each run
    return SideTiming(summarize(device), summarize(wall), device, wall, busy)


def fusion_row(spec: RowSpec) -> FusionRow:
    """A ``FusionRow`` as a sweep would make it, with the chosen throughput and check."""
    if spec.experiment == IDENTICAL:
        ops = tuple(_operator(spec.kinds[0], spec.model, spec.instance) for _ in spec.kinds)
    else:
        models = [NETWORKS[i % len(NETWORKS)] for i in range(len(spec.kinds))]
        ops = tuple(_operator(k, m, spec.instance) for k, m in zip(spec.kinds, models, strict=True))
    if spec.error:
        return FusionRow(spec.experiment, spec.kinds, spec.instance, spec.variant, WAVE, ops, error=spec.error)
    assert spec.throughput is not None
    sequential_ms = 0.05 * len(ops)
    check = OutputCheck(spec.correct, spec.correct, 0.0 if spec.correct else 0.5, "" if spec.correct else "differs")
    sequential = _side(sequential_ms)
    fused = _side(sequential_ms / spec.throughput, spread=-spec.spread)
    span, busy = side_ratios(sequential, fused)
    return FusionRow(
        spec.experiment,
        spec.kinds,
        spec.instance,
        spec.variant,
        WAVE,
        ops,
        fused_global_size=(64 * len(ops), 7),
        fused_local_size=(8, 1),
        padding=16 * (len(ops) - 1),
        sequential=sequential,
        fused=fused,
        throughput=None if span is None else span.ratio,
        ratio=span,
        busy_ratio=busy,
        throughput_wall=spec.throughput * 0.98,
        check=check,
    )


def sweep_result(rows: Sequence[RowSpec], notes: Sequence[str] = (), sampled: bool = False) -> dict[str, Any]:
    """``SweepResult.as_dict()`` for these rows on a PoCL-like device."""
    spec = SweepSpec(kinds=("C", "C_1x1", "P", "DWC", "EW"), identical_counts=(1, 2, 3, 4), runs=10, warmup=2)
    sizes = sorted({len(r.kinds) for r in rows if r.experiment == COMBINATION})
    return SweepResult(
        device="pthread-test-cpu",
        wave_size=WAVE,
        precision="fp32",
        models=NETWORKS,
        spec=spec,
        operators_per_kind={"C": 10, "C_1x1": 20, "P": 4, "DWC": 3, "EW": 7},
        representatives={},
        combinations=tuple(CombinationCount(s, 15 if s == 2 else 35, 15 if s == 2 else 35) for s in sizes),
        sampled=sampled,
        notes=tuple(notes),
        rows=tuple(fusion_row(r) for r in rows),
        planned_units=len(rows) // 2,
        measured_units=len(rows) // 2,
        elapsed_s=12.5,
        environment={"platform": "Portable Computing Language"},
    ).as_dict()


def both(kinds: tuple[str, ...], rounded: float | None, unrounded: float | None, **kw: Any) -> list[RowSpec]:
    """A set's two rows: rounded to the wave and not."""
    return [RowSpec(kinds, "rounded", rounded, **kw), RowSpec(kinds, "unrounded", unrounded, **kw)]


def realistic_rows() -> list[RowSpec]:
    """A small sweep with what the pages must handle: pairs (one drawn twice, the diagonal, gains
    and losses, one within noise), triples, figure 9's identical operators from two networks at N = 1..4, a wrong
    fused output and a set the fuser refused."""
    rows = [
        *both(("C", "C"), 0.95, 0.93),
        *both(("C", "C_1x1"), 1.04, 1.01),
        *both(("C", "C_1x1"), 1.10, 1.07, instance=1),
        *both(("C_1x1", "DWC"), 1.02, 0.99, spread=0.3),  # rounds too spread to tell from 1
        *both(("C_1x1", "EW"), 0.24, 0.22),
        *both(("P", "P"), 0.25, 0.26),
        *both(("DWC", "EW"), 0.90, 0.88, correct=False),
        *both(("P", "EW"), None, None, error="FusionError: a barrier cannot be fused"),
        *both(("C", "C_1x1", "DWC"), 1.13, 1.05),
        *both(("C", "P", "EW"), 0.40, 0.38),
        *both(("C_1x1", "C_1x1", "EW"), 0.87, 0.90),
    ]
    for i, model in enumerate(NETWORKS):
        kind = ("C_1x1", "DWC")[i]
        for n in range(1, 5):
            rows += both(
                (kind,) * n, 1.0 + 0.03 * (n - 1) * (1 - i), 1.0 - 0.02 * (n - 1), experiment=IDENTICAL, model=model
            )
    return rows


def _plan_kernels(copies: Sequence[str]) -> list[PlanKernel]:
    """Each network copy's chain conv (C) -> depthwise (DWC_s1) -> 1x1 (C_1x1), interleaved."""
    chain = (("conv_0", "C", 12.0), ("dw_1", "DWC_s1", 0.6), ("pw_2", "C_1x1", 3.5))
    kernels: list[PlanKernel] = []
    for step, (name, kind, mflops) in enumerate(chain):
        for g, graph in enumerate(copies):
            index = len(kernels)
            after = (index - len(copies),) if step else ()
            kernels.append(
                PlanKernel(index, graph, graph.split("#")[0], name, f"ll_{kind.lower()}", kind, mflops, 0.2,
                           (112 + 8 * g, 14), None, after, 0.04 * (1 + step))
            )  # fmt: skip
    return kernels


def plan_comparison(
    sequential_ms: float = 15.6, plan_ms: float = 14.2, fuse_all_ms: float = 17.9, correct: bool = True
) -> dict[str, Any]:
    """``PlanComparison.as_dict()`` for two MobileNet-V2 run together, built with the real planner
    (``plan.plan_fusion`` and friends on synthetic kernels, no device): C+C fused from a measured
    throughput, DWC_s1+DWC_s1 from the latency model, the 1x1 pair left alone (measured 0.9)."""
    from devicelab.fusion.plan import FUSE_ALL, PLAN, SEQUENTIAL, plan_fuse_all, plan_fusion, plan_sequential
    from devicelab.fusion.plan_load import GraphInfo
    from devicelab.fusion.plan_model import LatencyModel, MeasuredTable
    from devicelab.fusion.plan_run import PlanComparison, StrategyCheck, summarize_ratio

    copies = ("mobilenet_v2", "mobilenet_v2#2")
    kernels = _plan_kernels(copies)
    model = LatencyModel(launch_ms=0.01, work_factor=0.8, calibration="test constants")
    table = MeasuredTable.from_mapping({("C", "C"): 1.2, ("C_1x1", "C_1x1"): 0.9})
    plans = {
        SEQUENTIAL: plan_sequential(kernels, model, wave_size=WAVE, measured=table),
        PLAN: plan_fusion(kernels, model, wave_size=WAVE, measured=table, max_group=2),
        FUSE_ALL: plan_fuse_all(kernels, model, wave_size=WAVE, measured=table),
    }
    timings = {SEQUENTIAL: _side(sequential_ms), PLAN: _side(plan_ms, 1), FUSE_ALL: _side(fuse_all_ms, 2)}
    ok = OutputCheck(True, True, 0.0, "")
    bad = OutputCheck(False, False, 0.3, "output 0: differs by 3.00e-01 relative")
    checks = {
        PLAN: StrategyCheck(ok, ok, ()),
        FUSE_ALL: StrategyCheck(
            ok if correct else bad, ok if correct else bad, () if correct else ("mobilenet_v2/out",)
        ),
    }
    return PlanComparison(
        device="pthread-test-cpu",
        platform="Portable Computing Language",
        driver_version="6.0",
        wave_size=WAVE,
        precision="fp32",
        round_to_wave=True,
        max_group=2,
        warmup=2,
        runs=10,
        graphs=tuple(GraphInfo(g, g.split("#")[0], 3, {"input": [1, 3, 224, 224]}) for g in copies),
        kernels=tuple(kernels),
        plans=plans,
        timings=timings,
        ratios={s: summarize_ratio(timings[SEQUENTIAL], timings[s]) for s in (PLAN, FUSE_ALL)},
        checks=checks,
        model=model,
        measured=table,
        probes=(),
        refusals={},
        notes=("measured benefits for 2 tuples of kinds",),
        elapsed_s=3.5,
    ).as_dict()


def claim(job: Any) -> str:
    """Claim a queued job as a worker run would; its token."""
    from server.profiling.services import claim_job

    token = f"test-{uuid.uuid4().hex[:8]}"
    assert claim_job(job.pk, token) is not None
    return token


def queued_sweep(team: Any, device: Any, zoo: Sequence[str] = NETWORKS) -> Any:
    """A fusion sweep job submitted through ``submit_fusion_sweep``, queued."""
    from server.fusion.services import submit_fusion_sweep

    return submit_fusion_sweep(team, device, {"zoo": list(zoo), "spec": {"sizes": [2, 3], "runs": 10}})


def stored_sweep(team: Any, device: Any, rows: Sequence[RowSpec] | None = None, **kw: Any) -> Any:
    """A fusion sweep job, claimed and stored: succeeded, with ``rows`` (``realistic_rows()``)."""
    from server.fusion.services import ingest_sweep

    job = queued_sweep(team, device)
    token = claim(job)
    result = FusionSweepRecord.from_dict(sweep_result(realistic_rows() if rows is None else rows, **kw))
    assert ingest_sweep(job.pk, token, result) is not None
    job.refresh_from_db()
    return job


def stored_plan(team: Any, device: Any, comparison: dict[str, Any] | None = None) -> Any:
    """A fusion plan job (two MobileNet-V2) submitted through ``submit_fusion_plan``, claimed and stored."""
    from server.fusion.services import ingest_plan, submit_fusion_plan

    job = submit_fusion_plan(team, device, {"zoo": ["mobilenet_v2", "mobilenet_v2"], "sweep": False})
    token = claim(job)
    assert ingest_plan(job.pk, token, FusionPlanRecord.from_dict(comparison or plan_comparison())) is not None
    job.refresh_from_db()
    return job
