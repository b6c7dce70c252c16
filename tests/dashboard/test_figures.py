"""The figure builders: plain data in, plotly JSON out, with axis titles and units."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest
from django.template import Context, Template

from dashboard import figures
from dashboard.figures import LatencyPoint, OperatorPoint

POINTS = [OperatorPoint(i, f"op{i}", ("conv2d", "relu", "add")[i % 3], 0.1 * (i + 1)) for i in range(9)]
UNITS = ("(ms", "(count)", "(millions)", "(thousands)", "(UTC)", "B − A (ms")


def _all_figures() -> dict[str, dict[str, Any]]:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    built = {
        "histogram": figures.samples_histogram([1.0, 1.1, 1.2, 0.9], 1.05, 1.18),
        "cold": figures.cold_vs_warm(40.0, 3.0, 1.0),
        "by_type": figures.time_by_op_type(["conv2d", "relu"], [3.0, 1.0], [2, 1]),
        "per_op": figures.time_per_operator(POINTS),
        "top": figures.top_operators(POINTS[:3]),
        "macs": figures.macs_by_op_type(["conv2d", "fully_connected"], [300_000_000, 1_000_000], [10, 1]),
        "params": figures.params_by_op_type(["conv2d"], [2_000_000]),
        "history": figures.latency_over_time(
            {"net": [LatencyPoint(t0 + timedelta(hours=h), 1.0, 1.2, h) for h in (1, 2)]}
        ),
        "compare_types": figures.compare_by_op_type(["conv2d"], [1.0], [2.0], "A", "B"),
        "deltas": figures.operator_deltas(["op1", "op2"], ["conv2d", "add"], [0.5, -0.1]),
        "compare_hist": figures.compare_histograms([1.0, 1.1], [2.0, 2.1], "A", "B"),
    }
    return {name: json.loads(text) for name, text in built.items()}


@pytest.mark.parametrize("name", list(_all_figures()))
def test_every_chart_has_titled_axes_with_units_and_data(name: str) -> None:
    fig = _all_figures()[name]
    x_title = fig["layout"]["xaxis"]["title"]["text"]
    y_title = fig["layout"]["yaxis"]["title"]["text"]
    assert x_title and y_title
    assert any(u in x_title or u in y_title for u in UNITS), (x_title, y_title)
    assert fig["data"] and all(t.get("x") is not None for t in fig["data"])
    assert 200 <= fig["layout"]["height"] <= 700  # fits a laptop screen


def test_operators_in_execution_order_get_one_trace_per_type_in_time_order() -> None:
    fig = _all_figures()["per_op"]
    assert [t["name"] for t in fig["data"]] == ["add", "relu", "conv2d"]  # most total time first
    conv = next(t for t in fig["data"] if t["name"] == "conv2d")
    assert conv["x"] == [0, 3, 6] and conv["hovertext"] == ["op0", "op3", "op6"]
    assert conv["marker"]["color"] == figures.op_type_color("conv2d")


def test_operator_types_keep_one_distinct_colour() -> None:
    common = ["conv2d", "depthwise_conv2d", "fully_connected", "batch_norm", "relu", "add", "concat"]
    assert len({figures.op_type_color(t) for t in common}) == len(common)
    assert figures.op_type_color("SomeRuntimeKernel") == figures.op_type_color("runtime")


def test_the_figure_tag_keeps_operator_names_inside_the_script() -> None:
    text = figures.top_operators([OperatorPoint(0, "</script><script>alert(1)</script>", "conv2d", 1.0)])
    html = Template('{% load dashboard_tags %}{% figure fig "chart-x" %}').render(Context({"fig": text}))
    assert html.count("</script>") == 1  # only the element's own end
    body = html.split('<script type="application/json">', 1)[1].rsplit("</script>", 1)[0]
    assert json.loads(body)["data"][0]["y"] == ["#0 </script><script>alert(1)</script>"]


def test_a_log_axis_labels_1_2_5_ticks_with_their_unit_and_holds_the_data() -> None:
    from dashboard.figures import log_axis

    axis = log_axis([0.9, 3.0, 26.0], "ms")
    assert axis["ticktext"] == ["0.5 ms", "1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms"]
    low, high = cast(list[float], axis["range"])
    assert 10**low <= 0.9 and 10**high >= 26.0
    # many decades: the 1s only, the range still holding the largest value; seconds past 1000 ms
    wide = log_axis([0.01, 5000.0], "ms")
    assert wide["ticktext"] == ["0.01 ms", "0.1 ms", "1 ms", "10 ms", "100 ms", "1 s"]
    assert 10 ** cast(list[float], wide["range"])[1] == pytest.approx(5000.0)
    assert log_axis([30, 100, 900])["ticktext"] == ["20", "50", "100", "200", "500", "1000"]
    assert log_axis([]) == {"type": "log"}
