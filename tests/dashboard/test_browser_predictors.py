"""The predictor pages in a real browser: Debian's chromium against a live server.

Log in, open the predictors list, follow the best version of the device to its page, and find
the plotly charts drawn with their data points and no error in the browser console.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.predictors.models import PredictorState
from tests.dashboard.predictor_factories import make_predictor
from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _trace_points(page: Any, chart_id: str, name: str) -> int:
    """How many points the trace ``name`` of the drawn plotly chart ``chart_id`` holds."""
    return int(
        page.evaluate(
            "([id, name]) => { const el = document.getElementById(id);"
            " const t = el && el.data ? el.data.find(t => t.name === name) : null;"
            " return t ? t.y.length : 0; }",
            [chart_id, name],
        )
    )


def test_the_predictor_page_draws_its_evaluation(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    device = make_device(name="browser-cpu")
    best = make_predictor(device, member.team, "gbdt", version=1, e2e_mape=0.021)
    make_predictor(device, member.team, "lasso", version=1, e2e_mape=0.048)
    make_predictor(device, member.team, "mlp", version=1, state=PredictorState.FAILED, failure_reason="no data")
    base = live_server.url

    log_in(page, base, member, "/predictors/")
    assert page.locator("tr.best").count() == 1
    screenshots(page, "predictors-01-list")

    page.locator("tr.best a[href^='/predictors/']").click()
    page.wait_for_url(base + f"/predictors/{best.pk}/")
    page.wait_for_selector("#chart-predicted-measured.js-plotly-plot")
    assert _trace_points(page, "chart-predicted-measured", "test networks") == len(best.evaluation["points"])
    assert page.locator("#chart-predicted-measured .scatterlayer path.point").count() >= len(
        best.evaluation["points"]
    )  # drawn
    page.wait_for_selector("#chart-kernel-mape.js-plotly-plot")
    page.wait_for_selector("#chart-training-size.js-plotly-plot")
    assert page.locator("#method-comparison tbody tr").count() == 2
    screenshots(page, "predictors-02-detail")

    assert console_errors == []
