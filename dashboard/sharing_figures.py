"""Plotly figures of a sharing sweep: plain data in (``server.tenancy.summary``), figure JSON out.

Seed 003's figures, for one workload against R tenants (log axis, marked at the R measured):

* figure 7, throughput (GFLOP/s) per strategy, with numpy's SGEMM on the same cores as the
  ceiling per R (numpy on the same tenants' operands, interleaved with the strategies; the median in the hover);
* figure 3, pooled p50 (solid) and p99 (dotted) latency per strategy, the whiskers spanning the
  fastest to the slowest tenant's own p50;
* figure 4, the straggler gap: the slowest tenant's p50 over the fastest's, per strategy;
* figure 5, the footprint per strategy in MiB, memory-bound rows marked with a cross, the memory model
  (fixed + R x per tenant) dotted up to the largest R that fits, the device's memory and the
  sweep's cap as lines.

Every strategy has the same colour on every figure. The look is the dashboard's (``figures._layout``).
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from dashboard.figures import _json, _layout, log_axis
from dashboard.formatting import size
from server.tenancy.models import SharingStatus
from server.tenancy.summary import Cell, StrategySeries, WorkloadFigures

STRATEGY_COLORS = {
    "exclusive": "#8d99ae",
    "exclusive_batched": "#4a5568",
    "time_only": "#e8702a",
    "space_only": "#2f6fde",
    "space_time": "#2a9d8f",
    "space_time_vbatched": "#7b61c9",
    "space_time_clblast": "#e9b949",
    "space_time_native": "#1b6f63",
}
_OTHER = "#9c6644"
CEILING_COLOR = "#1f2933"
MEMORY_BOUND_COLOR = "#c8553d"
_HEIGHT = 380
_LEGEND_BELOW = {"orientation": "h", "y": -0.22, "x": 0}
MODEL_POINTS = 16  # points of a dotted memory model line (straight on linear axes, curved on log ones)
MIB = 2**20  # figure 5 is in MiB, as every size on the pages (``formatting.size``)


def _legend_height(entries: int) -> int:
    """A chart's height with room for its legend below the plot: past two rows of three entries,
    each row takes height from the plot area, and a y title taller than the plot area is cut."""
    rows = -(-entries // 3)
    return _HEIGHT + 24 * max(0, rows - 2)


def strategy_color(strategy: str) -> str:
    """The colour of a strategy on every figure."""
    return STRATEGY_COLORS.get(strategy, _OTHER)


def _tenants_axis(tenants: Sequence[int]) -> dict[str, object]:
    """A log axis of R marked at the R values given (plotly's own ticks skip most of them)."""
    ticks = sorted(set(tenants))
    return {"type": "log", "tickvals": ticks, "ticktext": [str(t) for t in ticks]}


def _flat_line(name: str, y: float, tenants: Sequence[int], color: str, hover: str) -> go.Scatter:
    """A horizontal line across the R drawn, as a trace (it has a legend entry and a hover)."""
    lo, hi = min(tenants), max(tenants)
    return go.Scatter(
        x=[lo, hi],
        y=[y, y],
        mode="lines",
        name=name,
        line={"color": color, "dash": "dash", "width": 1.5},
        hovertemplate=hover + "<extra></extra>",
    )


def _requests(kind: str) -> str:
    return "inferences" if kind == "network" else "SGEMMs"


# -- figure 7 ----------------------------------------------------------------------------------


def throughput_lines(view: WorkloadFigures) -> str:
    """Figure 7: GFLOP/s against R per strategy (requests per second in the hover), with numpy's
    SGEMM of the same shape as the ceiling."""
    unit = _requests(view.kind)
    traces: list[go.Scatter] = [
        go.Scatter(
            x=[c.tenants for c in s.measured],
            y=[c.gflops for c in s.measured],
            mode="lines+markers",
            name=s.label,
            line={"color": strategy_color(s.strategy), "width": 2},
            marker={"size": 7},
            customdata=[c.per_s for c in s.measured],
            hovertemplate=f"{s.label}, R = %{{x}}: %{{y:.3g}} GFLOP/s, %{{customdata:.4g}} {unit}/s<extra></extra>",
        )
        for s in view.series
        if s.measured
    ]
    if view.ceiling is not None and view.ceiling.per_tenants:
        c = view.ceiling
        traces.append(
            go.Scatter(
                x=[r for r, _ in c.per_tenants],
                y=[g for _, g in c.per_tenants],
                mode="lines+markers",
                name="numpy ceiling, same tenants",
                line={"color": CEILING_COLOR, "dash": "dash", "width": 1.5},
                marker={"size": 5},
                hovertemplate=f"numpy {c.numpy} ({c.blas}) on the R tenants' own operands, R = %{{x}}: "
                "median %{y:.3g} GFLOP/s<extra></extra>",
            )
        )
    elif view.ceiling is not None and view.tenants:
        c = view.ceiling
        traces.append(
            _flat_line(
                f"numpy SGEMM ceiling ({c.best_gflops:.3g})",
                c.best_gflops,
                view.tenants,
                CEILING_COLOR,
                f"numpy {c.numpy} ({c.blas}), same cores: best {c.best_gflops:.3g} GFLOP/s, median {c.gflops:.3g}",
            )
        )
    fig = go.Figure(
        traces,
        layout=_layout(
            _legend_height(len(traces)),
            "tenants R",
            "throughput (GFLOP/s)",
            xaxis=_tenants_axis(view.tenants),
            yaxis={"rangemode": "tozero"},
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


# -- figures 3 and 4 ---------------------------------------------------------------------------


def _spread(cells: Sequence[Cell]) -> dict[str, object] | None:
    """Whiskers from the pooled p50 down to the fastest tenant's p50 and up to the slowest's."""
    if not cells or any(c.fastest_p50_ms is None or c.slowest_p50_ms is None or c.p50_ms is None for c in cells):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [max(0.0, (c.slowest_p50_ms or 0.0) - (c.p50_ms or 0.0)) for c in cells],
        "arrayminus": [max(0.0, (c.p50_ms or 0.0) - (c.fastest_p50_ms or 0.0)) for c in cells],
        "thickness": 1.2,
        "width": 4,
    }


def _latency_traces(s: StrategySeries) -> list[go.Scatter]:
    color = strategy_color(s.strategy)
    cells = s.measured
    custom = [[c.fastest_p50_ms, c.slowest_p50_ms] for c in cells]
    return [
        go.Scatter(
            x=[c.tenants for c in cells],
            y=[c.p50_ms for c in cells],
            mode="lines+markers",
            name=f"{s.label} p50",
            legendgroup=s.strategy,
            line={"color": color, "width": 2},
            marker={"size": 7},
            error_y=_spread(cells),
            customdata=custom,
            hovertemplate=f"{s.label}, R = %{{x}}: p50 %{{y:.3g}} ms"
            "<br>tenants' own p50 %{customdata[0]:.3g} – %{customdata[1]:.3g} ms<extra></extra>",
        ),
        go.Scatter(
            x=[c.tenants for c in cells],
            y=[c.p99_ms for c in cells],
            mode="lines+markers",
            name=f"{s.label} p99",
            legendgroup=s.strategy,
            line={"color": color, "width": 1.5, "dash": "dot"},
            marker={"size": 5, "symbol": "circle-open"},
            hovertemplate=f"{s.label}, R = %{{x}}: p99 %{{y:.3g}} ms<extra></extra>",
        ),
    ]


def _latency_values(view: WorkloadFigures) -> list[float]:
    """Every latency figure 3 draws (p50, p99, the whiskers' ends), for its axis's range."""
    return [
        v
        for s in view.series
        for c in s.measured
        for v in (c.p50_ms, c.p99_ms, c.fastest_p50_ms, c.slowest_p50_ms)
        if v is not None
    ]


def latency_lines(view: WorkloadFigures) -> str:
    """Figure 3: pooled p50 and p99 latency against R per strategy (log axes), whiskers from the
    fastest to the slowest tenant's own p50."""
    traces = [t for s in view.series if s.measured for t in _latency_traces(s)]
    fig = go.Figure(
        traces,
        layout=_layout(
            _legend_height(len(traces)),
            "tenants R",
            "latency of a request",
            xaxis=_tenants_axis(view.tenants),
            # ticks labelled with their unit: plotly's own log ticks are bare mantissas ("2 5 1 2")
            yaxis=log_axis(_latency_values(view), "ms"),
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


# "exclusive" serves one tenant: its gap is 0 by definition and would only flatten the others.
_NO_STRAGGLERS = ("exclusive",)


def straggler_lines(view: WorkloadFigures) -> str:
    """Figure 4: the straggler gap against R per strategy: the slowest tenant's p50 over the
    fastest's, in percent (the gap in ms and both p50s in the hover)."""
    traces = []
    for s in view.series:
        cells = [c for c in s.measured if c.gap_ratio is not None]
        if not cells or s.strategy in _NO_STRAGGLERS:
            continue
        traces.append(
            go.Scatter(
                x=[c.tenants for c in cells],
                y=[100.0 * (c.gap_ratio or 0.0) for c in cells],
                mode="lines+markers",
                name=s.label,
                line={"color": strategy_color(s.strategy), "width": 2},
                marker={"size": 7},
                customdata=[[c.gap_ms, c.fastest_p50_ms, c.slowest_p50_ms] for c in cells],
                hovertemplate=f"{s.label}, R = %{{x}}: slowest tenant +%{{y:.1f}} %"
                "<br>gap %{customdata[0]:.3g} ms (p50 %{customdata[1]:.3g} → %{customdata[2]:.3g} ms)"
                "<extra></extra>",
            )
        )
    fig = go.Figure(
        traces,
        layout=_layout(
            _legend_height(len(traces)),
            "tenants R",
            # short: a y title longer than the plot area's height is cut (the legend below takes height)
            "straggler gap (%)",
            xaxis=_tenants_axis(view.tenants),
            yaxis={"rangemode": "tozero"},
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


# -- figure 5 ----------------------------------------------------------------------------------


def _model_tenants(start: int, end: int) -> list[int]:
    """R values from ``start`` to ``end``, spaced evenly on a log axis."""
    if end <= start:
        return [end]
    ratio = (end / start) ** (1 / (MODEL_POINTS - 1))
    return sorted({start, end, *(round(start * ratio**i) for i in range(1, MODEL_POINTS - 1))})


def _model_line(s: StrategySeries) -> go.Scatter | None:
    """The strategy's footprint model from its first R to the largest R that fits, marked there."""
    if s.largest_fit is None or s.fixed_bytes is None or s.per_tenant_bytes is None or not s.footprints:
        return None
    first = min(s.footprints[0].tenants, s.largest_fit) or 1
    xs = _model_tenants(first, max(s.largest_fit, 1))
    fixed, per = s.fixed_bytes, s.per_tenant_bytes
    return go.Scatter(
        x=xs,
        y=[(fixed + r * per) / MIB for r in xs],
        mode="lines+markers",
        name=f"{s.label}: fits up to R = {s.largest_fit:,}",
        legendgroup=s.strategy,
        # toggled with its strategy's entry; a legend entry of its own per strategy made the legend
        # taller than a phone-width chart, which then scrolled it (the caption says what dotted is)
        showlegend=False,
        line={"color": strategy_color(s.strategy), "width": 1, "dash": "dot"},
        marker={"size": [0] * (len(xs) - 1) + [10], "symbol": "diamond"},
        hovertemplate=f"{s.label} model: %{{y:.4g}} MiB at R = %{{x}} ({fixed:,} + R × {per:,} bytes)<extra></extra>",
    )


def memory_lines(view: WorkloadFigures) -> str:
    """Figure 5: each strategy's footprint against R (log axes), memory-bound rows as crosses,
    its memory model dotted up to the largest R that fits; the device's memory and the cap."""
    traces: list[go.Scatter] = []
    for s in view.series:
        fits = [c for c in s.footprints if c.status == SharingStatus.OK]
        if fits:
            traces.append(
                go.Scatter(
                    x=[c.tenants for c in fits],
                    y=[(c.memory_bytes or 0) / MIB for c in fits],
                    mode="lines+markers",
                    name=s.label,
                    legendgroup=s.strategy,
                    line={"color": strategy_color(s.strategy), "width": 2},
                    marker={"size": 7},
                    hovertemplate=f"{s.label}, R = %{{x}}: %{{y:.4g}} MiB<extra></extra>",
                )
            )
        model = _model_line(s)
        if model is not None:
            traces.append(model)
    bound = [(s, c) for s in view.series for c in s.memory_bound]
    if bound:
        traces.append(
            go.Scatter(
                x=[c.tenants for _, c in bound],
                y=[(c.memory_bytes or 0) / MIB for _, c in bound],
                mode="markers",
                name="memory-bound (not run)",
                marker={
                    "symbol": "x",
                    "size": 11,
                    "color": MEMORY_BOUND_COLOR,
                    "line": {"width": 2, "color": [strategy_color(s.strategy) for s, _ in bound]},
                },
                hovertext=[s.label for s, _ in bound],
                hovertemplate="%{hovertext}, R = %{x}: needs %{y:.4g} MiB, over the budget<extra></extra>",
            )
        )
    drawn = [int(x) for t in traces for x in t.x]
    if view.device_memory_bytes is not None and drawn:
        traces.append(
            _flat_line(
                f"device memory ({size(view.device_memory_bytes)})",
                view.device_memory_bytes / MIB,
                drawn,
                CEILING_COLOR,
                f"the device's global memory: {view.device_memory_bytes:,} bytes",
            )
        )
    if view.cap_bytes is not None and view.budget_bytes is not None and drawn:
        traces.append(
            _flat_line(
                f"memory cap ({size(view.budget_bytes)})",
                view.budget_bytes / MIB,
                drawn,
                MEMORY_BOUND_COLOR,
                f"the sweep's memory cap: {view.budget_bytes:,} bytes",
            )
        )
    fig = go.Figure(
        traces,
        layout=_layout(
            _legend_height(len(traces)),
            "tenants R",
            "footprint",
            xaxis=_tenants_axis([*view.tenants, *(s.largest_fit for s in view.series if s.largest_fit)]),
            yaxis=log_axis([float(y) for t in traces for y in (t.y or ()) if y is not None], "MiB"),
            legend=_LEGEND_BELOW,
            hovermode="closest",
        ),
    )
    return _json(fig)


__all__ = [
    "STRATEGY_COLORS",
    "latency_lines",
    "memory_lines",
    "straggler_lines",
    "strategy_color",
    "throughput_lines",
]
