"""Fusion sweeps on the device: the pool of classified operators, seeded plans and sampling, rows
of combinations and of identical operators (figure 9) with checked outputs, progress and stopping.

Small graphs and few runs: these check what a sweep measures and records, never how fast."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import numpy as np
import pytest

from devicelab.fusion.compare import SENTINELS, compare_outputs
from devicelab.fusion.kinds import classify_kernels
from devicelab.fusion.pool import load_pool, table1_models
from devicelab.fusion.sweep import COMBINATION, IDENTICAL, SweepSpec, plan_sweep, run_sweep
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph

QUICK: dict[str, Any] = {"warmup": 1, "runs": 3}


def branches() -> Graph:
    """Independent operators of every kind off one input (and a concat of no kind)."""
    b = GraphBuilder("branches", (1, 8, 15, 17))
    x = b.input
    outs = [
        b.conv(x, 6, 3, name="c3"),
        b.conv(x, 12, 1, name="pw"),
        b.max_pool(x, 3, stride=2, name="pool"),
        b.dwconv(x, 3, stride=2, name="dw2"),
        b.dwconv(x, 3, name="dw1"),
        b.relu(x, name="ew"),
    ]
    s = b.relu(b.conv(x, 4, 1, name="squeeze"))
    outs.append(b.concat([b.relu(b.conv(s, 6, 1, name="e1")), b.relu(b.conv(s, 6, 3, pad=1, name="e3"))]))
    outs.append(b.fc(b.flatten(b.global_avg_pool(x, name="gap")), 10, name="fc"))
    return b.build(outs)


def chain() -> Graph:
    """A second network whose operators depend on one another (private outputs make them fusable)."""
    b = GraphBuilder("chain", (1, 5, 13, 11))
    x = b.relu(b.conv(b.input, 7, 3, stride=2, name="conv"))
    x = b.max_pool(x, 3, stride=1, pad=1, name="pool")
    return b.build(b.add(x, x, name="add"))


@pytest.fixture(scope="module")
def pool(found):
    with load_pool(found, [branches(), chain()]) as loaded:
        yield loaded


def test_the_pool_holds_every_kernel_with_a_kind(pool) -> None:
    assert pool.models == ("branches", "chain")
    for model, runner in pool.runners.items():
        kinded = [k for k in classify_kernels(runner.graph, runner.plan) if k.kind is not None]
        ops = pool.of_model(model)
        assert [(o.ref.name, o.kind, o.ref.mflops) for o in ops] == [(k.name, k.kind, k.mflops) for k in kinded]
        assert all(o.sub.label == o.ref.name and o.sub.global_size == o.ref.global_size for o in ops)
    assert pool.unkinded == {"branches": 2, "chain": 0}  # the concat's two copies
    counts = {k: len(v) for k, v in pool.by_kind().items()}
    assert counts == {"C": 3, "C_1x1": 2, "S": 1, "P": 3, "DWC": 1, "DWC_s1": 1, "FC": 1, "EW": 2}
    assert all(m in table1_models() for m in ("mobilenet_v2", "squeezenet_1_0", "inception_v3"))
    assert len(table1_models()) == 6


def test_plans_are_seeded_and_sample_when_over_the_budget(pool) -> None:
    spec = SweepSpec(sizes=(2, 3), kinds=("C", "P", "EW", "DWC"), identical_counts=(), max_combinations=5)
    plan = plan_sweep(pool, spec)
    assert [(c.size, c.total, c.planned) for c in plan.combinations] == [(2, 10, 5), (3, 20, 5)]  # with repetition
    assert plan.sampled and len(plan.units) == 10
    assert "sampled 5 of 20 3-combinations of kinds with seed 0" in plan.notes

    def picked(p):
        return sorted((u.kinds, tuple((o.ref.model, o.ref.name) for o in u.operators)) for u in p.units)

    assert picked(plan_sweep(pool, spec)) == picked(plan)  # same seed: same combinations, same operators
    assert picked(plan_sweep(pool, dataclasses.replace(spec, seed=1))) != picked(plan)
    for unit in plan.units:
        assert tuple(o.kind for o in unit.operators) == unit.kinds
        assert list(unit.kinds) == sorted(unit.kinds, key=("C", "P", "DWC", "EW").index)
        c_ops = [o.ref.name for o in unit.operators if o.kind == "C"]
        assert len(set(c_ops)) == len(c_ops)  # three C operators in the pool: distinct ones
    everything = plan_sweep(pool, SweepSpec(sizes=(2,), repeats=False, identical_counts=(), max_combinations=None))
    assert not everything.sampled and len(everything.units) == math.comb(8, 2)


def test_a_kind_missing_from_the_pool_is_left_out_and_said(found) -> None:
    b = GraphBuilder("convs", (1, 4, 9, 11))
    with load_pool(found, [b.build([b.conv(b.input, 5, 3, name="a"), b.conv(b.input, 6, 1, name="b")])]) as small:
        plan = plan_sweep(small, SweepSpec(sizes=(2,), kinds=("C", "C_1x1", "FC"), identical_counts=()))
    assert [u.kinds for u in sorted(plan.units, key=lambda u: u.kinds)] == [
        ("C", "C"),
        ("C", "C_1x1"),
        ("C_1x1", "C_1x1"),
    ]
    assert plan.operators_per_kind == {"C": 1, "C_1x1": 1, "FC": 0}
    assert any("no operator of kind FC" in n for n in plan.notes)
    same = next(u for u in plan.units if u.kinds == ("C", "C"))
    assert same.operators[0] is same.operators[1]  # one C operator: fused with itself


def test_combination_rows_are_measured_checked_and_plain(pool) -> None:
    spec = SweepSpec(sizes=(2,), kinds=("C", "P", "EW"), identical_counts=(), **QUICK)
    result = run_sweep(pool, spec)
    assert result.planned_units == result.measured_units == 6 and not result.sampled
    assert len(result.rows) == 12
    assert [r.variant for r in result.rows] == ["rounded", "unrounded"] * 6
    assert {r.kinds for r in result.rows} == {
        ("C", "C"),
        ("C", "P"),
        ("C", "EW"),
        ("P", "P"),
        ("P", "EW"),
        ("EW", "EW"),
    }
    by_name = {(o.ref.model, o.ref.name): o.ref for o in pool.operators}
    for row in result.rows:
        assert row.experiment == COMBINATION and row.size == 2 and not row.error
        assert tuple(o.kind for o in row.operators) == row.kinds
        assert row.mflops == tuple(by_name[(o.model, o.name)].mflops for o in row.operators)
        assert row.correct is True and row.check is not None and row.check.max_relative_error <= 1e-6
        for side in (row.sequential, row.fused):
            assert side is not None and side.device.n == 3 and len(side.device_samples_ms) == 3
            assert len(side.wall_samples_ms) == 3 and side.device.median > 0
            # a kernel's own time lies within the span of the launches around it
            assert len(side.busy_samples_ms) == 3
            assert all(0 < b <= d * (1 + 1e-9) for b, d in zip(side.busy_samples_ms, side.device_samples_ms))
        assert row.ratio is not None and row.busy_ratio is not None and row.ratio.rounds == 3
        assert row.throughput == row.ratio.ratio and row.ratio.low <= row.ratio.ratio <= row.ratio.high
        assert row.wave_size == pool.found.limits.wave_size
        assert row.fused_global_size is not None and row.fused_global_size[0] >= sum(
            o.global_size[0] for o in row.operators
        )
    rounded, unrounded = result.rows[0], result.rows[1]
    # each variant against its own kernels rewritten alone in its rounding, interleaved with both
    assert rounded.sequential is not unrounded.sequential
    assert {(r.requested_layout, r.layout) for r in result.rows} == {("auto", "packed")}  # our kernels pack
    plain = json.loads(json.dumps(result.as_dict()))
    assert plain["rows"][0]["kinds"] == list(result.rows[0].kinds) and plain["rows"][0]["correct"] is True
    assert plain["rows"][0]["ratio"]["verdict"] in ("above", "below", "within noise")
    assert plain["rows"][0]["layout"] == "packed" and plain["rows"][0]["requested_layout"] == "auto"
    assert plain["operators_per_kind"]["C"] == 3 and plain["spec"]["kinds"] == ["C", "P", "EW"]


def test_a_sweep_can_measure_the_paper_layout_beside_the_default(pool) -> None:
    spec = SweepSpec(sizes=(2,), kinds=("P", "EW"), identical_counts=(), layouts=("auto", "paper"), **QUICK)
    result = run_sweep(pool, spec)
    assert len(result.rows) == 3 * 4  # P+P, P+EW, EW+EW; two layouts, two roundings each
    assert [(r.requested_layout, r.variant) for r in result.rows[:4]] == [
        ("auto", "rounded"),
        ("auto", "unrounded"),
        ("paper", "rounded"),
        ("paper", "unrounded"),
    ]
    for i in range(0, len(result.rows), 4):
        packed, _, paper, _ = result.rows[i : i + 4]
        assert packed.layout == "packed" and paper.layout == "paper" and packed.operators == paper.operators
        assert packed.sequential is not paper.sequential  # each layout against its own kernels alone
        assert packed.fused_global_size is not None and len(packed.fused_global_size) == 1
        assert packed.padding is not None and paper.padding is not None and packed.padding <= paper.padding
    assert all(r.correct is True and not r.error for r in result.rows)
    assert json.loads(json.dumps(spec.as_dict()))["layouts"] == ["auto", "paper"]
    with pytest.raises(ValueError, match=r"layouts\[0\] 'rows' is not one of auto, packed, paper"):
        SweepSpec(layouts=("rows",))
    with pytest.raises(ValueError, match=r"layouts must have at least 1 item\(s\), got 0"):
        SweepSpec(layouts=())


def test_identical_operators_fused_n_at_a_time(pool) -> None:
    spec = SweepSpec(sizes=(), kinds=("C", "P", "EW"), identical_counts=(1, 2, 3), wave_size=64, **QUICK)
    result = run_sweep(pool, spec)
    assert {r.experiment for r in result.rows} == {IDENTICAL}
    assert len(result.rows) == 2 * 3 * 2  # two networks, N = 1..3, two variants
    for model in pool.models:
        mine = [r for r in result.rows if r.operators[0].model == model]
        assert [(r.size, r.variant) for r in mine] == [(n, v) for n in (1, 2, 3) for v in ("rounded", "unrounded")]
        assert len({r.operators[0].name for r in mine}) == 1  # one operator, N copies of it
        for r in mine:
            assert len(set(r.operators)) == 1 and r.kinds == (r.operators[0].kind,) * r.size
            assert r.correct is True and r.wave_size == 64
            assert r.fused_global_size is not None
            if r.rounded:
                assert r.fused_global_size[0] % 64 == 0  # every part rounded to the wave
            assert r.throughput is not None and r.throughput > 0


def test_one_operator_fused_alone_is_the_same_kernel_on_both_sides(found) -> None:
    # "1 x EW" read 1.82x: the sequential side was the library's 2-D kernel, the fused side the
    # packed rewrite whose get_global_id(1) is the constant 0, which the compiler simplifies. A
    # 2-D element-wise add of a (1, 16, 56, 56) tensor shows it on PoCL; against the kernel
    # rewritten alone nothing is fused and the ratio is 1 within the clock's noise.
    b = GraphBuilder("wide_add", (1, 16, 56, 56))
    graph = b.build(b.add(b.input, b.input, name="add"))
    spec = SweepSpec(sizes=(), kinds=("EW",), identical_counts=(1,), warmup=2, runs=15, rounding=(True,))
    with load_pool(found, [graph]) as one:
        (row,) = run_sweep(one, spec).rows
    assert row.size == 1 and row.correct is True and row.ratio is not None and row.busy_ratio is not None
    assert 0.85 < row.ratio.ratio < 1.15 and 0.85 < row.busy_ratio.ratio < 1.15, row.ratio.label()


def test_progress_never_goes_back_and_the_callback_stops_a_sweep(pool) -> None:
    spec = SweepSpec(sizes=(2,), kinds=("C", "P", "EW"), identical_counts=(), **QUICK)
    seen: list[tuple[float, str]] = []
    run_sweep(pool, spec, lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and fractions[-1] == 1.0
    assert len(seen) >= 6 and any("measured (6/6)" in m for _, m in seen)

    class Stop(Exception):
        pass

    calls: list[float] = []

    def stop_halfway(fraction: float, message: str) -> None:
        calls.append(fraction)
        if fraction >= 0.5:
            raise Stop

    with pytest.raises(Stop):
        run_sweep(pool, spec, stop_halfway)
    assert calls[-1] >= 0.5 and calls[-1] < 1.0
    assert len(run_sweep(pool, spec).rows) == 12  # the pool is still loaded and usable


def test_a_time_budget_stops_early_and_says_so(pool) -> None:
    result = run_sweep(pool, SweepSpec(sizes=(2,), kinds=("C", "P"), time_budget_s=1e-9, **QUICK))
    assert result.measured_units == 0 and result.rows == () and result.sampled
    assert any("time budget" in n and f"measured 0 of {result.planned_units}" in n for n in result.notes)


def test_outputs_are_compared_bit_for_bit_or_within_1e6() -> None:
    want = np.array([1.0, -2.0, 4.0, SENTINELS[0]], np.float32)  # the last element is never written

    def fused(values: list[float]) -> np.ndarray:
        return np.array([*values, SENTINELS[1]], np.float32)

    same = compare_outputs([want], [fused([1.0, -2.0, 4.0])])
    assert same.correct and same.bitwise and same.max_relative_error == 0.0
    close = compare_outputs([want], [fused([1.0, -2.0, 4.0 + 2e-6])])
    assert close.correct and not close.bitwise and 0 < close.max_relative_error <= 1e-6
    off = compare_outputs([want], [fused([1.0, -2.0, 4.001])])
    assert not off.correct and "relative" in off.note
    unwritten = compare_outputs([want], [np.array([1.0, SENTINELS[1], 4.0, SENTINELS[1]], np.float32)])
    assert not unwritten.correct and "1 elements written by one side" in unwritten.note
    nothing = compare_outputs([np.full(3, SENTINELS[0], np.float32)], [np.full(3, SENTINELS[1], np.float32)])
    assert not nothing.correct and "wrote nothing" in nothing.note
