"""A stored fusion sweep summarized as seed paper 000 draws it (figures 8a, 8b, 9, 10), with
refused rows left out of the figures and counted, and wrong outputs counted."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.fusion.sweep import IDENTICAL
from server.fusion import summary
from server.fusion.models import FusionSweepResult
from tests.server.fusion_factories import RowSpec, both, stored_sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def sweep(make_member: Callable[..., Any], make_device: Callable[..., Any]) -> FusionSweepResult:
    """The factories' realistic sweep, stored through ingest_sweep."""
    job = stored_sweep(make_member().team, make_device(kind="opencl"))
    return FusionSweepResult.objects.get(job=job)


def test_the_pair_matrix_has_the_paired_ratio_and_count_of_each_unordered_pair(sweep: FusionSweepResult) -> None:
    matrix = summary.pair_matrix(sweep)
    # P+EW was refused in both variants: P stays (P+P), the pair is absent
    assert matrix.kinds == ("C", "C_1x1", "P", "DWC", "EW")
    assert matrix.variants == ("rounded", "unrounded")
    drawn_twice = matrix.cell("rounded", "C_1x1", "C")  # either order
    assert drawn_twice is not None and drawn_twice.kinds == ("C", "C_1x1")
    # drawn twice: the rounds of both rows pooled, the ratio between the two rows' own
    assert drawn_twice.count == 2 and 1.04 < drawn_twice.ratio < 1.10 and drawn_twice.estimate.rounds == 20
    assert drawn_twice.estimate.verdict == "above" and drawn_twice.busy is not None
    assert 1.01 < matrix.cell("unrounded", "C", "C_1x1").ratio < 1.07  # type: ignore[union-attr]
    p_p = matrix.cell("rounded", "P", "P")
    assert p_p is not None and p_p.ratio == pytest.approx(0.25) and p_p.estimate.verdict == "below"
    assert matrix.cell("rounded", "P", "EW") is None  # refused: not drawn
    assert matrix.cell("rounded", "C", "EW") is None  # never measured
    assert matrix.cell("rounded", "DWC", "EW").count == 1  # type: ignore[union-attr]  # wrong output, still drawn
    assert sum(len(cells) for cells in matrix.cells.values()) == 2 * 6
    noisy = matrix.cell("rounded", "DWC", "C_1x1")
    assert (
        noisy is not None and noisy.estimate.verdict == "within noise" and noisy.estimate.low < 1 < noisy.estimate.high
    )
    assert matrix.counts("rounded") == {"above": 1, "below": 4, "within_noise": 1}


def test_triples_keep_every_row_with_its_kinds_per_variant(sweep: FusionSweepResult) -> None:
    by_variant = summary.triples(sweep)
    assert list(by_variant) == ["rounded", "unrounded"]
    rounded = by_variant["rounded"]
    assert [p.kinds for p in rounded] == [("C", "C_1x1", "DWC"), ("C", "P", "EW"), ("C_1x1", "C_1x1", "EW")]
    assert [p.throughput for p in rounded] == pytest.approx([1.13, 0.40, 0.87])
    assert [p.throughput for p in by_variant["unrounded"]] == pytest.approx([1.05, 0.38, 0.90])


def test_identical_operators_give_a_line_per_network_operator_and_variant(sweep: FusionSweepResult) -> None:
    series = summary.identical_series(sweep)
    assert [(s.model, s.kind, s.variant) for s in series] == [
        ("mobilenet_v2", "C_1x1", "rounded"),
        ("mobilenet_v2", "C_1x1", "unrounded"),
        ("squeezenet_1_0", "DWC", "rounded"),
        ("squeezenet_1_0", "DWC", "unrounded"),
    ]
    first = series[0]
    assert first.operator == "c_1x1_0" and first.label == "mobilenet_v2 · c_1x1_0 (C_1x1)"
    assert [p.n for p in first.points] == [1, 2, 3, 4]
    assert [p.throughput for p in first.points] == pytest.approx([1.0, 1.03, 1.06, 1.09])
    assert [p.throughput for p in series[3].points] == pytest.approx([1.0, 0.98, 0.96, 0.94])


def test_the_median_over_rows_at_one_n_when_an_operator_is_drawn_again(
    make_member: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    rows = [
        RowSpec(("EW",) * 2, "rounded", 1.2, experiment=IDENTICAL),
        RowSpec(("EW",) * 2, "rounded", 1.0, experiment=IDENTICAL),
        RowSpec(("EW",) * 2, "rounded", 0.5, experiment=IDENTICAL),
    ]
    sweep = FusionSweepResult.objects.get(job=stored_sweep(make_member().team, make_device(kind="opencl"), rows))
    (line,) = summary.identical_series(sweep)
    assert line.points[0].n == 2 and line.points[0].count == 3 and line.points[0].throughput == pytest.approx(1.0)
    assert summary.pair_matrix(sweep).kinds == () and summary.triples(sweep) == {} and summary.headlines(sweep) == []


def test_mflops_points_are_the_combination_rows_with_gain_or_loss(sweep: FusionSweepResult) -> None:
    points = summary.mflops_points(sweep)
    # 6 measured pairs (7 sets, one refused) and 3 triples, two variants each; identical rows are figure 9's
    assert len(points) == 2 * (7 + 3)
    assert {p.size for p in points} == {2, 3}
    c_c1 = [p for p in points if p.kinds == ("C", "C_1x1") and p.variant == "rounded"]
    assert sorted(p.total_mflops for p in c_c1) == pytest.approx([12.0 + 3.5, 2 * (12.0 + 3.5)])
    assert all(p.gain for p in c_c1)
    assert not next(p for p in points if p.kinds == ("P", "P")).gain


def test_headlines_per_size_and_variant_and_the_check_counts(sweep: FusionSweepResult) -> None:
    lines = summary.headlines(sweep)
    assert [(h.sets, h.variant) for h in lines] == [
        ("pairs", "rounded"),
        ("pairs", "unrounded"),
        ("triples", "rounded"),
        ("triples", "unrounded"),
    ]
    pairs = lines[0]
    values = [0.95, 1.04, 1.10, 1.02, 0.24, 0.25, 0.90]
    assert pairs.count == 7
    assert pairs.median == pytest.approx(statistics.median(values))
    assert (pairs.min, pairs.max) == pytest.approx((0.24, 1.10))
    # C_1x1 + DWC (1.02) has rounds too spread to tell from 1: only what the noise cannot
    # explain counts as faster fused; every other row's rounds spread little
    assert (pairs.above, pairs.below, pairs.within_noise) == (2, 4, 1)
    assert pairs.share_above_1 == pytest.approx(2 / 7) and pairs.busy_median is not None
    assert lines[2].share_above_1 == pytest.approx(1 / 3)

    counts = summary.check_counts(sweep)
    total = sweep.rows.count()
    assert counts.rows == total and counts.errors == 2 and counts.incorrect == 2
    assert counts.correct == total - 4 and counts.unchecked == 0 and counts.measured == total - 2


def test_pair_medians_list_many_sweeps_in_one_query(
    make_member: Callable[..., Any], make_device: Callable[..., Any], django_assert_num_queries: Any
) -> None:
    team, device = make_member().team, make_device(kind="opencl")
    a = stored_sweep(team, device)
    b = stored_sweep(team, device, [*both(("C", "P"), 1.5, 1.4), *both(("C", "EW"), 0.5, 0.4)])
    empty = stored_sweep(team, device, [RowSpec(("C",), "rounded", 1.0, experiment=IDENTICAL)])
    with django_assert_num_queries(1):
        medians = summary.pair_medians([a.pk, b.pk, empty.pk])
    assert set(medians) == {a.pk, b.pk}
    assert medians[b.pk].median == pytest.approx(1.0) and medians[b.pk].share_above_1 == pytest.approx(0.5)
    assert summary.pair_medians([b.pk], variant="unrounded")[b.pk].median == pytest.approx(0.9)
