"""A fusion sweep's rows table and figures at a desktop's 1400 px and a phone's 420 px, in a real
browser: at 1400 px every column, the Check column last, lies inside the table's box (no scroll
needed to read whether a fused kernel was correct); narrow, the table scrolls inside its card and
nothing of the sweep's cards sticks out of the page. Screenshots go to /tmp/fusion-shots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.dashboard.test_browser import browser_page, log_in
from tests.server.fusion_factories import RowSpec, both, realistic_rows, stored_sweep

__all__ = ["browser_page"]

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/fusion-shots")
LONG_REFUSAL = (
    "FusionError: b1/conv_0 + b2/depthwise_conv2d_3 + squeeze/fire2: a sub-kernel tells its work-group "
    "[16, 4] and the built fused kernel allows only 256 work-items per group on this device"
)

GEOMETRY = """() => {
  const scroll = document.querySelector('#rows .table-scroll');
  const box = scroll.getBoundingClientRect();
  const heads = [...document.querySelectorAll('#fusion-rows thead th')];
  const check = heads[heads.length - 1].getBoundingClientRect();
  return {boxLeft: box.left, boxRight: box.right, checkLeft: check.left, checkRight: check.right,
          tableWidth: scroll.scrollWidth, boxWidth: scroll.clientWidth, last: heads[heads.length - 1].innerText,
          page: document.documentElement.scrollWidth, viewport: window.innerWidth,
          wider: [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5 && e.closest('.card')
                    && !e.closest('.table-scroll'))
            .slice(0, 8).map(e => e.tagName + '#' + e.id + '.' + e.className)};
}"""


def test_the_rows_table_shows_its_check_column_at_1400_px_and_scrolls_inside_its_card_when_narrow(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    rows = [
        *realistic_rows(),
        *both(("C", "DWC", "EW"), None, None, error=LONG_REFUSAL),
        RowSpec(("C", "P"), "rounded", 1.31, instance=3),
    ]
    job = stored_sweep(member.team, make_device(kind="opencl", name="pocl-cpu"), rows)
    SHOTS.mkdir(parents=True, exist_ok=True)

    page.set_viewport_size({"width": 1400, "height": 900})
    log_in(page, live_server.url, member, f"/fusion/sweeps/{job.pk}/")
    page.wait_for_selector("#chart-pairs.js-plotly-plot")
    wide = page.evaluate(GEOMETRY)
    assert wide["last"] == "Check"
    assert wide["tableWidth"] <= wide["boxWidth"], wide  # nothing to scroll to
    assert wide["boxLeft"] <= wide["checkLeft"] and wide["checkRight"] <= wide["boxRight"] + 0.5, wide
    assert wide["page"] <= wide["viewport"], wide
    # the long refusal is in the row, whole in its title, wrapped in the cell
    refused = page.locator("#fusion-rows tr.error-row[data-kinds='C + DWC + EW']").first
    assert LONG_REFUSAL in (refused.locator(".reason").get_attribute("title") or "")
    page.screenshot(path=str(SHOTS / "sweep-1400.png"), full_page=True)
    page.locator("#rows").screenshot(path=str(SHOTS / "rows-1400.png"))

    page.set_viewport_size({"width": 420, "height": 900})
    page.reload()
    page.wait_for_selector("#chart-pairs.js-plotly-plot")
    narrow = page.evaluate(GEOMETRY)
    assert narrow["wider"] == []  # nothing of the sweep's cards sticks out of the page (the nav is base.html's)
    assert narrow["tableWidth"] > narrow["boxWidth"]  # the table scrolls inside its card
    page.screenshot(path=str(SHOTS / "sweep-420.png"), full_page=True)
    assert console_errors == []
