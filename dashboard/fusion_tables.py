"""The body of a fusion sweep's row table (hundreds of rows), as HTML built in Python.

As for ``dashboard.tables``: 400 rows through Django's template engine cost ~200 ms, here a few
ms. Every value that comes from a row is escaped with ``html.escape``; the markup matches what
``static/dashboard/dashboard.js`` sorts (``data-value``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

from dashboard.formatting import percent, reason
from dashboard.tables import sort_value
from devicelab.measure.ratios import RatioEstimate


@dataclass(frozen=True)
class TableRow:
    """One row of a sweep's table."""

    kinds: str  # "C + DWC"
    experiment: str
    size: int
    instance: int
    variant: str
    operators: str
    total_mflops: float
    throughput: float | None  # the span ratio's point estimate
    estimate: RatioEstimate | None  # its interval (None: refused, or stored without one)
    busy_ratio: float | None
    padding_fraction: float | None
    correct: bool | None
    error: str


def _num(value: float | None, text: str) -> str:
    return f'<td class="num" data-value="{sort_value(value)}">{text}</td>'


# Column widths that keep the whole table, its Check column last, inside a 1400 px page: the
# operators and a refusal's reason wrap or clip in a few dozen characters (whole in their title).
OPERATORS_WIDTH = "max-width: 32ch"
REASON_WIDTH = "max-width: 30ch"


def _check(r: TableRow) -> str:
    if r.error:
        why = escape(r.error)
        return (
            f'<span class="badge state-failed" title="{why}">refused</span> '
            f'<span class="muted reason" style="{REASON_WIDTH}" title="{why}">{escape(reason(r.error, 90))}</span>'
        )
    if r.correct is True:
        return '<span class="badge state-succeeded">correct</span>'
    if r.correct is False:
        return '<span class="badge state-failed">wrong output</span>'
    return '<span class="muted">not checked</span>'


def _span(r: TableRow) -> str:
    """The span ratio with its interval beneath, and "within noise" where the interval holds 1."""
    if r.throughput is None:
        return '<td class="num" data-value=""></td>'
    e = r.estimate
    if e is None:  # stored before ratios had intervals
        return _num(r.throughput, f"{r.throughput:.3f}×")
    noise = ' <span class="badge">within noise</span>' if not e.significant else ""
    return (
        f'<td class="num nowrap" data-value="{sort_value(e.ratio)}" data-verdict="{escape(e.verdict)}">'
        f'{e.ratio:.3f}×{noise}<br><span class="muted small">[{e.low:.3f}–{e.high:.3f}]</span></td>'
    )


def _kinds_text(r: TableRow) -> str:
    """``C + DWC`` for a combination, ``3 × C_1x1`` for figure 9's N copies of one operator."""
    if r.experiment == "identical":
        return f"{r.size} × {r.kinds.split(' + ')[0]}"
    return r.kinds


def _row(r: TableRow) -> str:
    kinds, variant, ops = escape(r.kinds), escape(r.variant), escape(r.operators)
    error_class = ' class="error-row"' if r.error else ""
    return (
        f'<tr data-kinds="{kinds}" data-variant="{variant}" data-size="{r.size}" '
        f'data-experiment="{escape(r.experiment)}"{error_class}>'
        f'<td class="nowrap">{escape(_kinds_text(r))}</td>'
        f'<td class="num">{r.size}</td>'
        f'<td class="small">{variant}</td>'
        f'<td class="small clip" style="{OPERATORS_WIDTH}" title="{ops}">{ops}</td>'
        + _span(r)
        + _num(r.busy_ratio, "" if r.busy_ratio is None else f"{r.busy_ratio:.3f}×")
        + _num(r.total_mflops, f"{r.total_mflops:.3f}")
        + _num(r.padding_fraction, percent(r.padding_fraction, 0))
        + f'<td class="small">{_check(r)}</td></tr>'
    )


def sweep_rows_html(rows: Sequence[TableRow]) -> SafeString:
    """The ``<tbody>`` rows of a sweep's table."""
    return mark_safe("\n".join(_row(r) for r in rows))  # noqa: S308 - every row value is escaped above
