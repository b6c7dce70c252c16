"""The fusion pages in a real browser (Debian's chromium against a live server), from sweeps and
plans stored as a worker stores them (``ingest_sweep``/``ingest_plan`` after ``claim_job``).

A sweep's page draws figure 8a's heatmap with each pair's paired ratio and verdict (and
switches variant), the paper's numbers beside each figure with its device, 8b's triples, figure 9's lines (solid rounded, dotted unrounded) and figure 10's
points, and filters its rows on the server; a watched sweep swaps its result in when it ends. A
plan's page draws the three strategies with their spread and lists the plan's fused launches. The
job page sends a fusion job to its page, another team gets 404, and a failed sweep shows why.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.measure.ratios import RatioEstimate, paired_ratio
from server.fusion.models import FusionMeasurement, FusionPlanResult
from server.profiling.services import fail_job, report_progress
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.fusion_factories import (
    claim,
    queued_sweep,
    realistic_rows,
    stored_plan,
    stored_sweep,
    sweep_result,
)

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _figure(page: Any, chart_id: str) -> list[dict[str, Any]]:
    """The traces plotly drew in ``chart_id`` (waiting for it to be drawn)."""
    page.wait_for_selector(f"#{chart_id}.js-plotly-plot")
    return list(
        page.evaluate(
            "id => document.getElementById(id).data.map(t => ({name: t.name, x: t.x, y: t.y, text: t.text,"
            " visible: t.visible === undefined ? true : t.visible, line: t.line, hovertext: t.hovertext,"
            " error_y: t.error_y}))",
            chart_id,
        )
    )


def _expected_pairs(job: Any) -> dict[str, dict[tuple[str, str], tuple[RatioEstimate, int]]]:
    """Straight from the stored rows: each variant's paired ratio over the pooled rounds, and the
    count of rows, per unordered pair."""
    rounds: dict[str, dict[tuple[str, str], list[Any]]] = defaultdict(lambda: defaultdict(list))
    for row in FusionMeasurement.objects.filter(sweep__job=job, experiment="combination", size=2, error=""):
        a, b = row.kind_list
        rounds[row.variant][(a, b)].append(row.data)
    return {
        v: {
            p: (
                paired_ratio(
                    [t for d in rows for t in d["sequential"]["device_samples_ms"]],
                    [t for d in rows for t in d["fused"]["device_samples_ms"]],
                ),
                len(rows),
            )
            for p, rows in pairs.items()
        }
        for v, pairs in rounds.items()
    }


def _table_kinds(page: Any) -> list[str]:
    return page.eval_on_selector_all("#fusion-rows tbody tr", "rows => rows.map(r => r.dataset.kinds)")


def test_a_sweep_page_draws_figures_8_to_10_from_the_stored_rows_and_filters_them(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    job = stored_sweep(member.team, make_device(kind="opencl", name="pocl-cpu"))
    base = live_server.url

    log_in(page, base, member, f"/fusion/sweeps/{job.pk}/")
    assert "Fusion sweep" in page.inner_text("h1") and "pocl-cpu" in page.inner_text("h1")

    # Figure 8a: kinds on both axes; each measured pair's cell (both triangles) says its median
    # and count; unmeasured and refused pairs (P + EW) are gaps.
    expected = _expected_pairs(job)
    heat = _figure(page, "chart-pairs")
    assert [t["name"] for t in heat] == ["rounded", "unrounded"]
    assert [t["visible"] for t in heat] == [True, False]
    for trace in heat:
        kinds = trace["x"]
        assert kinds == ["C", "C_1x1", "P", "DWC", "EW"] and trace["y"] == kinds
        cells = expected[trace["name"]]
        for i, row in enumerate(kinds):
            for j, col in enumerate(kinds):
                hit = cells.get((row, col)) or cells.get((col, row))
                verdict = "" if hit is None else ("~1" if not hit[0].significant else hit[0].verdict)
                want = "" if hit is None else f"{hit[0].ratio:.2f}<br>{verdict}"
                assert trace["text"][i][j] == want, (trace["name"], row, col)
    drawn_twice = expected["rounded"][("C", "C_1x1")]
    assert 1.04 < drawn_twice[0].ratio < 1.10 and drawn_twice[1] == 2  # one pair drawn twice, rounds pooled
    assert heat[0]["text"][1][3] == heat[0]["text"][3][1] == "1.02<br>~1"  # C_1x1 + DWC: within noise
    assert heat[0]["text"][2][4] == ""  # P + EW was refused
    page.locator("#chart-pairs .updatemenu-button").nth(1).click()
    page.wait_for_function("() => document.getElementById('chart-pairs').data[1].visible === true")
    assert page.evaluate("() => document.getElementById('chart-pairs').data[0].visible") is False
    screenshots(page, "fusion-01-sweep")

    # Figure 8b: every triple per variant, hover naming its kinds.
    triples = {t["name"]: t for t in _figure(page, "chart-triples")}
    assert sorted(triples) == ["rounded", "unrounded"]
    assert sorted(triples["rounded"]["y"]) == pytest.approx([0.40, 0.87, 1.13])
    assert "C + P + EW" in triples["unrounded"]["hovertext"]

    # Figure 9: a line per network's operator and variant over N, solid rounded and dotted unrounded.
    lines = _figure(page, "chart-identical")
    assert len(lines) == 4 and all(t["x"] == [1, 2, 3, 4] for t in lines)
    assert {t["line"]["dash"] for t in lines if t["name"].endswith("rounded") and "unrounded" not in t["name"]} == {
        "solid"
    }
    assert {t["line"]["dash"] for t in lines if t["name"].endswith("unrounded")} == {"dot"}
    mnv2 = next(t for t in lines if t["name"].startswith("mobilenet_v2") and t["name"].endswith(", rounded"))
    assert mnv2["y"] == pytest.approx([1.0, 1.03, 1.06, 1.09])

    # Figure 10: every measured combination row is a point, gain or loss; the rounded ones drawn.
    scatter = _figure(page, "chart-mflops")
    measured = FusionMeasurement.objects.filter(sweep__job=job, experiment="combination", error="")
    assert sum(len(t["y"]) for t in scatter) == measured.count()
    gains = next(t for t in scatter if t["name"] == "rounded: gain (above 1)")
    assert sorted(gains["y"]) == pytest.approx(
        sorted(measured.filter(variant="rounded", verdict="above").values_list("throughput", flat=True))
    )
    noise = next(t for t in scatter if t["name"] == "rounded: within noise")
    assert noise["y"] == pytest.approx([1.02])

    # The paper's numbers beside each figure, with the device they were measured on.
    for figure, numbers in (("8a", "36 %-195 %"), ("8b", "31 %-218 %"), ("9", "40 %"), ("10", "MFLOPs")):
        text = page.inner_text(f".paper-ref[data-figure='{figure}']")
        assert numbers in text and "Galaxy S20" in text and "Adreno 650" in text, figure
    assert "66 %" in page.inner_text(".paper-ref[data-figure='8a']")
    assert "80 %" in page.inner_text(".paper-ref[data-figure='8b']")
    drawn = page.locator("#chart-mflops .scatterlayer path.point").count()
    assert drawn == measured.filter(variant="rounded").count()

    # Headline, notes and checks: only significant ratios count as above 1.
    assert page.locator("#headline-table tbody tr").count() == 4
    pairs_row = page.inner_text("#headline-table tr[data-size='2'][data-variant='rounded']").split("\t")
    assert pairs_row[3:6] == ["2 (29%)", "4", "1"]  # above, below, within noise
    assert "2 wrong, 2 refused" in page.inner_text("#check-counts")

    # The rows: filtered on the server by kind, then by size.
    assert len(_table_kinds(page)) == FusionMeasurement.objects.filter(sweep__job=job).count()
    page.select_option("#row-filter select[name=kind]", "EW")
    page.wait_for_url(f"{base}/fusion/sweeps/{job.pk}/?kind=EW*")
    kinds = _table_kinds(page)
    assert kinds and all("EW" in k.split(" + ") for k in kinds)
    assert len(kinds) == sum(1 for r in realistic_rows() if "EW" in r.kinds)
    page.select_option("#row-filter select[name=size]", "3")
    page.wait_for_url("**size=3*")
    assert sorted(_table_kinds(page)) == ["C + P + EW"] * 2 + ["C_1x1 + C_1x1 + EW"] * 2
    refused = page.locator("#fusion-rows tr.error-row")
    assert refused.count() == 0
    screenshots(page, "fusion-02-rows")
    assert console_errors == []


def test_plan_page_list_redirect_live_swap_failure_and_team_scoping(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member, stranger = make_member(), make_member()
    device = make_device(kind="opencl", name="pocl-cpu")
    plan_job = stored_plan(member.team, device)
    failed = queued_sweep(member.team, device)
    assert fail_job(failed.pk, claim(failed), "the device lost its OpenCL context (CL_OUT_OF_RESOURCES)")
    watched = queued_sweep(member.team, device)
    theirs = stored_sweep(stranger.team, device)
    base = live_server.url
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)

    # The list: the team's sweeps and plans only, with the plan's headline ratio and the failure.
    log_in(page, base, member, "/fusion/")
    listed = page.eval_on_selector_all("#fusion-jobs tbody tr", "rows => rows.map(r => Number(r.dataset.jobId))")
    assert sorted(listed) == sorted([plan_job.pk, failed.pk, watched.pk])
    stored = FusionPlanResult.objects.get(job=plan_job)
    row = page.locator(f"#fusion-jobs tr[data-job-id='{plan_job.pk}']")
    assert f"{stored.plan_ratio:.3g}×" in row.inner_text()
    assert "CL_OUT_OF_RESOURCES" in page.locator(f"#fusion-jobs tr[data-job-id='{failed.pk}']").inner_text()
    screenshots(page, "fusion-03-list")

    # The job page sends a plan to its page: the three strategies, their spread, the steps.
    page.goto(f"{base}/jobs/{plan_job.pk}/")
    page.wait_for_url(f"{base}/fusion/plans/{plan_job.pk}/")
    (bars,) = _figure(page, "chart-plan")
    assert bars["x"] == ["sequential", "plan", "fuse all"]
    assert bars["y"] == pytest.approx([stored.sequential_ms, stored.plan_ms, stored.fuse_all_ms])
    timing = stored.data["timing"]
    spread_up = [
        statistics.quantiles(timing[s]["device_samples_ms"], n=10, method="inclusive")[-1]
        - timing[s]["device"]["median"]
        for s in ("sequential", "plan", "fuse_all")
    ]
    assert bars["error_y"]["array"] == pytest.approx(spread_up)
    plan_row = page.locator("#strategy-table tr[data-strategy='plan']").inner_text()
    assert plan_row.count("match") == 1
    # the paired ratio with its interval, and the busy ratio beside it
    estimate = stored.data["ratios"]["plan"]["ratio"]
    assert f"{estimate['ratio']:.3f}×" in plan_row and f"[{estimate['low']:.3f}–{estimate['high']:.3f}]" in plan_row
    assert "12.1 ms against 15.6 ms" in page.inner_text(".paper-ref")  # the paper's figure 11 beside it
    busy = stored.data["ratios"]["plan"]["busy_ratio"]
    assert f"{busy['ratio']:.3f}×" in plan_row
    steps = page.eval_on_selector_all("#step-table tbody tr", "rows => rows.map(r => r.dataset.source)")
    assert steps == ["measured", "model"]
    assert "mobilenet_v2/conv_0 + mobilenet_v2#2/conv_0" in page.inner_text("#step-table")
    screenshots(page, "fusion-04-plan")

    # A failed sweep says why.
    page.goto(f"{base}/jobs/{failed.pk}/")
    page.wait_for_url(f"{base}/fusion/sweeps/{failed.pk}/")
    assert "CL_OUT_OF_RESOURCES" in page.inner_text("#failure")

    # A watched sweep: live progress, then its result swapped in when the worker stores it.
    page.goto(f"{base}/fusion/sweeps/{watched.pk}/")
    token = claim(watched)
    assert report_progress(watched.pk, token, 0.5, "C + DWC: timed run 3/10")
    page.wait_for_function("() => document.querySelector('#job-progress').getAttribute('aria-valuenow') === '50'")
    assert "C + DWC: timed run 3/10" in page.inner_text("#job-progress")
    from devicelab.fusion.results import FusionSweepRecord
    from server.fusion.services import ingest_sweep

    assert ingest_sweep(watched.pk, token, FusionSweepRecord.from_dict(sweep_result(realistic_rows()))) is not None
    page.wait_for_selector("#job-result #chart-pairs.js-plotly-plot")
    assert page.locator("#fusion-rows tbody tr").count() == len(realistic_rows())

    # Another team's sweep is nobody's business here.
    paths = (f"/fusion/sweeps/{theirs.pk}/", f"/jobs/{theirs.pk}/", f"/fusion/plans/{theirs.pk}/")
    for path in paths:
        assert page.goto(base + path).status == 404
    assert missing == [base + p for p in paths]
    # the browser logs each refused page (and the favicon.ico that Django's bare 404 page makes it ask for)
    assert {e for e in console_errors if "status of 404" not in e} == set()
