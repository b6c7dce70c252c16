"""Plotly figures of fusion sweeps and plans: plain data in, figure JSON out.

The figures of seed paper 000's section 5, drawn from a stored sweep (``server.fusion.summary``):

* figure 8a, a heatmap of throughput relative to sequential for each pair of operator kinds,
  coloured on a diverging scale around 1 (log2, so 0.5x and 2x are equally far from 1), with each
  cell's paired ratio written in it (pale and "~1" where its interval holds 1) and a switch
  between the fused variants;
* figure 8b, the distribution of the triples' paired ratios per variant, every row a point;
* figure 9, the paired ratio against N identical operators fused, with its interval as whiskers,
  one line per network's operator, solid rounded to the wave and dotted unrounded, as in the paper;
* figure 10, the paired ratio against the operators' total MFLOPs (log axis): gain, loss or
  within noise;

Every ratio is ``devicelab.measure.ratios.paired_ratio``'s (sequential over fused time, paired
over rounds); the axes say so.

and the plan's end-to-end comparison (sequential, the plan, fuse everything possible). The look is
the dashboard's (``figures._layout``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import plotly.graph_objects as go

from dashboard.figures import _json, _layout
from devicelab.measure.ratios import RatioEstimate
from server.fusion.summary import (
    ROUNDED,
    IdenticalPoint,
    IdenticalSeries,
    MflopsPoint,
    PairMatrix,
    StrategyTime,
    TriplePoint,
    variant_sort_key,
)

GAIN_COLOR = "#2a9d8f"  # fused faster than sequential
LOSS_COLOR = "#c8553d"
EVEN_COLOR = "#f7f7f7"
_LINE = "#1f2933"
VARIANT_COLORS = {"rounded": "#2f6fde", "unrounded": "#e8702a"}
# One colour per network on figure 9 (the same network keeps its colour in both variants).
_MODEL_PALETTE = ("#2f6fde", "#e8702a", "#2a9d8f", "#c8553d", "#7b61c9", "#e9b949", "#3d9be9", "#9c6644")
VARIANT_DASH = {"rounded": "solid", "unrounded": "dot"}
SIZE_SYMBOLS = {2: "circle", 3: "diamond"}
# The heatmap's colour bar is marked at powers of two (every other one over a wide range), and at
# 0.8 and 1.25 too when the range is narrow enough for them to stand apart.
_NEAR_TICKS = (0.8, 1.25)


def _colorbar_ticks(bound: float) -> list[float]:
    """Throughputs to mark on a colour bar spanning 2**-bound to 2**bound."""
    powers = [k for k in range(-12, 13) if abs(k) <= bound + 1e-9]
    step = 2 if len(powers) > 7 else 1
    ticks = [2.0**k for k in powers if k % step == 0]
    if bound < 1.5:
        ticks += [t for t in _NEAR_TICKS if abs(math.log2(t)) <= bound + 1e-9]
    return sorted(ticks)


def _one_line() -> dict[str, object]:
    """A dashed horizontal line at throughput 1: as fast as running the operators one by one."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": 1,
        "y1": 1,
        "line": {"color": _LINE, "width": 1, "dash": "dash"},
    }


def _variant_buttons(variants: Sequence[str], traces_per_variant: Sequence[int]) -> list[dict[str, object]]:
    """Plotly's own buttons (no script of ours) that show one variant's traces and hide the rest."""
    buttons = []
    for i, variant in enumerate(variants):
        visible = [j == i for j, n in enumerate(traces_per_variant) for _ in range(n)]
        buttons.append({"label": variant, "method": "restyle", "args": [{"visible": visible}]})
    return [
        {
            "type": "buttons",
            "direction": "right",
            "buttons": buttons,
            "active": 0,
            "showactive": True,
            "x": 0,
            "xanchor": "left",
            "y": 1.02,
            "yanchor": "bottom",
            "pad": {"r": 4, "t": 0},
        }
    ]


# -- figure 8a ---------------------------------------------------------------------------------


def _log2(value: float) -> float:
    return math.log2(value) if value > 0 else -10.0


def _interval(estimate: RatioEstimate | None) -> str:
    """``[0.98–1.10] within noise`` for a hover (empty without an interval)."""
    if estimate is None:
        return ""
    return f"[{estimate.low:.3f}–{estimate.high:.3f}] {estimate.verdict}"


def pair_heatmap(matrix: PairMatrix) -> str:
    """Figure 8a: each pair of kinds' paired ratio against sequential with its interval (both
    triangles filled, the diagonal is a kind fused with itself), one heatmap per variant behind a
    switch. A pair whose interval holds 1 is drawn pale: the noise cannot tell it from 1."""
    kinds = list(matrix.kinds)
    values = [c.ratio for cells in matrix.cells.values() for c in cells.values()]
    # A colour range symmetric around 1 on a log scale, shared by the variants so that switching
    # compares like with like; at least 0.8x-1.25x so that noise around 1 stays pale.
    bound = max([abs(_log2(v)) for v in values] + [math.log2(1.25)])
    ticks = _colorbar_ticks(bound)
    traces = []
    for i, variant in enumerate(matrix.variants):
        z: list[list[float | None]] = []
        text: list[list[str]] = []
        custom: list[list[list[object] | None]] = []
        for row in kinds:
            z.append([])
            text.append([])
            custom.append([])
            for col in kinds:
                cell = matrix.cell(variant, row, col)
                if cell is None:
                    z[-1].append(None)
                    text[-1].append("")
                    custom[-1].append(None)
                    continue
                est = cell.estimate
                z[-1].append(_log2(est.ratio) if est.significant else 0.0)
                text[-1].append(f"{est.ratio:.2f}<br>{'~1' if not est.significant else est.verdict}")
                busy = "—" if cell.busy is None else f"{cell.busy.ratio:.3f}× {_interval(cell.busy)}"
                custom[-1].append([est.ratio, _interval(est), cell.count, " + ".join(cell.kinds), busy])
        traces.append(
            go.Heatmap(
                x=kinds,
                y=kinds,
                z=z,
                text=text,
                texttemplate="%{text}",
                textfont={"size": 11},
                customdata=custom,
                name=variant,
                visible=i == 0,
                zmin=-bound,
                zmax=bound,
                zmid=0,
                colorscale=[[0.0, LOSS_COLOR], [0.5, EVEN_COLOR], [1.0, GAIN_COLOR]],
                colorbar={
                    "title": {"text": "fused vs<br>sequential", "side": "top"},
                    "tickvals": [math.log2(t) for t in ticks],
                    "ticktext": [f"{t:.3g}×" for t in ticks],
                },
                xgap=2,
                ygap=2,
                hoverongaps=False,
                hovertemplate="%{customdata[3]} ("
                + variant
                + "): span %{customdata[0]:.3f}× %{customdata[1]}<br>busy %{customdata[4]}"
                + "<br>paired over the rounds of %{customdata[2]} row(s)<extra></extra>",
            )
        )
    side = max(320, min(560, 120 + 52 * len(kinds)))
    fig = go.Figure(
        traces,
        layout=_layout(
            side,
            "operator kind",
            "operator kind",
            xaxis={"type": "category", "side": "bottom"},
            yaxis={"type": "category", "autorange": "reversed", "scaleanchor": "x"},
            updatemenus=_variant_buttons(matrix.variants, [1] * len(matrix.variants)),
        ),
    )
    fig.update_layout(margin={"t": 40})  # room for the variant buttons
    return _json(fig)


# -- figure 8b ---------------------------------------------------------------------------------


def triples_distribution(by_variant: Mapping[str, Sequence[TriplePoint]]) -> str:
    """Figure 8b: the paired ratio of every triple, one box per variant with each row a point
    (hover names its kinds and interval); the dashed line is sequential speed."""
    traces = [
        go.Box(
            y=[p.throughput for p in points],
            name=variant,
            boxpoints="all",
            jitter=0.5,
            pointpos=0,
            marker={"color": VARIANT_COLORS.get(variant, "#8d99ae"), "size": 6, "opacity": 0.7},
            line={"color": VARIANT_COLORS.get(variant, "#8d99ae")},
            hovertext=[" + ".join(p.kinds) for p in points],
            customdata=[_interval(p.estimate) for p in points],
            hovertemplate="%{hovertext}: %{y:.3f}× %{customdata}<extra>" + variant + "</extra>",
        )
        for variant, points in sorted(by_variant.items(), key=lambda kv: variant_sort_key(kv[0]))
    ]
    fig = go.Figure(
        traces,
        layout=_layout(
            360, "fused variant", "sequential / fused time, paired (×)", showlegend=False, shapes=[_one_line()]
        ),
    )
    return _json(fig)


# -- figure 9 ----------------------------------------------------------------------------------


def _whiskers(points: Sequence[IdenticalPoint]) -> dict[str, object] | None:
    """Error bars from each point's interval (None when a point has none)."""
    if any(p.estimate is None for p in points):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [p.estimate.high - p.throughput for p in points if p.estimate is not None],
        "arrayminus": [p.throughput - p.estimate.low for p in points if p.estimate is not None],
        "thickness": 1,
        "width": 3,
    }


def identical_lines(series: Sequence[IdenticalSeries]) -> str:
    """Figure 9: throughput against the number of identical operators fused, one colour per
    network's operator, solid rounded to the wave and dotted not rounded."""
    labels = sorted({s.label for s in series})
    colors = {label: _MODEL_PALETTE[i % len(_MODEL_PALETTE)] for i, label in enumerate(labels)}
    traces = [
        go.Scatter(
            x=[p.n for p in s.points],
            y=[p.throughput for p in s.points],
            mode="lines+markers",
            name=f"{s.label}, {s.variant}",
            legendgroup=s.label,
            line={"color": colors[s.label], "dash": VARIANT_DASH.get(s.variant, "dash"), "width": 2},
            marker={"size": 6, "symbol": "circle" if s.variant == ROUNDED else "circle-open"},
            error_y=_whiskers(s.points),
            customdata=[[p.count, _interval(p.estimate)] for p in s.points],
            hovertemplate=f"{s.label} ({s.variant})<br>N = %{{x}}: %{{y:.3f}}× %{{customdata[1]}}"
            "<br>paired over the rounds of %{customdata[0]} row(s)<extra></extra>",
        )
        for s in series
    ]
    fig = go.Figure(
        traces,
        layout=_layout(
            380,
            "identical operators fused (N)",
            "sequential / fused time, paired (×)",
            xaxis={"dtick": 1},
            legend={"orientation": "h", "y": -0.2, "x": 0},
            hovermode="closest",
            shapes=[_one_line()],
        ),
    )
    return _json(fig)


# -- figure 10 ---------------------------------------------------------------------------------


def mflops_scatter(points: Sequence[MflopsPoint]) -> str:
    """Figure 10: each combination's paired ratio against its operators' total MFLOPs (log axis),
    green where fusing gained and red where it lost beyond the noise, grey within noise; circles
    are pairs, diamonds triples. The
    rounded variant shows, the unrounded one is a click on the legend away."""
    groups: dict[tuple[str, str], list[MflopsPoint]] = {}
    for p in points:
        groups.setdefault((p.variant, p.verdict), []).append(p)
    order = {"above": 0, "below": 1, "within noise": 2}
    names = {"above": "gain (above 1)", "below": "loss (below 1)", "within noise": "within noise"}
    colors = {"above": GAIN_COLOR, "below": LOSS_COLOR, "within noise": "#8d99ae"}
    traces = []
    for (variant, verdict), group in sorted(
        groups.items(), key=lambda kv: (variant_sort_key(kv[0][0]), order.get(kv[0][1], 3))
    ):
        traces.append(
            go.Scatter(
                x=[p.total_mflops for p in group],
                y=[p.throughput for p in group],
                mode="markers",
                name=f"{variant}: {names.get(verdict, verdict)}",
                visible=True if variant == ROUNDED else "legendonly",
                marker={
                    "color": colors.get(verdict, "#8d99ae"),
                    "symbol": [SIZE_SYMBOLS.get(p.size, "square") for p in group],
                    "size": 8,
                    "opacity": 0.75,
                    "line": {"width": 0.5, "color": "white"},
                },
                hovertext=[" + ".join(p.kinds) for p in group],
                hovertemplate="%{hovertext} (" + variant + ")<br>%{x:.3g} MFLOPs: %{y:.3f}×<extra></extra>",
            )
        )
    fig = go.Figure(
        traces,
        layout=_layout(
            380,
            "total MFLOPs of the fused operators",
            "sequential / fused time, paired (×)",
            xaxis={"type": "log", "dtick": "D2"},  # labels at 1, 2 and 5 of each decade
            legend={"orientation": "h", "y": -0.22, "x": 0},
            hovermode="closest",
            shapes=[_one_line()],
        ),
    )
    return _json(fig)


# -- a plan ------------------------------------------------------------------------------------


STRATEGY_COLORS = {"sequential": "#8d99ae", "plan": "#2a9d8f", "fuse_all": "#e8702a"}


def _plan_ratio(s: StrategyTime) -> str:
    """A strategy's paired ratio on its bar: ``1.04× [1.01–1.07]``, "~1" within noise."""
    if s.estimate is None:
        return f"{s.ratio:.3f}×"
    e = s.estimate
    return f"{e.ratio:.3f}× [{e.low:.3f}–{e.high:.3f}]" + ("" if e.significant else " ~1")


def plan_comparison(strategies: Sequence[StrategyTime]) -> str:
    """The planner's comparison: the median end-to-end time of each strategy, with whiskers from
    the 10th to the 90th percentile of its runs, and the paired speed-up over sequential with its
    interval on the bar."""
    spread = all(s.p10_ms is not None and s.p90_ms is not None for s in strategies)
    text = [f"{s.median_ms:.3g} ms" + (f"<br>{_plan_ratio(s)}" if s.ratio is not None else "") for s in strategies]
    fig = go.Figure(
        go.Bar(
            x=[s.label for s in strategies],
            y=[s.median_ms for s in strategies],
            marker={"color": [STRATEGY_COLORS.get(s.name, "#2f6fde") for s in strategies]},
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [(s.p90_ms or s.median_ms) - s.median_ms for s in strategies],
                "arrayminus": [s.median_ms - (s.p10_ms or s.median_ms) for s in strategies],
                "color": _LINE,
                "thickness": 1.2,
                "width": 6,
            }
            if spread
            else None,
            text=text,
            textposition="inside",
            insidetextanchor="middle",
            customdata=[[s.p10_ms or 0.0, s.p90_ms or 0.0, s.runs] for s in strategies],
            hovertemplate="%{x}: median %{y:.3f} ms"
            + (", p10 %{customdata[0]:.3f} – p90 %{customdata[1]:.3f} ms" if spread else "")
            + " over %{customdata[2]} runs<extra></extra>",
        ),
        layout=_layout(340, "strategy", "end-to-end time (ms)", showlegend=False),
    )
    return _json(fig)
