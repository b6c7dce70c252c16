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


def _check(r: TableRow) -> str:
    if r.error:
        why = escape(r.error)
        return (
            f'<span class="badge state-failed" title="{why}">refused</span> '
            f'<span class="muted reason" title="{why}">{escape(reason(r.error, 160))}</span>'
        )
    if r.correct is True:
        return '<span class="badge state-succeeded">correct</span>'
    if r.correct is False:
        return '<span class="badge state-failed">wrong output</span>'
    return '<span class="muted">not checked</span>'


def _interval(e: RatioEstimate | None) -> str:
    if e is None:
        return '<td class="num" data-value=""></td>'
    noise = ' <span class="badge">within noise</span>' if not e.significant else ""
    return (
        f'<td class="num nowrap" data-value="{sort_value(e.low)}" data-verdict="{escape(e.verdict)}">'
        f"{e.low:.3f}–{e.high:.3f}{noise}</td>"
    )


def _row(r: TableRow) -> str:
    kinds, variant, ops = escape(r.kinds), escape(r.variant), escape(r.operators)
    error_class = ' class="error-row"' if r.error else ""
    return (
        f'<tr data-kinds="{kinds}" data-variant="{variant}" data-size="{r.size}"{error_class}>'
        f'<td class="nowrap">{kinds}</td>'
        f'<td class="small">{escape(r.experiment)}</td>'
        f'<td class="num">{r.size}</td>'
        f'<td class="small">{variant}</td>'
        f'<td class="small clip" title="{ops}">{ops}</td>'
        + _num(r.throughput, "" if r.throughput is None else f"{r.throughput:.3f}×")
        + _interval(r.estimate)
        + _num(r.busy_ratio, "" if r.busy_ratio is None else f"{r.busy_ratio:.3f}×")
        + _num(r.total_mflops, f"{r.total_mflops:.3f}")
        + _num(r.padding_fraction, percent(r.padding_fraction, 0))
        + f'<td class="small">{_check(r)}</td></tr>'
    )


def sweep_rows_html(rows: Sequence[TableRow]) -> SafeString:
    """The ``<tbody>`` rows of a sweep's table."""
    return mark_safe("\n".join(_row(r) for r in rows))  # noqa: S308 - every row value is escaped above
