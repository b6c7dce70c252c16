"""Plotly figures of a predictor's evaluation: plain data in, figure JSON out.

The three charts of paper 001's evaluation (section 5): predicted vs measured end-to-end latency
of the test networks with the y = x line, MAPE per kernel type, and MAPE vs training size with
one line per method (the same colour for a method on every chart). The look is the dashboard's
(``figures._layout``); MAPE is stored as a fraction and drawn in percent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from dashboard.figures import _json, _layout, log_axis, op_type_color
from dashboard.predictor_queries import CurvePoint, EvaluationPoint, KernelError, Peer

METHOD_COLORS = {"lasso": "#2f6fde", "rf": "#2a9d8f", "gbdt": "#e8702a", "mlp": "#7b61c9"}
_OTHER = "#8d99ae"
_LINE = "#1f2933"
BAND = 0.10  # the ±10 % lines around y = x on the scatter


def method_color(method: str) -> str:
    """The colour of a method on every predictor chart."""
    return METHOD_COLORS.get(method, _OTHER)


def predicted_vs_measured(points: Sequence[EvaluationPoint], method: str = "") -> str:
    """Each test network's predicted end-to-end latency against its measured one, with y = x and ±10 %."""
    values = [p.measured_ms for p in points] + [p.predicted_ms for p in points]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.04 or hi * 0.04 or 1.0
    lo, hi = max(0.0, lo - pad), hi + pad
    traces = [
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            name="y = x",
            line={"color": _LINE, "width": 1},
            hoverinfo="skip",
        ),
        go.Scatter(
            x=[lo, hi, None, lo, hi],
            y=[lo * (1 + BAND), hi * (1 + BAND), None, lo * (1 - BAND), hi * (1 - BAND)],
            mode="lines",
            name=f"±{BAND:.0%}",
            line={"color": "#9aa5b1", "width": 1, "dash": "dot"},
            hoverinfo="skip",
        ),
        go.Scatter(
            x=[p.measured_ms for p in points],
            y=[p.predicted_ms for p in points],
            mode="markers",
            name="test networks",
            marker={"color": method_color(method) if method else METHOD_COLORS["lasso"], "size": 6, "opacity": 0.75},
            hovertext=[p.name for p in points],
            customdata=[p.error * 100 for p in points],
            hovertemplate="%{hovertext}<br>measured %{x:.3f} ms<br>predicted %{y:.3f} ms (%{customdata:+.1f}%)"
            "<extra></extra>",
        ),
    ]
    fig = go.Figure(
        traces,
        layout=_layout(
            420,
            "measured end-to-end latency (ms)",
            "predicted end-to-end latency (ms)",
            xaxis={"range": [lo, hi]},
            yaxis={"range": [lo, hi]},  # the same range on both axes: y = x is the diagonal
            legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
            hovermode="closest",
        ),
    )
    return _json(fig)


def mape_by_kernel_type(errors: Sequence[KernelError]) -> str:
    """MAPE of each kernel type's model on the test networks, the largest error on top."""
    fig = go.Figure(
        go.Bar(
            x=[e.mape * 100 for e in errors],
            y=[e.kernel_type for e in errors],
            orientation="h",
            marker={"color": [op_type_color(e.kernel_type) for e in errors]},
            customdata=[e.count if e.count is not None else "?" for e in errors],
            hovertemplate="%{y}: %{x:.2f}% MAPE over %{customdata} kernels<extra></extra>",
        ),
        layout=_layout(
            max(220, min(640, 60 + 24 * len(errors))),
            "MAPE (%)",
            "kernel type",
            # Kernel types are long ("dw_conv_plus_1x1/nchwc8"): without an explicit standoff,
            # plotly puts the title against the labels' edge, where it touches or overlaps them;
            # automargin then widens the margin to hold labels, gap and title.
            yaxis={
                "autorange": "reversed",
                "automargin": True,
                "ticklabelstandoff": 6,
                "title": {"text": "kernel type", "standoff": 14},
            },
            showlegend=False,
        ),
    )
    return _json(fig)


@dataclass(frozen=True)
class Curve:
    """One predictor version's MAPE vs training size; ``current`` is the page's own predictor."""

    label: str
    method: str
    points: Sequence[CurvePoint]
    current: bool = False


def mape_vs_training_size(curves: Sequence[Curve]) -> str:
    """End-to-end MAPE against the number of training networks, one line per predictor version,
    coloured by method; the page's own predictor drawn thicker."""
    traces = [
        go.Scatter(
            x=[p.n for p in c.points],
            y=[p.e2e_mape * 100 for p in c.points],
            mode="lines+markers",
            name=c.label + (" (this)" if c.current else ""),
            legendgroup=c.method,
            line={"color": method_color(c.method), "width": 3 if c.current else 1.5},
            marker={"size": 9 if c.current else 6},
            hovertemplate=c.label + ": %{y:.2f}% with %{x} training networks<extra></extra>",
        )
        for c in curves
    ]
    sizes = [p.n for c in curves for p in c.points if p.n > 0]
    # Paper 001 samples 30, 100 and 900 networks: a log axis spaces them evenly.
    log = bool(sizes) and max(sizes) >= 10 * min(sizes)
    fig = go.Figure(
        traces,
        layout=_layout(
            340,
            "training networks (count)",
            "end-to-end MAPE (%)",
            xaxis=log_axis(sizes) if log else None,
            yaxis={"rangemode": "tozero"},
            legend={"orientation": "h", "y": -0.25},
            hovermode="closest",
        ),
    )
    return _json(fig)


def curves_of(peers: Sequence[Peer]) -> list[Curve]:
    """The training-size curves of a scenario's ready versions (those that have one)."""
    return [Curve(p.label, p.method, p.curve, p.current) for p in peers if p.curve]
