"""The body of a sharing sweep's row table (a few hundred rows), as HTML built in Python.

As ``dashboard.fusion_tables``: hundreds of rows through Django's template engine cost hundreds of
ms, here a few. Every value that comes from a row is escaped with ``html.escape``; the markup
matches what ``static/dashboard/dashboard.js`` sorts (``data-value``).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from django.utils.safestring import SafeString, mark_safe

from dashboard.formatting import ms, percent, reason, size
from dashboard.tables import sort_value
from server.tenancy.models import SharingStatus
from server.tenancy.summary import Cell, strategy_label

_STATUS_BADGES: dict[str, tuple[str, str]] = {  # status -> (badge class, label)
    SharingStatus.MEMORY_BOUND: ("state-cancelled", "memory-bound"),
    SharingStatus.UNSUPPORTED: ("state-queued", "unsupported"),
    SharingStatus.ERROR: ("state-failed", "error"),
}


def _num(value: float | None, text: str) -> str:
    return f'<td class="num" data-value="{sort_value(value)}">{text}</td>'


def _check(c: Cell) -> str:
    if c.status != SharingStatus.OK:
        css, label = _STATUS_BADGES.get(c.status, ("state-failed", c.status))
        why = escape(c.error)
        short = escape(reason(c.error, 160))
        return f'<span class="badge {css}" title="{why}">{escape(label)}</span> <span class="muted reason" title="{why}">{short}</span>'
    if c.correct is True:
        return '<span class="badge state-succeeded">correct</span>'
    if c.correct is False:
        return '<span class="badge state-failed">wrong output</span>'
    return '<span class="muted">not checked</span>'


def _of_ceiling(c: Cell) -> str:
    r = c.of_ceiling
    if r is None:
        return '<td class="num" data-value=""></td>'
    noise = "" if r.significant else ' <span class="muted">within noise</span>'
    return (
        f'<td class="num nowrap" data-value="{sort_value(r.ratio)}" title="{escape(r.label())}, paired over '
        f'{r.rounds} rounds">{r.ratio:.2f}x <span class="muted small">[{r.low:.2f}-{r.high:.2f}]</span>{noise}</td>'
    )


def _row(c: Cell) -> str:
    workload, strategy = escape(c.workload), escape(c.strategy)
    return (
        f'<tr data-workload="{workload}" data-strategy="{strategy}" data-tenants="{c.tenants}" '
        f'data-status="{escape(c.status)}">'
        f'<td class="nowrap">{workload}</td>'
        + _num(c.tenants, str(c.tenants))
        + f'<td class="nowrap">{escape(strategy_label(c.strategy))}</td>'
        + _num(c.gflops, "" if c.gflops is None else f"{c.gflops:.3g}")
        + _of_ceiling(c)
        + _num(c.per_s, "" if c.per_s is None else f"{c.per_s:,.0f}")
        + _num(c.p50_ms, ms(c.p50_ms))
        + _num(c.p99_ms, ms(c.p99_ms))
        + _num(c.gap_ms, ms(c.gap_ms))
        + _num(c.gap_ratio, percent(c.gap_ratio, 0))
        + _num(c.memory_bytes, size(c.memory_bytes))
        + f'<td class="small">{_check(c)}</td></tr>'
    )


def sharing_rows_html(rows: Sequence[Cell]) -> SafeString:
    """The ``<tbody>`` rows of a sharing sweep's table."""
    return mark_safe("\n".join(_row(c) for c in rows))  # noqa: S308 - every row value is escaped above


__all__ = ["sharing_rows_html"]
