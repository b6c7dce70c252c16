"""The predictor pages in a real browser: Debian's chromium against a live server.

Log in, open the predictors list, follow the best version of the device to its page, and find
the plotly charts drawn with their data points, the "kernel type" axis title clear of its
(long) labels, and no error in the browser console.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.predictors.models import PredictorState
from tests.dashboard.predictor_factories import evaluation, make_predictor
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


# Kernel types as the deducers name them, refinements included: long labels on the y axis.
LONG_KERNEL_TYPES = {
    "dw_conv_plus_1x1/nchwc8": 0.071,
    "conv2d_1x1/nchwc": 0.031,
    "depthwise_conv2d": 0.058,
    "fully_connected": 0.12,
    "reorder_output": 0.02,
}


def _boxes(page: Any, selector: str) -> list[dict[str, float]]:
    """The bounding boxes of the elements ``selector`` matches (in the page's CSS pixels)."""
    return list(page.eval_on_selector_all(selector, "els => els.map(e => e.getBoundingClientRect().toJSON())"))


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
    best = make_predictor(
        device,
        member.team,
        "gbdt",
        version=1,
        e2e_mape=0.021,
        evaluation=evaluation(0.021, kernel_mape=LONG_KERNEL_TYPES),
    )
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
    # The "kernel type" title sits left of every tick label, clear of them, and inside the chart.
    (title,) = _boxes(page, "#chart-kernel-mape .g-ytitle text")
    labels = _boxes(page, "#chart-kernel-mape .yaxislayer-above .ytick text")
    chart = _boxes(page, "#chart-kernel-mape")[0]
    assert len(labels) == len(LONG_KERNEL_TYPES)
    assert title["right"] + 4 <= min(label["left"] for label in labels), (title, labels)
    assert title["left"] >= chart["left"]
    page.wait_for_selector("#chart-training-size.js-plotly-plot")
    assert page.locator("#method-comparison tbody tr").count() == 2
    screenshots(page, "predictors-02-detail")

    assert console_errors == []
