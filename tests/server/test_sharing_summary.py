"""A stored sharing sweep summarized as seed 003 draws it (figures 3-5 and 7, table 1): each
strategy's rows against R with the stored values, memory-bound rows with their footprint and the
largest R that fits, table 1 beside the paper's V100 values, and what was refused or left out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.tenancy.gemm import GemmShape
from server.tenancy import summary
from server.tenancy.models import SharingMeasurement, SharingSweepResult
from tests.server.sharing_factories import (
    CAP,
    DEVICE_MEMORY,
    GFLOPS,
    NETWORK,
    geomean,
    realistic_rows,
    sharing_result,
    stored_sharing,
)

pytestmark = pytest.mark.django_db

STRATEGIES = ["exclusive", "time_only", "space_only", "space_time", "space_time_vbatched"]


@pytest.fixture
def sweep(make_member: Callable[..., Any], make_device: Callable[..., Any]) -> SharingSweepResult:
    """The factories' realistic sweep, stored through ingest_sharing."""
    job = stored_sharing(make_member().team, make_device(kind="opencl"))
    return SharingSweepResult.objects.get(job=job)


def test_each_strategy_is_a_series_against_r_with_the_stored_values(sweep: SharingSweepResult) -> None:
    view = summary.workload_figures(sweep, "512x1x512")
    assert view.kind == "sgemm" and view.tenants == (1, 2, 10, 20, 64)
    assert [s.strategy for s in view.series] == STRATEGIES
    assert [s.label for s in view.series][:4] == ["exclusive", "time-only", "space-only", "space-time"]
    for s in view.series:
        # the wrong output at R = 64 was measured: drawn (table 1 leaves it out)
        assert [c.tenants for c in s.measured] == [1, 2, 10, 20, 64], s.strategy
        assert [c.gflops for c in s.measured] == pytest.approx(GFLOPS["512x1x512"][s.strategy])
        stored = SharingMeasurement.objects.filter(sweep=sweep, workload="512x1x512", strategy=s.strategy)
        by_r = {r.tenants: r for r in stored}
        for c in s.measured:
            row = by_r[c.tenants]
            assert (c.per_s, c.p50_ms, c.p99_ms, c.gap_ms, c.memory_bytes) == (
                row.throughput_per_s,
                row.latency_p50_ms,
                row.latency_p99_ms,
                row.straggler_gap_ms,
                row.memory_bytes,
            )
            assert c.fastest_p50_ms == row.data["straggler"]["fastest_p50_ms"]
    # time-only's fastest tenant waits half as long as its slowest (the factories' spread of 0.5)
    at_10 = view.strategy("time_only").measured[2]  # type: ignore[union-attr]
    assert at_10.slowest_p50_ms == pytest.approx(2 * at_10.fastest_p50_ms)  # type: ignore[operator]
    assert at_10.gap_ratio == pytest.approx(1.0)
    assert view.strategy("space_time").measured[2].gap_ms == pytest.approx(0.0)  # type: ignore[union-attr]
    # numpy's SGEMM on every tenant's operands per R: the median and best over every round, and per R
    assert view.ceiling is not None and (view.ceiling.gflops, view.ceiling.best_gflops) == pytest.approx((35.0, 37.0))
    assert (view.ceiling.numpy, view.ceiling.blas) == ("2.4.6", "openblas")
    assert "every tenant's own" in view.ceiling.what
    assert [r for r, _ in view.ceiling.per_tenants] == [1, 2, 10, 20, 64]
    assert [g for _, g in view.ceiling.per_tenants] == pytest.approx([35.0] * 5)
    # each measured row over the ceiling, paired by round: the factories' rounds give one ratio
    exclusive = view.strategy("exclusive").measured[0]  # type: ignore[union-attr]
    assert exclusive.of_ceiling is not None and exclusive.of_ceiling.rounds == 3
    assert exclusive.of_ceiling.verdict == "below" and exclusive.of_ceiling.high < 1
    assert (view.device_memory_bytes, view.budget_bytes, view.cap_bytes) == (DEVICE_MEMORY, CAP, CAP)


def test_memory_bound_rows_keep_their_footprint_and_the_largest_r_that_fits(sweep: SharingSweepResult) -> None:
    view = summary.workload_figures(sweep, "256x128x1152")
    tenant_bytes = GemmShape(256, 128, 1152).tenant_bytes
    shared = view.strategy("space_time")
    assert shared is not None
    assert [c.tenants for c in shared.measured] == [1, 2, 10, 20]
    assert [(c.tenants, c.memory_bytes) for c in shared.memory_bound] == [(64, 64 * tenant_bytes)]
    assert 64 * tenant_bytes > CAP
    assert [c.tenants for c in shared.footprints] == [1, 2, 10, 20, 64]
    assert shared.largest_fit == CAP // tenant_bytes == 52
    assert (shared.largest_measured, shared.smallest_memory_bound) == (20, 64)
    assert (shared.fixed_bytes, shared.per_tenant_bytes) == (0, tenant_bytes)
    exclusive = view.strategy("exclusive")
    assert exclusive is not None and exclusive.largest_fit is None and not exclusive.memory_bound
    assert [c.tenants for c in exclusive.measured] == [1, 2, 10, 20, 64]


def test_a_network_has_no_ceiling_and_failed_or_unsupported_rows_are_not_drawn(sweep: SharingSweepResult) -> None:
    view = summary.workload_figures(sweep, NETWORK)
    assert view.kind == "network" and view.ceiling is None and view.tenants == (1, 2, 10, 20)
    space_only = view.strategy("space_only")
    assert space_only is not None and [c.tenants for c in space_only.measured] == [1, 2, 10]
    assert [c.tenants for c in space_only.footprints] == [1, 2, 10]  # R = 20 failed: nothing to draw
    vbatched = view.strategy("space_time_vbatched")
    assert vbatched is not None and not vbatched.measured and not vbatched.footprints
    failed = summary.cells(sweep, NETWORK, "space_only")[-1]
    assert (failed.tenants, failed.status, failed.gflops) == (20, "error", None) and "submitter" in failed.error


def test_table1_gives_the_papers_rows_beside_the_papers_v100_values(sweep: SharingSweepResult) -> None:
    columns = summary.table1(sweep)
    assert [c.workload for c in columns] == ["512x1x512", "256x128x1152", NETWORK]
    rnn, conv, net = columns

    # 512x1x512: space-time over time-only 1.1, 1.2, 1.5 at R = 2, 10, 20; R = 64 had a wrong output
    assert rnn.tenants == (2, 10, 20)
    assert rnn.r10 is not None and rnn.r10.speedup == pytest.approx(1.2) and rnn.r10.next_best_label == "time-only"
    assert rnn.r20 is not None and rnn.r20.speedup == pytest.approx(1.5)
    assert rnn.geomean == pytest.approx(geomean([1.1, 1.2, 1.5]))
    assert rnn.next_best == "time_only" and rnn.next_best_label == "time-only"
    # paired rounds: the factories' rounds scale every strategy alike, so every round gives the ratio
    assert rnn.r10.ratio is not None and rnn.r10.ratio.rounds == 3 and rnn.r10.verdict == "above"
    assert (rnn.r10.ratio.low, rnn.r10.ratio.high) == pytest.approx((1.2, 1.2))
    assert rnn.r10.label == "1.20x [1.20-1.20]"
    assert rnn.significant is not None and (rnn.significant.above, rnn.significant.total) == (3, 3)
    assert rnn.paper == summary.PaperColumn("Matrix-vector: RNN", 1.21, 2.14, 2.48, "time_only")
    assert rnn.paper.next_best_label == "time-only"
    ((peer, peer_geomean),) = rnn.peers  # its R = 64 was right: it counts
    assert peer == "space-time, variable-sized"
    assert peer_geomean == pytest.approx(geomean([5.0 / 5, 5.5 / 5, 7.0 / 5, 6.0 / 5]))

    assert conv.geomean == pytest.approx(geomean([0.75, 0.75, 0.8])) and conv.next_best_label == "space-only"
    assert conv.tenants == (2, 10, 20)  # R = 64 memory-bound
    assert conv.paper is not None and (conv.paper.r10, conv.paper.r20, conv.paper.geomean) == (1.68, 2.88, 3.23)

    # the network: R = 20's space-only failed, so time-only was next best there; no paper column
    assert net.paper is None and net.kind == "network"
    assert net.r20 is not None and net.r20.next_best == "time_only" and net.r20.speedup == pytest.approx(15 / 25)
    assert net.next_best == "space_only" and dict(net.next_best_counts) == {"space_only": 2, "time_only": 1}
    assert net.geomean == pytest.approx(geomean([25 / 39, 18 / 36, 15 / 25]))

    heads = summary.headlines(sweep.table1)
    assert [(h.workload, h.next_best) for h in heads] == [
        ("512x1x512", "time_only"),
        ("256x128x1152", "space_only"),
        (NETWORK, "space_only"),
    ]
    assert [h.geomean for h in heads] == pytest.approx([c.geomean for c in columns])


def test_rows_are_counted_by_status_and_check_and_the_budget_names_what_it_left_out(
    sweep: SharingSweepResult,
) -> None:
    counts = summary.row_counts(sweep)
    assert counts == summary.RowCounts(
        rows=len(realistic_rows()), measured=61, memory_bound=4, unsupported=4, errors=1, incorrect=1, unchecked=0
    )
    assert summary.not_measured(sweep) == [summary.NotMeasured(NETWORK, (64,))]
    assert summary.strategies_of(sweep) == STRATEGIES


def test_a_sweep_without_space_time_or_a_ceiling_has_empty_columns(
    make_member: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    rows = [r for r in realistic_rows() if r.strategy == "exclusive"]
    result = {**sharing_result(rows, complete=True, not_measured=(), notes=()), "ceiling": {"error": "TimeoutExpired"}}
    job = stored_sharing(make_member().team, make_device(kind="opencl"), result)
    sweep = SharingSweepResult.objects.get(job=job)
    columns = summary.table1(sweep)
    assert [c.workload for c in columns] == ["512x1x512", "256x128x1152", NETWORK]
    assert all(c.geomean is None and c.r10 is None and c.next_best is None and not c.peers for c in columns)
    assert summary.headlines(sweep.table1) == []
    view = summary.workload_figures(sweep, "512x1x512")
    assert view.ceiling is None and [s.strategy for s in view.series] == ["exclusive"]
    assert summary.not_measured(sweep) == [] and sweep.complete
