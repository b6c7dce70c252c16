"""The job and compare pages' charts in a real browser (Debian's chromium against a live server),
at 1400 px and at a phone's width: every axis title says what is plotted (medians, not means),
the time breakdown's legend sits outside its plot with no scroll bar, a log axis labels its ticks
with their units, and a watched job's page ends on its final state (its progress hint, its
attempts), not on what it said while it waited."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.networks.services import model_graph
from server.profiling.services import claim_job, fail_job, ingest_result, report_progress
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.breakdown_factories import FRESH, result_with_breakdown, small_photos

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WIDTHS = (1400, 420)

# Each chart's axis titles as drawn (the SVG's text, so what a reader sees), by the chart's id.
TITLES_JS = """id => {
  const el = document.getElementById(id);
  const text = sel => Array.from(el.querySelectorAll(sel)).map(t => t.textContent).join(" ");
  return {x: text(".g-xtitle"), y: text(".g-ytitle")};
}"""

# The legend's and the plot area's boxes, and whether plotly gave the legend a scroll bar.
LEGEND_JS = """id => {
  const el = document.getElementById(id);
  const box = n => { const r = n.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const bar = el.querySelector(".legend .scrollbar");
  return {
    legend: box(el.querySelector(".legend .bg")),
    plot: box(el.querySelector(".nsewdrag")),
    scroll: bar ? bar.getBoundingClientRect().height : 0,
  };
}"""


def _titles(page: Any, chart_id: str) -> dict[str, str]:
    page.wait_for_selector(f"#{chart_id} .main-svg")
    return dict(page.evaluate(TITLES_JS, chart_id))


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_the_job_pages_charts_say_what_they_plot_at_two_widths(
    live_server: Any,
    make_member: Callable[..., Any],
    make_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
    tmp_path: Any,
) -> None:
    page, console_errors = browser_page
    member = make_member()
    job = make_job(member.team)
    assert claim_job(job.pk, "run-1") is not None
    result = result_with_breakdown(model_graph(job.model), small_photos(tmp_path), cold_starts=FRESH)
    assert ingest_result(job.pk, "run-1", result) is not None
    log_in(page, live_server.url, member, f"/jobs/{job.pk}/")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        page.wait_for_selector("#chart-cold-starts .xtick")
        screenshots(page, f"charts-job-{width}")
        # The operator charts rank and sum medians (a mean only where a runtime reports no median).
        assert "sum of operator medians" in _titles(page, "chart-op-types")["x"]
        assert _titles(page, "chart-per-operator")["y"].startswith("median time (ms)")
        assert _titles(page, "chart-top-ops")["x"].startswith("median time (ms)")
        for chart in ("chart-op-types", "chart-per-operator", "chart-top-ops"):
            assert "mean time" not in " ".join(_titles(page, chart).values())
        # The time breakdown's legend: beside the bars, not over them, and whole (no scroll bar).
        page.wait_for_selector("#chart-breakdown .legend")
        boxes = page.evaluate(LEGEND_JS, "chart-breakdown")
        assert not _overlap(boxes["legend"], boxes["plot"]), boxes
        assert boxes["scroll"] == 0, boxes
        # The cold starts' log axis: every tick says its unit.
        page.wait_for_selector("#chart-cold-starts .xtick")
        ticks = page.eval_on_selector_all("#chart-cold-starts .xtick text", "ts => ts.map(t => t.textContent)")
        assert len(ticks) >= 3 and all(t.endswith((" ms", " s")) for t in ticks), ticks
        # nothing makes the page itself scroll sideways (the nav and wide tables scroll in their boxes)
        wide = page.evaluate(
            "w => Array.from(document.querySelectorAll('main *')).filter(e => e.getBoundingClientRect().right > w + 1)"
            ".slice(0, 5).map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' + e.getBoundingClientRect().right)",
            width,
        )
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width, wide
    assert console_errors == []


def test_the_compare_and_device_pages_charts_say_what_they_plot(
    live_server: Any,
    make_member: Callable[..., Any],
    finished_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    a = finished_job(member.team)
    b = finished_job(member.team, model=a.model, scale=1.5)
    finished_job(member.team, device=a.device)  # a second model on A's device: its history has two lines
    log_in(page, live_server.url, member, "/")
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})
    page.goto(f"{live_server.url}/compare/?a={a.pk}&b={b.pk}")
    assert "sum of operator medians" in _titles(page, "chart-compare-types")["x"]
    assert "median" in _titles(page, "chart-compare-deltas")["x"]
    assert "operator means" not in _titles(page, "chart-compare-types")["x"]
    screenshots(page, "charts-compare-1400")
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        # The device's latency history: its legend below the axis title, not on it, at each width.
        page.goto(f"{live_server.url}/devices/{a.device_id}/")
        page.wait_for_selector("#chart-latency-history .legend")
        boxes = page.evaluate(LEGEND_JS, "chart-latency-history")
        title = page.evaluate(
            "() => { const r = document.querySelector('#chart-latency-history .g-xtitle').getBoundingClientRect();"
            " return [r.left, r.top, r.right, r.bottom]; }"
        )
        assert not _overlap(boxes["legend"], boxes["plot"]) and not _overlap(boxes["legend"], title), (boxes, title)
        screenshots(page, f"charts-device-{width}")
    assert console_errors == []


def test_a_watched_job_ends_on_its_final_state(
    live_server: Any,
    make_member: Callable[..., Any],
    make_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
    tmp_path: Any,
) -> None:
    page, console_errors = browser_page
    member = make_member()
    job = make_job(member.team)
    log_in(page, live_server.url, member, f"/jobs/{job.pk}/")
    assert "Waiting for the device's worker" in page.inner_text("#progress-hint")
    assert "attempts 0" in page.inner_text(".page-head")

    assert claim_job(job.pk, "run-1") is not None
    assert report_progress(job.pk, "run-1", 0.45, "warm-up 3/5")
    page.wait_for_function("() => document.querySelector('#job-progress').getAttribute('aria-valuenow') === '45'")
    # running now: the hint no longer says it waits for a worker
    page.wait_for_function("() => !document.querySelector('#progress-hint').textContent.includes('Waiting')")
    assert "Measuring on" in page.inner_text("#progress-hint")

    result = result_with_breakdown(model_graph(job.model), small_photos(tmp_path))
    assert ingest_result(job.pk, "run-1", result) is not None
    page.wait_for_selector("#job-result #chart-samples .main-svg")
    # the head is the finished job's (its state, its one attempt); the bar is full, not left at 45 %
    page.wait_for_function("() => document.querySelector('.page-head').textContent.includes('attempt 1')")
    head = page.inner_text(".page-head")
    assert "succeeded" in head and "attempts 0" not in head and "finished" in head
    assert page.locator("#cancel-form").count() == 0 and page.inner_text("#progress-hint") == "Done."
    assert page.get_attribute("#job-progress", "aria-valuenow") == "100"
    assert page.inner_text("#job-progress .progress-label") == "succeeded"
    assert "Waiting for the device's worker" not in page.inner_text("main")
    screenshots(page, "charts-live-finished")

    # A watched job that fails says why without a reload.
    doomed = make_job(member.team)
    page.goto(f"{live_server.url}/jobs/{doomed.pk}/")
    assert claim_job(doomed.pk, "run-2") is not None
    assert fail_job(doomed.pk, "run-2", "the device fell off the bus")
    page.wait_for_selector("#failure")
    assert "the device fell off the bus" in page.inner_text("#failure")
    assert "failed" in page.inner_text(".page-head") and "attempt 1" in page.inner_text(".page-head")
    assert console_errors == []
