"""The sharing sweep page's figures in a real browser (Debian's chromium against a live server),
at 1400 px and at a phone's width: every y axis title is drawn whole inside its chart (the memory
and straggler charts cut theirs), log axes label their ticks with units, no legend scrolls, the figures' card fits the window, and the
ceiling's line is drawn."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.sharing_factories import stored_sharing

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WIDTHS = (1400, 420)
CHARTS = ("chart-throughput", "chart-memory", "chart-latency", "chart-straggler")
SHOTS = Path("/tmp/sharing-shots")

# The chart's box and its y title's, as drawn.
BOXES_JS = """id => {
  const el = document.getElementById(id);
  const box = n => { const r = n.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const title = el.querySelector(".g-ytitle text");
  const bar = el.querySelector(".legend .scrollbar");
  return {chart: box(el), title: title ? box(title) : null, text: title ? title.textContent : "",
          scroll: bar ? bar.getBoundingClientRect().height : 0};
}"""


def test_every_sharing_chart_draws_its_y_title_whole_at_two_widths(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    job = stored_sharing(member.team, make_device(kind="opencl", name="pocl-cpu"))
    log_in(page, live_server.url, member, f"/sharing/sweeps/{job.pk}/")
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        for chart in CHARTS:
            page.wait_for_selector(f"#{chart} .main-svg")
        page.screenshot(path=str(SHOTS / f"sweep-{width}.png"), full_page=True)
        screenshots(page, f"sharing-charts-{width}")
        for chart in CHARTS:
            got = page.evaluate(BOXES_JS, chart)
            assert got["title"] is not None and got["text"], f"{chart} at {width} px has no y title"
            left, top, right, bottom = got["title"]
            c_left, c_top, c_right, c_bottom = got["chart"]
            # whole: the rotated title's box inside the chart's, not cut at its left edge
            assert left >= c_left - 0.5 and right <= c_right + 0.5, f"{chart} at {width} px: {got}"
            assert top >= c_top - 0.5 and bottom <= c_bottom + 0.5, f"{chart} at {width} px: {got}"
            assert got["scroll"] == 0, f"{chart} at {width} px scrolls its legend"
        # the figures' card fits the window (its tables scroll inside it)
        card = page.evaluate("() => document.getElementById('figures').getBoundingClientRect().right")
        assert card <= width + 0.5, f"the figures' card is {card} px wide at {width} px"
        # a log axis labels its ticks with their unit (plotly's own: bare "2 5 1 2")
        for chart, unit in (("chart-latency", " ms"), ("chart-memory", " MiB")):
            ticks = page.evaluate(
                f"() => Array.from(document.querySelectorAll('#{chart} .ytick text'), t => t.textContent)"
            )
            assert ticks and all(t.endswith(unit) for t in ticks), f"{chart} at {width} px: {ticks}"
        legend = page.evaluate("() => document.querySelector('#chart-throughput .legend').textContent")
        assert "numpy ceiling, same tenants" in legend
    assert not console_errors, console_errors
