"""Plotly figure builders: plain data in, figure JSON out (no database, no request).

Every chart has axis titles with units and a fixed height that reads at a laptop's width; the
browser only mounts the JSON (``static/dashboard/dashboard.js``). One colour per operator type,
the same on every chart, so a conv is the same blue on the job page and on the comparison.

Speed matters here (the job page has a 300 ms budget for 500 operators): plotly validates every
property, and per-point colour arrays cost ~0.1 ms a point, so charts with many points use one
trace per operator type (which also gives a legend to toggle types) instead of a colour array.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import plotly.graph_objects as go

from devicelab.graph.ops import OPS

# -- look --------------------------------------------------------------------------------------

_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
_GRID = "#e9edf2"
_AXIS = {"gridcolor": _GRID, "zerolinecolor": "#cfd6df", "linecolor": "#cfd6df", "automargin": True}

# Built once: a named template ('plotly_white') is re-validated on every figure and costs ~45 ms.
_TEMPLATE = go.layout.Template(
    layout={
        "font": {"family": _FONT, "size": 12, "color": "#1f2933"},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "colorway": ["#2f6fde", "#e8702a", "#2a9d8f", "#c8553d", "#7b61c9", "#8d99ae"],
        "xaxis": _AXIS,
        "yaxis": _AXIS,
        "hoverlabel": {"font": {"family": _FONT, "size": 12}},
        "legend": {"bgcolor": "rgba(255,255,255,0.8)"},
    }
)

# Distinct colours for the operator types the IR knows, in vocabulary order (the common ones,
# conv / depthwise / fc, come first and get the strongest colours).
_PALETTE = (
    "#2f6fde", "#e8702a", "#2a9d8f", "#c8553d", "#7b61c9", "#e9b949", "#3d9be9", "#9c6644",
    "#d64d8a", "#5c946e", "#8d99ae", "#f28f3b", "#4059ad", "#97c160", "#b56576", "#38a3a5",
    "#ff7b9c", "#6d597a", "#a7c957", "#577590", "#f9844a", "#43aa8b", "#90be6d", "#277da1",
    "#bc6c25", "#9d4edd", "#0081a7", "#ef476f", "#118ab2", "#06d6a0", "#ffb703", "#8338ec",
    "#fb5607", "#3a86ff", "#606c38", "#e76f51",
)  # fmt: skip
_OP_COLORS = {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(OPS)}
_OTHER_COLOR = "#9aa5b1"  # runtime-inserted kernels and anything outside the vocabulary

A_COLOR = "#2f6fde"
B_COLOR = "#e8702a"


# What the operator charts plot: each operator's median time, the mean where its runtime reports
# no median (a phone's tool gives averages only; ``queries.OpRow.ms``). The second line says so
# on the axis, in small type, so that the title reads "median" without hiding the exception.
_MEAN_WHERE_NO_MEDIAN = "<br><sup>mean where no median is reported</sup>"
OPERATOR_TIME_TITLE = "median time (ms)" + _MEAN_WHERE_NO_MEDIAN
TYPE_TIME_TITLE = "sum of operator medians (ms)" + _MEAN_WHERE_NO_MEDIAN


def op_type_color(op_type: str) -> str:
    """The colour of an operator type on every chart."""
    return _OP_COLORS.get(op_type, _OTHER_COLOR)


def _layout(
    height: int, x_title: str, y_title: str, xaxis: dict | None = None, yaxis: dict | None = None, **extra: object
) -> go.Layout:
    return go.Layout(
        template=_TEMPLATE,
        height=height,
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
        xaxis={"title": {"text": x_title}, **(xaxis or {})},
        yaxis={"title": {"text": y_title}, **(yaxis or {})},
        **extra,
    )


# A legend at the bottom of the figure (the container, not the plot), below the x-axis title:
# plotly grows the bottom margin to hold it, so a legend that wraps to more rows at a narrow width
# pushes the plot up instead of covering the axis title. Placed against the plot (y=-0.22), it
# sat on the title as soon as it wrapped.
_LEGEND_BELOW = {"orientation": "h", "yref": "container", "y": 0, "yanchor": "bottom", "x": 0, "maxheight": 1}
# A legend row's height (px) at the dashboard's font, to size a figure for its legend.
_LEGEND_ROW_PX = 20

_STEPS = (1.0, 2.0, 5.0)


def _tick_label(value: float, unit: str) -> str:
    if unit == "ms" and value >= 1000:
        return f"{value / 1000:g} s"
    return f"{value:g} {unit}".rstrip()


def log_axis(values: Sequence[float], unit: str = "") -> dict[str, object]:
    """A log axis whose ticks are 1-2-5 of every decade the positive ``values`` span, each
    labelled with its unit ("2 ms", "5 ms", "10 ms", "1 s"): plotly's own log ticks are bare
    mantissas ("5 ... 100 ... 2") that do not say what decade they are in."""
    positive = [v for v in values if v > 0 and math.isfinite(v)]
    if not positive:
        return {"type": "log"}
    low, high = min(positive), max(positive)
    ticks = [
        step * 10.0**decade
        for decade in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
        for step in _STEPS
    ]
    # one tick either side of the data, so that the axis ends on a labelled value
    below = [t for t in ticks if t <= low][-1:]
    above = [t for t in ticks if t >= high][:1]
    inside = [t for t in ticks if low < t < high]
    span = sorted(set(below + inside + above))
    shown = span
    if len(shown) > 10:  # many decades: 1s and 10s only, 2 and 5 would crowd the axis
        shown = [t for t in shown if math.isclose(t / 10.0 ** math.floor(math.log10(t) + 1e-9), 1.0)]
    return {
        "type": "log",
        "tickmode": "array",
        "tickvals": shown,
        "ticktext": [_tick_label(t, unit) for t in shown],
        "range": [math.log10(span[0]), math.log10(span[-1])],
    }


def _json(fig: go.Figure) -> str:
    return fig.to_json(validate=False)  # validated as it was built


def _hbar_height(n: int) -> int:
    """Horizontal bar charts grow with their bars, within reason."""
    return max(220, min(640, 60 + 24 * n))


# -- a job -------------------------------------------------------------------------------------


def samples_histogram(samples_ms: Sequence[float], median_ms: float, p90_ms: float) -> str:
    """The distribution of a job's timed runs, with its median and p90 marked."""
    # plotly's automatic binning is coarse for a few dozen samples: ask for about one bin per
    # two samples, within bounds (nbinsx is an upper limit; plotly picks round bin edges).
    bins = max(10, min(80, len(samples_ms) // 2))
    fig = go.Figure(
        go.Histogram(
            x=list(samples_ms),
            nbinsx=bins,
            marker={"color": A_COLOR, "line": {"color": "white", "width": 1}},
            hovertemplate="%{x} ms: %{y} runs<extra></extra>",
            name="runs",
        ),
        layout=_layout(300, "end-to-end latency (ms)", "runs (count)", bargap=0.04, showlegend=False),
    )
    # Marked with plain layout shapes: add_vline() costs ~20 ms a line in validation. The median
    # sits left of the p90, so its label goes on its left and the p90's on its right.
    lines = ((median_ms, "median", "solid", "right"), (p90_ms, "p90", "dash", "left"))
    fig.update_layout(
        shapes=[
            {"type": "line", "xref": "x", "yref": "paper", "x0": v, "x1": v, "y0": 0, "y1": 1,
             "line": {"color": "#1f2933", "width": 1.5, "dash": dash}}
            for v, _, dash, _ in lines
        ],
        annotations=[
            {"x": v, "xref": "x", "y": 1, "yref": "paper", "text": f"{label} {v:.3g} ms", "showarrow": False,
             "xanchor": anchor, "yanchor": "bottom", "font": {"size": 11}}
            for v, label, _, anchor in lines
        ],
        margin={"t": 24},
    )  # fmt: skip
    return _json(fig)


def cold_vs_warm(load_ms: float, first_run_ms: float, warm_median_ms: float, warm_stat: str = "median") -> str:
    """Cold start (loading, first run) beside a warm run, in ms (``warm_stat``: "median", or
    "mean" where the runtime reported averages only)."""
    labels = ["load model", "first run (cold)", f"warm run ({warm_stat})"]
    values = [load_ms, first_run_ms, warm_median_ms]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=labels,
            orientation="h",
            marker={"color": ["#9aa5b1", "#c8553d", A_COLOR]},
            text=[f"{v:.3g} ms" for v in values],
            textposition="auto",
            hovertemplate="%{y}: %{x:.3f} ms<extra></extra>",
        ),
        layout=_layout(220, "time (ms)", "phase", yaxis={"autorange": "reversed"}, showlegend=False),
    )
    return _json(fig)


def time_by_op_type(op_types: Sequence[str], totals_ms: Sequence[float], counts: Sequence[int]) -> str:
    """Total operator time per operator type, the largest on top."""
    total = sum(totals_ms) or 1.0
    fig = go.Figure(
        go.Bar(
            x=list(totals_ms),
            y=list(op_types),
            orientation="h",
            marker={"color": [op_type_color(t) for t in op_types]},
            customdata=[[c, v / total * 100] for c, v in zip(counts, totals_ms, strict=True)],
            hovertemplate="%{y}: %{x:.3f} ms (%{customdata[1]:.1f}%), %{customdata[0]} operators<extra></extra>",
        ),
        layout=_layout(
            _hbar_height(len(op_types)),
            TYPE_TIME_TITLE,
            "operator type",
            yaxis={"autorange": "reversed"},
        ),
    )
    return _json(fig)


@dataclass(frozen=True)
class OperatorPoint:
    """One timed operator as the per-operator charts need it."""

    position: int
    name: str
    op_type: str
    ms: float


def time_per_operator(points: Sequence[OperatorPoint]) -> str:
    """Each timed operator's median time (mean where there is none) in execution order, coloured
    (and toggled) by type."""
    by_type: dict[str, list[OperatorPoint]] = {}
    for p in points:
        by_type.setdefault(p.op_type, []).append(p)
    # Legend order: the types that take the most time first.
    order = sorted(by_type, key=lambda t: -sum(p.ms for p in by_type[t]))
    traces = [
        go.Bar(
            x=[p.position for p in by_type[t]],
            y=[p.ms for p in by_type[t]],
            name=t,
            marker={"color": op_type_color(t), "line": {"width": 0}},
            hovertext=[p.name for p in by_type[t]],
            hovertemplate="#%{x} %{hovertext}<br>" + t + ": %{y:.4f} ms<extra></extra>",
        )
        for t in order
    ]
    fig = go.Figure(
        traces,
        layout=_layout(
            360,
            "operator (execution order)",
            OPERATOR_TIME_TITLE,
            bargap=0.1,
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


def top_operators(points: Sequence[OperatorPoint]) -> str:
    """The slowest operators (already chosen and sorted by the caller), slowest on top."""
    labels = [f"#{p.position} {p.name}" for p in points]
    fig = go.Figure(
        go.Bar(
            x=[p.ms for p in points],
            y=labels,
            orientation="h",
            marker={"color": [op_type_color(p.op_type) for p in points]},
            customdata=[p.op_type for p in points],
            hovertemplate="%{y} (%{customdata}): %{x:.4f} ms<extra></extra>",
        ),
        layout=_layout(_hbar_height(len(points)), OPERATOR_TIME_TITLE, "operator", yaxis={"autorange": "reversed"}),
    )
    return _json(fig)


# Stages of one inference: the client's on the host in blues and greens, the device's in warm colours.
STAGE_COLORS = {
    "decode": "#3d9be9",
    "resize_crop": "#2a9d8f",
    "normalize": "#97c160",
    "preprocess": "#e0a526",
    "model_load": "#9aa5b1",
    "inference": "#c8553d",
    "postprocess": "#7b61c9",
}


@dataclass(frozen=True)
class StageBar:
    """One stage of the time breakdown: its name and label, where it ran, its time in each pipeline (ms)."""

    name: str
    label: str
    where: str
    ms: Sequence[float]


@dataclass(frozen=True)
class Segment:
    """One segment of stacked bars: its legend label, colour and time in each bar (ms)."""

    label: str
    color: str
    ms: Sequence[float]


def stacked_bars(
    bars: Sequence[str], segments: Sequence[Segment], x_title: str, base_height: int, top: int, digits: int
) -> str:
    """One stacked horizontal bar per name in ``bars`` (top to bottom), a segment per entry of
    ``segments`` in order, the legend above the bars (``top`` px of margin for it)."""
    traces = [
        go.Bar(
            x=list(s.ms),
            y=list(bars),
            name=s.label,
            orientation="h",
            marker={"color": s.color, "line": {"color": "white", "width": 1}},
            hovertemplate=f"{s.label}: %{{x:.{digits}f}} ms<extra>%{{y}}</extra>",
        )
        for s in segments
    ]
    # At a narrow width the legend above the bars wraps to one entry a row: the figure is tall
    # enough for that, and the legend may take all of it (plotly's default caps a horizontal
    # legend at half the plot's height and gives it a scroll bar over the bars).
    fig = go.Figure(
        traces,
        layout=_layout(
            base_height + 48 * len(bars) + _LEGEND_ROW_PX * max(0, len(segments) - 3),
            x_title,
            "",
            yaxis={"autorange": "reversed"},
            barmode="stack",
            legend={
                "orientation": "h",
                "y": 1.02,
                "yanchor": "bottom",
                "x": 0,
                "traceorder": "normal",
                "maxheight": 1,
            },
        ),
    )
    fig.update_layout(margin={"t": top})  # room for the legend above the bars (more at a narrow width)
    return _json(fig)


def time_breakdown(pipelines: Sequence[str], stages: Sequence[StageBar]) -> str:
    """One stacked horizontal bar per pipeline (a JPEG's, a PNG's), a segment per stage in the
    order they run."""
    segments = [Segment(f"{s.label} ({s.where})", STAGE_COLORS.get(s.name, _OTHER_COLOR), s.ms) for s in stages]
    return stacked_bars(pipelines, segments, "median time (ms)", 150, 60, 3)


def cold_start_distribution(
    cold_total_ms: Sequence[float],
    load_ms: Sequence[float],
    first_run_ms: Sequence[float],
    hot_ms: Sequence[float],
) -> str:
    """Cold starts (load + first run, and each part) beside hot starts (the warm runs), every
    sample drawn, on a log axis: a cold start can be a hundred times a hot one."""
    rows = [
        ("cold start (load + first run)", cold_total_ms, "#c8553d"),
        ("model load", load_ms, "#9aa5b1"),
        ("first run", first_run_ms, "#e8702a"),
        ("hot start (warm run)", hot_ms, A_COLOR),
    ]
    traces = [
        go.Box(
            x=list(values),
            name=label,
            orientation="h",
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker={"color": color, "size": 5, "opacity": 0.7},
            line={"color": color},
            hovertemplate=f"{label}: %{{x:.3f}} ms<extra></extra>",
        )
        for label, values, color in rows
        if values
    ]
    fig = go.Figure(
        traces,
        layout=_layout(
            80 + 50 * len(traces),
            "time (log scale)",
            "",
            xaxis=log_axis([v for _, values, _ in rows for v in values], "ms"),
            yaxis={"autorange": "reversed"},
            showlegend=False,
        ),
    )
    return _json(fig)


# -- a model -----------------------------------------------------------------------------------


def macs_by_op_type(op_types: Sequence[str], macs: Sequence[int], counts: Sequence[int]) -> str:
    """Multiply-accumulates per operator type, in millions, the largest on top."""
    total = sum(macs) or 1
    fig = go.Figure(
        go.Bar(
            x=[m / 1e6 for m in macs],
            y=list(op_types),
            orientation="h",
            marker={"color": [op_type_color(t) for t in op_types]},
            customdata=[[c, m / total * 100] for c, m in zip(counts, macs, strict=True)],
            hovertemplate="%{y}: %{x:,.2f} M MACs (%{customdata[1]:.1f}%), %{customdata[0]} operators<extra></extra>",
        ),
        layout=_layout(
            _hbar_height(len(op_types)), "MACs (millions)", "operator type", yaxis={"autorange": "reversed"}
        ),
    )
    return _json(fig)


def params_by_op_type(op_types: Sequence[str], params: Sequence[int]) -> str:
    """Parameters per operator type, in thousands, the largest on top."""
    fig = go.Figure(
        go.Bar(
            x=[p / 1e3 for p in params],
            y=list(op_types),
            orientation="h",
            marker={"color": [op_type_color(t) for t in op_types]},
            hovertemplate="%{y}: %{x:,.1f} k parameters<extra></extra>",
        ),
        layout=_layout(
            _hbar_height(len(op_types)), "parameters (thousands)", "operator type", yaxis={"autorange": "reversed"}
        ),
    )
    return _json(fig)


# -- a device ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LatencyPoint:
    """One finished job of a series: when, its median and p90 (ms), and its id. Where the runtime
    reported aggregates only, ``median_ms`` is the mean and ``p90_ms`` None."""

    at: datetime
    median_ms: float
    p90_ms: float | None
    job_id: int


def _spread_text(p: LatencyPoint) -> str:
    if p.p90_ms is None:
        return "mean (the tool reports averages only)"
    return f"median, p90 {p.p90_ms:.3f} ms"


def latency_over_time(series: Mapping[str, Sequence[LatencyPoint]]) -> str:
    """Median latency of each model (one line each) over time on one device; p90 in the hover.
    A job whose runtime reported averages only is drawn at its mean, and its hover says so."""
    traces = [
        go.Scatter(
            x=[p.at.isoformat() for p in points],
            y=[p.median_ms for p in points],
            mode="lines+markers",
            name=label,
            customdata=[[p.job_id, _spread_text(p)] for p in points],
            hovertemplate=label + "<br>%{x}<br>%{y:.3f} ms %{customdata[1]}<br>job #%{customdata[0]}<extra></extra>",
        )
        for label, points in series.items()
    ]
    some_means = any(p.p90_ms is None for points in series.values() for p in points)
    y_title = "latency (ms, median or mean)" if some_means else "median latency (ms)"
    fig = go.Figure(
        traces,
        layout=_layout(340, "finished at (UTC)", y_title, legend=_LEGEND_BELOW),
    )
    return _json(fig)


@dataclass(frozen=True)
class ThermalPoint:
    """One finished job's temperatures: the hottest zone before and after (°C), the battery where
    it was read, and the cool-down threshold it waited for."""

    at: datetime
    job_id: int
    hottest_before: tuple[str, float] | None  # (zone, °C)
    hottest_after: tuple[str, float] | None
    battery_before: float | None
    threshold_c: float | None


def thermal_over_time(points: Sequence[ThermalPoint]) -> str:
    """A device's temperatures over its jobs: the hottest zone before and after each, the battery,
    and the cool-down threshold the job waited for (dashed)."""
    x = [p.at.isoformat() for p in points]
    traces = []
    for label, attr, color, symbol in (
        ("hottest zone before", "hottest_before", "#2a9d8f", "circle"),
        ("hottest zone after", "hottest_after", "#c8553d", "diamond"),
    ):
        values = [getattr(p, attr) for p in points]
        traces.append(
            go.Scatter(
                x=x,
                y=[v[1] if v is not None else None for v in values],
                mode="lines+markers",
                name=label,
                marker={"color": color, "symbol": symbol},
                line={"color": color},
                customdata=[[p.job_id, v[0] if v is not None else ""] for p, v in zip(points, values, strict=True)],
                hovertemplate=label
                + ": %{y:.1f} °C (%{customdata[1]})<br>%{x}<br>job #%{customdata[0]}<extra></extra>",
                connectgaps=True,
            )
        )
    if any(p.battery_before is not None for p in points):
        traces.append(
            go.Scatter(
                x=x,
                y=[p.battery_before for p in points],
                mode="lines+markers",
                name="battery before",
                marker={"color": "#7b61c9", "size": 5},
                line={"color": "#7b61c9", "width": 1},
                customdata=[p.job_id for p in points],
                hovertemplate="battery before: %{y:.1f} °C<br>%{x}<br>job #%{customdata}<extra></extra>",
                connectgaps=True,
            )
        )
    if any(p.threshold_c is not None for p in points):
        traces.append(
            go.Scatter(
                x=x,
                y=[p.threshold_c for p in points],
                mode="lines",
                name="cool-down threshold",
                line={"color": "#8d99ae", "dash": "dash", "width": 1.5},
                hovertemplate="cool-down threshold %{y:.1f} °C<extra></extra>",
                connectgaps=True,
            )
        )
    fig = go.Figure(
        traces,
        layout=_layout(320, "finished at (UTC)", "temperature (°C)", legend=_LEGEND_BELOW),
    )
    return _json(fig)


# -- two jobs ----------------------------------------------------------------------------------


def compare_by_op_type(
    op_types: Sequence[str], a_ms: Sequence[float], b_ms: Sequence[float], a_label: str, b_label: str
) -> str:
    """Time per operator type of two jobs side by side."""
    fig = go.Figure(
        [
            go.Bar(
                x=list(a_ms),
                y=list(op_types),
                orientation="h",
                name=a_label,
                marker={"color": A_COLOR},
                hovertemplate="%{y}: %{x:.3f} ms<extra>" + a_label + "</extra>",
            ),
            go.Bar(
                x=list(b_ms),
                y=list(op_types),
                orientation="h",
                name=b_label,
                marker={"color": B_COLOR},
                hovertemplate="%{y}: %{x:.3f} ms<extra>" + b_label + "</extra>",
            ),
        ],
        layout=_layout(
            _hbar_height(2 * len(op_types)),
            TYPE_TIME_TITLE,
            "operator type",
            barmode="group",
            yaxis={"autorange": "reversed"},
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        ),
    )
    return _json(fig)


def operator_deltas(labels: Sequence[str], op_types: Sequence[str], deltas_ms: Sequence[float]) -> str:
    """B minus A per operator (already chosen and sorted by the caller); slower in B is positive."""
    fig = go.Figure(
        go.Bar(
            x=list(deltas_ms),
            y=list(labels),
            orientation="h",
            marker={"color": ["#c8553d" if d > 0 else "#2a9d8f" for d in deltas_ms]},
            customdata=list(op_types),
            hovertemplate="%{y} (%{customdata}): %{x:+.4f} ms<extra></extra>",
        ),
        layout=_layout(
            _hbar_height(len(labels)),
            "B − A, median time (ms)<br><sup>positive: slower in B</sup>",
            "operator",
            yaxis={"autorange": "reversed"},
        ),
    )
    return _json(fig)


def compare_histograms(a_samples: Sequence[float], b_samples: Sequence[float], a_label: str, b_label: str) -> str:
    """The two jobs' end-to-end samples overlaid."""
    fig = go.Figure(
        [
            go.Histogram(x=list(a_samples), name=a_label, marker={"color": A_COLOR}, opacity=0.65),
            go.Histogram(x=list(b_samples), name=b_label, marker={"color": B_COLOR}, opacity=0.65),
        ],
        layout=_layout(
            300,
            "end-to-end latency (ms)",
            "runs (count)",
            barmode="overlay",
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
        ),
    )
    return _json(fig)
