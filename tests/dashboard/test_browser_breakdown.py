"""A profile job's time breakdown and cold starts in a real browser (Debian's chromium against a
live server): the stacked bar holds one segment per stage for each image format, the cold starts
are drawn beside the hot ones, and the console stays clean."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.networks.services import model_graph
from server.profiling.services import claim_job, ingest_result
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.breakdown_factories import FRESH, result_with_breakdown, small_photos

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _drawn(page: Any, chart_id: str) -> list[list[Any]]:
    """Each trace of a mounted plotly chart: its name and how many values it holds."""
    return list(
        page.evaluate(
            "id => { const el = document.getElementById(id);"
            " return el && el.data ? el.data.map(t => [t.name, (t.x || []).length]) : []; }",
            chart_id,
        )
    )


def test_the_job_page_draws_the_breakdown_and_the_cold_starts(
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
    page.wait_for_selector("#chart-breakdown .main-svg")
    assert _drawn(page, "chart-breakdown") == [
        ["image decode (host)", 2],
        ["resize + center crop (host)", 2],
        ["normalize (host)", 2],
        ["model load (device)", 2],
        ["inference (device)", 2],
        ["post-processing (host)", 2],
    ]
    assert page.locator("#chart-breakdown .bars .point").count() == 12  # six segments in each of two bars
    page.wait_for_selector("#chart-cold-starts .main-svg")
    drawn = dict(_drawn(page, "chart-cold-starts"))
    assert drawn["cold start (load + first run)"] == 3 and drawn["hot start (warm run)"] == len(result.samples_ms)
    assert page.locator("#breakdown-stages tbody tr").count() == 7  # six stages and their total
    screenshots(page, "job-breakdown")
    assert console_errors == []
