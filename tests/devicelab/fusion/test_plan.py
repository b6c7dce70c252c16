"""The fusion planner without a device: dependencies from buffers, schedules that respect them,
groups of ready kernels only, benefits measured or modelled, and the same plan every time."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devicelab.fusion.plan import (
    FUSE_ALL,
    PLAN,
    SEQUENTIAL,
    FusionPlan,
    PlanKernel,
    buffer_dependencies,
    check_kernels,
    interleave,
    plan_fuse_all,
    plan_fusion,
    plan_sequential,
)
from devicelab.fusion.plan_calibrate import KernelTimes, Probe, calibrate_model
from devicelab.fusion.plan_model import (
    ALONE,
    MEASURED,
    MODEL,
    LatencyModel,
    MeasuredTable,
    fit_fusion_costs,
    fit_kernel_rates,
    fusion_costs_from_rows,
    measured_table,
)

WAVE = 8
# launches cost as much as small kernels: fusing any two small kernels wins by the model
CHEAP_FUSION = LatencyModel(launch_ms=0.05, work_factor=1.0, padding_item_ms=0.0, base_ms=0.01)
# fused work takes three times as long: the model never fuses
COSTLY_FUSION = LatencyModel(launch_ms=0.001, work_factor=3.0, padding_item_ms=0.0, base_ms=0.0)


def kernel(
    index: int, graph: str, name: str, kind: str | None, after: tuple[int, ...] = (), **kw: object
) -> PlanKernel:
    values: dict[str, object] = {
        "mflops": 1.0,
        "mbytes": 0.1,
        "global_size": (64, 4),
        "local_size": (8, 1),
        "measured_ms": 0.05,
    }
    values.update(kw)
    return PlanKernel(index=index, graph=graph, model=graph, name=name, kernel="k", kind=kind, after=after, **values)  # type: ignore[arg-type]


def two_chains(kinds_a: tuple[str | None, ...], kinds_b: tuple[str | None, ...]) -> list[PlanKernel]:
    """Two graphs, each a chain, interleaved round-robin."""
    order = interleave([len(kinds_a), len(kinds_b)])
    index = {pos: i for i, pos in enumerate(order)}
    out = []
    for i, (g, p) in enumerate(order):
        kinds = (kinds_a, kinds_b)[g]
        after = (index[(g, p - 1)],) if p else ()
        out.append(kernel(i, "ab"[g], f"k{p}", kinds[p], after))
    return out


def diamond() -> list[PlanKernel]:
    """One graph: a stem, three branches (one of two kernels), and a join."""
    return [
        kernel(0, "g", "stem", "C"),
        kernel(1, "g", "b1", "C_1x1", (0,)),
        kernel(2, "g", "b2a", "C_1x1", (0,)),
        kernel(3, "g", "b3", "P", (0,)),
        kernel(4, "g", "b2b", "C", (2,)),
        kernel(5, "g", "join", None, (1, 3, 4)),
    ]


def ancestors(kernels: list[PlanKernel]) -> list[set[int]]:
    out: list[set[int]] = []
    for k in kernels:
        seen: set[int] = set()
        for a in k.after:
            seen |= {a} | out[a]
        out.append(seen)
    return out


def assert_valid(plan: FusionPlan) -> None:
    """Every kernel once, after everything it follows, and never with a kernel it depends on."""
    kernels = list(plan.kernels)
    step = plan.step_of()
    assert sorted(step) == list(range(len(kernels)))
    assert sum(len(s.kernels) for s in plan.steps) == len(kernels)
    up = ancestors(kernels)
    for k in kernels:
        for a in k.after:
            assert step[a] < step[k.index], f"{k.label} runs at step {step[k.index]}, before {a}"
    for s in plan.steps:
        for i in s.kernels:
            assert not up[i] & set(s.kernels), f"step {s.index} fuses {s.kernels}: {i} depends on another"


# -- dependencies ----------------------------------------------------------------------------


def test_buffer_dependencies_follow_reads_and_writes() -> None:
    deps = buffer_dependencies(
        [
            ({"x"}, {"a"}),  # 0 writes a
            ({"x"}, {"b"}),  # 1 independent of 0
            ({"a"}, {"c"}),  # 2 reads a: after 0
            ({"b"}, {"a"}),  # 3 overwrites a, which 2 reads and 0 wrote: after 0, 1, 2
            ({"c", "a"}, {"d"}),  # 4 reads c (2) and the new a (3), not the old writer 0
        ]
    )
    assert deps == [(), (), (0,), (0, 1, 2), (2, 3)]


def test_kernels_that_write_one_buffer_are_ordered() -> None:
    # a concat's parts write one buffer: they must not be ready together
    assert buffer_dependencies([({"p"}, {"out"}), ({"q"}, {"out"}), ({"r"}, {"out"})]) == [(), (0,), (1,)]


def test_interleave_round_robins_over_graphs() -> None:
    assert interleave([3, 1, 2]) == [(0, 0), (1, 0), (2, 0), (0, 1), (2, 1), (0, 2)]
    assert interleave([]) == []


def test_kernels_must_follow_earlier_kernels_only() -> None:
    with pytest.raises(ValueError, match="not earlier kernels"):
        check_kernels([kernel(0, "g", "a", "C", (1,)), kernel(1, "g", "b", "C")])
    with pytest.raises(ValueError, match="index"):
        check_kernels([kernel(1, "g", "a", "C")])


# -- schedules ---------------------------------------------------------------------------------


def test_sequential_runs_every_kernel_alone_in_order() -> None:
    kernels = two_chains(("C_1x1", "DWC"), ("C_1x1", "DWC", "EW"))
    plan = plan_sequential(kernels, CHEAP_FUSION, wave_size=WAVE)
    assert plan.strategy == SEQUENTIAL
    assert [s.kernels for s in plan.steps] == [(i,) for i in range(5)]
    assert {s.prediction.source for s in plan.steps} == {ALONE}
    assert_valid(plan)


def test_two_graphs_in_step_fuse_pairwise_when_it_pays() -> None:
    kernels = two_chains(("C_1x1", "DWC", "C_1x1"), ("C_1x1", "DWC", "C_1x1"))
    plan = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE)
    assert plan.strategy == PLAN
    assert_valid(plan)
    assert [tuple(kernels[i].graph for i in s.kernels) for s in plan.steps] == [("a", "b")] * 3
    assert all(s.prediction.source == MODEL and s.prediction.throughput > 1 for s in plan.steps)
    assert plan.launches == 3 and plan.fused_launches == 3


def test_a_chain_is_never_fused() -> None:
    chain = [kernel(i, "g", f"k{i}", "C_1x1", (i - 1,) if i else ()) for i in range(5)]
    for plan in (
        plan_fusion(chain, CHEAP_FUSION, wave_size=WAVE),
        plan_fuse_all(chain, CHEAP_FUSION, wave_size=WAVE),
    ):
        assert plan.fused_launches == 0 and plan.launches == 5
        assert_valid(plan)


def test_branches_fuse_only_ready_kernels() -> None:
    kernels = diamond()
    plan = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE)
    assert_valid(plan)
    groups = [set(s.kernels) for s in plan.steps]
    assert {1, 2, 3} in groups  # the three branch heads, ready together
    assert {0} in groups and {5} in groups  # the stem and the join cannot meet anyone
    every = plan_fuse_all(kernels, CHEAP_FUSION, wave_size=WAVE)
    assert_valid(every)
    assert [set(s.kernels) for s in every.steps] == [{0}, {1, 2, 3}, {4}, {5}]
    assert every.strategy == FUSE_ALL and every.max_group is None


def test_max_group_caps_the_groups() -> None:
    kernels = diamond()
    plan = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, max_group=2)
    assert_valid(plan)
    assert max(len(s.kernels) for s in plan.steps) == 2
    alone = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, max_group=1)
    assert alone.fused_launches == 0


def test_the_largest_predicted_saving_wins() -> None:
    # three ready kernels; the big ones saves most together: the planner must pick them first
    kernels = [
        kernel(0, "a", "small", "EW", measured_ms=0.01),
        kernel(1, "b", "big1", "C", measured_ms=1.0),
        kernel(2, "c", "big2", "C", measured_ms=1.0),
    ]
    model = LatencyModel(launch_ms=0.01, work_factor=0.8, base_ms=0.0)
    plan = plan_fusion(kernels, model, wave_size=WAVE, max_group=2)
    assert plan.steps[0].kernels == (1, 2)
    assert plan.steps[0].prediction.saving_ms == pytest.approx(0.4 + 0.01)


def test_groups_predicted_no_faster_are_never_fused() -> None:
    kernels = two_chains(("C_1x1", "DWC"), ("C_1x1", "DWC"))
    assert plan_fusion(kernels, COSTLY_FUSION, wave_size=WAVE).fused_launches == 0
    # a measured throughput of exactly 1 is no gain either
    even = MeasuredTable.from_mapping({("C_1x1", "C_1x1"): 1.0, ("DWC", "DWC"): 1.0, ("C_1x1", "DWC"): 1.0})
    assert plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, measured=even).fused_launches == 0


def test_a_minimum_throughput_asks_for_a_clear_gain() -> None:
    kernels = two_chains(("C_1x1", "DWC"), ("C_1x1", "DWC"))
    table = MeasuredTable.from_mapping({("C_1x1", "C_1x1"): 1.03, ("DWC", "DWC"): 1.2, ("C_1x1", "DWC"): 0.5})
    plan = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, measured=table, min_throughput=1.05)
    assert [s.kernels for s in plan.steps if s.fused] == [(2, 3)]  # the DWC pair clears 1.05, the 1x1 pair not
    with pytest.raises(ValueError, match="min_throughput"):
        plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, min_throughput=0.9)


def test_padding_makes_the_model_refuse() -> None:
    # a long row beside a tall block: the fused launch is mostly padding
    kernels = [
        kernel(0, "a", "row", "EW", global_size=(4096, 1), local_size=(64, 1)),
        kernel(1, "b", "tall", "EW", global_size=(8, 512), local_size=(8, 1)),
    ]
    padded = LatencyModel(launch_ms=0.05, work_factor=1.0, padding_item_ms=1e-4, base_ms=0.0)
    plan = plan_fusion(kernels, padded, wave_size=WAVE)
    assert plan.fused_launches == 0
    fused = plan_fuse_all(kernels, padded, wave_size=WAVE)
    assert fused.steps[0].prediction.padding_fraction > 0.9
    assert fused.steps[0].prediction.throughput < 1
    # the fuser's own layout (a packed one) has no padding: the model fuses
    packed = plan_fusion(kernels, padded, wave_size=WAVE, padding_of=lambda g: (0, 8192))
    assert packed.fused_launches == 1 and packed.steps[0].prediction.padding == 0
    # where the fuser says nothing (None), the paper layout's padding is estimated
    unknown = plan_fuse_all(kernels, padded, wave_size=WAVE, padding_of=lambda g: None)
    assert unknown.steps[0].prediction.padding == fused.steps[0].prediction.padding


def test_measured_benefits_come_first_and_say_so() -> None:
    kernels = two_chains(("C_1x1", "DWC", None), ("C_1x1", "P", None))
    modelled = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE)
    assert [s.kernels for s in modelled.steps] == [(0, 1), (2, 3), (4, 5)]  # the model fuses every pair
    # measured: the 1x1 pair gains, DWC + P loses
    table = MeasuredTable.from_mapping({("C_1x1", "C_1x1"): 1.5, ("P", "DWC"): 0.8})
    plan = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, measured=table)
    assert_valid(plan)
    by_kinds = {tuple(kernels[i].kind for i in s.kernels): s.prediction for s in plan.steps}
    assert by_kinds[("C_1x1", "C_1x1")].source == MEASURED
    assert by_kinds[("C_1x1", "C_1x1")].throughput == pytest.approx(1.5)
    assert ("DWC", "P") not in by_kinds and by_kinds[("DWC",)].source == ALONE  # measured as a loss
    assert by_kinds[("P", None)].source == MODEL  # a kernel of no kind: the model decides
    assert plan.sources == {MEASURED: 1, MODEL: 1}


def test_the_fusers_refusals_are_respected() -> None:
    kernels = diamond()
    refused = {2}  # the fuser takes no group with kernel 2
    plan = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, accept=lambda g: not refused & set(g))
    every = plan_fuse_all(kernels, CHEAP_FUSION, wave_size=WAVE, accept=lambda g: not refused & set(g))
    for p in (plan, every):
        assert_valid(p)
        assert all(not (s.fused and 2 in s.kernels) for s in p.steps)
        assert any(set(s.kernels) == {1, 3} for s in p.steps)


def test_plans_are_deterministic() -> None:
    kernels = two_chains(("C_1x1", "DWC", "C_1x1", "EW", None), ("C", "P", "C_1x1", "FC")) + []
    table = MeasuredTable.from_mapping({("C_1x1", "C_1x1"): 1.2, ("C", "C_1x1"): 1.1})
    first = plan_fusion(kernels, CHEAP_FUSION, wave_size=WAVE, measured=table).as_dict()
    again = plan_fusion(list(kernels), CHEAP_FUSION, wave_size=WAVE, measured=table).as_dict()
    assert first == again
    json.dumps(first, allow_nan=False)


# -- measured tables and the model ----------------------------------------------------------------


def test_measured_table_from_sweep_rows() -> None:
    rows: list[dict[str, Any]] = [
        {"kinds": ["DWC", "C_1x1"], "throughput": 1.1, "variant": "rounded", "experiment": "combination"},
        {"kinds": ["C_1x1", "DWC"], "throughput": 1.3, "variant": "rounded", "experiment": "combination"},
        {"kinds": ["C_1x1", "DWC"], "throughput": 1.2, "variant": "rounded", "experiment": "combination"},
        {"kinds": ["C_1x1", "DWC"], "throughput": 9.0, "variant": "unrounded", "experiment": "combination"},
        {"kinds": ["C_1x1", "DWC"], "throughput": 9.0, "variant": "rounded", "correct": False},
        {"kinds": ["P", "P"], "throughput": None, "variant": "rounded", "error": "refused"},
        {"kinds": ["EW", "EW", "EW"], "throughput": 0.5, "variant": "rounded", "experiment": "identical"},
    ]
    table = measured_table(rows, round_to_wave=True)
    assert len(table) == 2
    hit = table.lookup(["DWC", "C_1x1"])
    assert hit is not None and hit.throughput == pytest.approx(1.2) and hit.rows == 3
    assert hit.kinds == ("C_1x1", "DWC")
    assert table.lookup(["EW", "EW", "EW"]) is not None and table.lookup(["EW", "EW"]) is None
    assert table.lookup(["C_1x1", None]) is None
    unrounded = measured_table(rows, round_to_wave=False)
    hit = unrounded.lookup(["C_1x1", "DWC"])
    assert hit is not None and hit.throughput == 9.0
    assert measured_table({("DWC", "C_1x1"): 1.04}).as_dict() == [
        {"kinds": ["C_1x1", "DWC"], "throughput": 1.04, "rows": 0, "experiments": []}
    ]


def test_fits_recover_known_constants() -> None:
    mflops = [1.0, 2.0, 5.0, 10.0, 3.0]
    mbytes = [0.5, 0.1, 2.0, 1.0, 4.0]
    times = [0.01 + 0.02 * f + 0.03 * b for f, b in zip(mflops, mbytes, strict=True)]
    fit = fit_kernel_rates(mflops, mbytes, times)
    assert fit.coefficients == pytest.approx((0.01, 0.02, 0.03), rel=1e-6)
    assert fit.median_relative_error < 1e-9
    work = [0.1, 0.3, 0.2, 0.5]
    padding = [0, 1000, 5000, 200]
    fused = [1.5 * w + 2e-5 * p for w, p in zip(work, padding, strict=True)]
    costs = fit_fusion_costs(work, padding, fused)
    assert costs.coefficients == pytest.approx((1.5, 2e-5), rel=1e-6)
    one = fit_fusion_costs([0.2], [100], [0.1])
    assert one.coefficients == pytest.approx((0.5, 0.0))


def test_sweep_rows_give_fusion_timings() -> None:
    row = {
        "kinds": ["C", "P"],
        "size": 2,
        "variant": "rounded",
        "padding": 128,
        "sequential": {"device": {"median": 1.0}},
        "fused": {"device": {"median": 0.8}},
    }
    timings = fusion_costs_from_rows([row, {**row, "variant": "unrounded"}, {**row, "error": "x"}], 0.1, True)
    assert len(timings) == 1
    assert timings[0].kernels_ms == pytest.approx(0.9) and timings[0].padding_items == 128
    assert fusion_costs_from_rows([{**row, "padding": None}], 0.1, True) == []


def test_model_predictions() -> None:
    model = LatencyModel(launch_ms=0.01, work_factor=0.8, padding_item_ms=1e-3, base_ms=0.02)
    assert model.alone_ms(0.1) == pytest.approx(0.11)
    # launch + base + 0.8 * (0.08 + 0.28) + 10 padding work-items
    assert model.fused_ms([0.1, 0.3], 10) == pytest.approx(0.01 + 0.02 + 0.288 + 0.01)
    # never below the longest part's work
    assert model.fused_ms([0.02, 1.02], 0) == pytest.approx(0.01 + 0.02 + 1.0)
    d = model.as_dict()
    assert d["work_factor"] == 0.8 and d["calibration"] == "defaults"


def test_calibration_says_where_its_constants_came_from() -> None:
    mbytes = (0.3, 0.1, 0.7, 0.2, 0.9, 0.4)
    kernels = [kernel(i, "g", f"k{i}", "C", mflops=float(i + 1), mbytes=mb) for i, mb in enumerate(mbytes)]
    times = KernelTimes(tuple(0.01 + 0.02 * k.mflops + 0.04 * k.mbytes for k in kernels), 0.005, 3)
    bare = calibrate_model(kernels, times)
    assert bare.calibration == "device kernel times; fusion costs defaulted" and bare.work_factor == 1.0
    assert (bare.base_ms, bare.ms_per_mflop, bare.ms_per_mb) == pytest.approx((0.01, 0.02, 0.04), rel=1e-6)
    assert bare.launch_ms == 0.005
    # probes whose fused work takes 1.5 times the parts' work (the fixed part paid once)
    probes = [
        Probe((0, 1), ("g/k0", "g/k1"), 0, 0.1, 0.03 + 0.05, 0.01 + 1.5 * (0.02 + 0.04)),
        Probe((2, 3), ("g/k2", "g/k3"), 0, 0.3, 0.09 + 0.13, 0.01 + 1.5 * (0.08 + 0.12)),
    ]
    probed = calibrate_model(kernels, times, probes)
    assert probed.calibration == "device kernel times; fusion costs from device probes"
    assert probed.work_factor == pytest.approx(1.5, rel=1e-6) and probed.padding_item_ms == 0.0
    row = {"kinds": ["C", "C"], "size": 2, "variant": "rounded", "padding": 0}
    rows: list[dict[str, Any]] = [
        {**row, "sequential": {"device": {"median": 0.205}}, "fused": {"device": {"median": 0.01 + 0.9 * 0.18}}},
        {**row, "sequential": {"device": {"median": 0.405}}, "fused": {"device": {"median": 0.01 + 0.9 * 0.38}}},
    ]
    swept = calibrate_model(kernels, times, probes, rows)  # rows with timings come first
    assert swept.calibration == "device kernel times; fusion costs from sweep rows"
    assert swept.work_factor == pytest.approx(0.9, rel=1e-6)
