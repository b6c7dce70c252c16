"""Plotly figures of a selection simulation: one network profile's view in
(``selection_summary.ProfileView``), figure JSON out. Seed 002's figures, against the SLA target:

* figure 12, CNNSelect's percentage of requests over the SLA (left axis) and of requests
  correctly classified, its effective accuracy (right axis), with the profile's mean network time
  marked: no SLA below it can be met by a server, whatever the model;
* figure 13(a), the mean end-to-end time with the 25th-75th percentiles as error bars (left axis)
  and the effective accuracy (right axis, dotted) of CNNSelect and greedy, the SLA itself dashed;
* figure 13(b), the share of CNNSelect's requests each model served, stacked.

CNNSelect and greedy have the same colours on every figure, and so does each model. The look is
the dashboard's (``figures._layout``).
"""

from __future__ import annotations

import plotly.graph_objects as go

from dashboard.figures import _AXIS, _json, _layout
from dashboard.selection_summary import ModelUsage, PolicySeries, ProfileView

POLICY_COLORS = {
    "cnnselect": "#2a9d8f",
    "cnnselect_lab": "#2f6fde",
    "greedy": "#e8702a",
    "greedy_budget": "#7b61c9",
    "fastest": "#8d99ae",
    "oracle": "#1f2933",
}
MODEL_PALETTE = (
    "#2f6fde", "#e8702a", "#2a9d8f", "#c8553d", "#7b61c9", "#e9b949",
    "#3d9be9", "#9c6644", "#d64d8a", "#5c946e", "#8d99ae", "#4059ad",
)  # fmt: skip
MISS_COLOR = "#c8553d"
SLA_COLOR = "#9aa5b1"
_HEIGHT = 380
_LEGEND_BELOW = {"orientation": "h", "y": -0.22, "x": 0}
_RIGHT_PERCENT = {
    **_AXIS,
    "title": {"text": "accuracy: correctly classified (%)"},
    "overlaying": "y",
    "side": "right",
    "range": [0, 100],
    "tickvals": [0, 20, 40, 60, 80, 100],  # else plotly lines its ticks up with the left axis' grid
    "showgrid": False,
}


def policy_color(policy: str) -> str:
    """The colour of a policy on every figure."""
    return POLICY_COLORS.get(policy, "#9c6644")


def model_color(index: int) -> str:
    """The colour of the simulation's ``index``-th candidate model on every figure."""
    return MODEL_PALETTE[index % len(MODEL_PALETTE)]


def _network_marker(view: ProfileView) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """A dotted vertical line at the profile's mean network time and its label: (shapes, annotations)."""
    return (
        [
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": view.mean_network_ms,
                "x1": view.mean_network_ms,
                "y0": 0,
                "y1": 1,
                "line": {"color": SLA_COLOR, "dash": "dot", "width": 1.5},
            }
        ],
        [
            {
                "x": view.mean_network_ms,
                "y": 1,
                "xref": "x",
                "yref": "paper",
                "text": f"mean network {view.mean_network_ms:.0f} ms",
                "showarrow": False,
                "xanchor": "left",
                "yanchor": "top",
                "font": {"size": 11, "color": "#52606d"},
            }
        ],
    )


# -- figure 12 ---------------------------------------------------------------------------------


def over_sla_and_accuracy(view: ProfileView) -> str | None:
    """Figure 12: CNNSelect's requests over the SLA (%, left) and its effective accuracy (%,
    right) against the SLA target; None when CNNSelect was not simulated."""
    s = view.series.get("cnnselect")
    if s is None:
        return None
    traces = [
        go.Scatter(
            x=list(s.sla_ms),
            y=list(s.over_sla_pct),
            mode="lines+markers",
            name="requests over the SLA (%)",
            line={"color": MISS_COLOR, "width": 2},
            marker={"size": 6},
            hovertemplate="SLA %{x:g} ms: %{y:.1f} % of requests over it<extra></extra>",
        ),
        go.Scatter(
            x=list(s.sla_ms),
            y=list(s.effective_accuracy),
            mode="lines+markers",
            name="correctly classified (%)",
            yaxis="y2",
            line={"color": policy_color("cnnselect"), "width": 2},
            marker={"size": 6, "symbol": "square"},
            hovertemplate="SLA %{x:g} ms: %{y:.1f} % correctly classified (effective accuracy)<extra></extra>",
        ),
    ]
    shapes, annotations = _network_marker(view)
    fig = go.Figure(
        traces,
        layout=_layout(
            _HEIGHT,
            "SLA target (ms)",
            "requests over the SLA (%)",
            yaxis={"range": [0, 100]},
            yaxis2=_RIGHT_PERCENT,
            legend=_LEGEND_BELOW,
            hovermode="x unified",
            shapes=shapes,
            annotations=annotations,
        ),
    )
    return _json(fig)


# -- figure 13(a) ------------------------------------------------------------------------------


def _quartiles(s: PolicySeries) -> dict[str, object]:
    """Error bars from the mean down to the 25th percentile and up to the 75th."""
    return {
        "type": "data",
        "symmetric": False,
        "array": [max(0.0, hi - m) for hi, m in zip(s.p75_e2e_ms, s.mean_e2e_ms, strict=True)],
        "arrayminus": [max(0.0, m - lo) for lo, m in zip(s.p25_e2e_ms, s.mean_e2e_ms, strict=True)],
        "thickness": 1.2,
        "width": 3,
    }


def latency_and_accuracy(view: ProfileView) -> str | None:
    """Figure 13(a): mean end-to-end time with 25th-75th percentile bars (left) and effective
    accuracy (right, dotted) of CNNSelect (both readings) and greedy against the SLA target; None
    when none was simulated."""
    compared = [view.series[p] for p in ("cnnselect", "cnnselect_lab", "greedy") if p in view.series]
    if not compared:
        return None
    traces: list[go.Scatter] = []
    for s in compared:
        color = policy_color(s.policy)
        traces.append(
            go.Scatter(
                x=list(s.sla_ms),
                y=list(s.mean_e2e_ms),
                mode="lines+markers",
                name=f"{s.label} end-to-end (ms)",
                legendgroup=s.policy,
                line={"color": color, "width": 2},
                marker={"size": 6},
                error_y=_quartiles(s),
                customdata=[[lo, hi] for lo, hi in zip(s.p25_e2e_ms, s.p75_e2e_ms, strict=True)],
                hovertemplate=f"{s.label}, SLA %{{x:g}} ms: mean %{{y:.1f}} ms"
                "<br>p25 %{customdata[0]:.1f} – p75 %{customdata[1]:.1f} ms<extra></extra>",
            )
        )
        traces.append(
            go.Scatter(
                x=list(s.sla_ms),
                y=list(s.effective_accuracy),
                mode="lines+markers",
                name=f"{s.label} accuracy (%)",
                legendgroup=s.policy,
                yaxis="y2",
                line={"color": color, "width": 1.5, "dash": "dot"},
                marker={"size": 5, "symbol": "square-open"},
                hovertemplate=f"{s.label}, SLA %{{x:g}} ms: accuracy %{{y:.1f}} %<extra></extra>",
            )
        )
    slas = list(compared[0].sla_ms)
    traces.append(
        go.Scatter(
            x=slas,
            y=slas,
            mode="lines",
            name="SLA target",
            line={"color": SLA_COLOR, "dash": "dash", "width": 1},
            hovertemplate="end-to-end = SLA: %{y:g} ms<extra></extra>",
        )
    )
    fig = go.Figure(
        traces,
        layout=_layout(
            _HEIGHT,
            "SLA target (ms)",
            "end-to-end time (ms)",
            yaxis={"rangemode": "tozero"},
            yaxis2=_RIGHT_PERCENT,
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


# -- figure 13(b) ------------------------------------------------------------------------------


def _usage_bar(u: ModelUsage, slas: list[str]) -> go.Bar:
    return go.Bar(
        x=slas,
        y=[100.0 * s for s in u.share],
        name=u.model,
        marker={"color": model_color(u.index)},
        hovertemplate=f"{u.model} ({u.accuracy:g} %, μ {u.mu_ms:.3g} ms), SLA %{{x}} ms: "
        "%{y:.1f} % of requests<extra></extra>",
    )


def model_usage(view: ProfileView) -> str | None:
    """Figure 13(b): the share of CNNSelect's requests each model served at each SLA target,
    stacked, the fastest model at the bottom; None when CNNSelect was not simulated."""
    s = view.series.get("cnnselect")
    if s is None or not view.usage:
        return None
    # One bar per SLA target, side by side whatever their spacing (a numeric axis would size every
    # bar by the closest pair of targets).
    slas = [f"{t:g}" for t in s.sla_ms]
    fig = go.Figure(
        [_usage_bar(u, slas) for u in view.usage],
        layout=_layout(
            _HEIGHT,
            "SLA target (ms)",
            "CNNSelect's requests (%)",
            xaxis={"type": "category"},
            yaxis={"range": [0, 100]},
            barmode="stack",
            bargap=0.1,
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


__all__ = [
    "POLICY_COLORS",
    "latency_and_accuracy",
    "model_color",
    "model_usage",
    "over_sla_and_accuracy",
    "policy_color",
]
