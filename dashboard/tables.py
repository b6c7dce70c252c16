"""The bodies of the dashboard's long tables (hundreds of rows), as HTML built in Python.

Why not templates: a 500-row table of a dozen cells costs ~100 ms through Django's template
engine (and as much through ``format_html``, whose lazy-aware escaping is slow), a third of a
page's 300 ms budget. Here each row is one f-string with the standard library's ``html.escape``
applied to every value that comes from a row: a few ms for 500 rows. The markup matches what
``static/dashboard/dashboard.js`` sorts (``data-value``) and filters (``data-op-type``).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from html import escape
from typing import Any

from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from dashboard import formatting
from dashboard.figures import op_type_color
from dashboard.queries import FleetRow, OpDelta, OpRow

_PK = 987654321


def _url_for(name: str) -> tuple[str, str]:
    """A route's text before and after its pk, from one reverse() (not one per row)."""
    before, after = reverse(name, args=[_PK]).split(str(_PK))
    return before, after


def sort_value(value: float | int | None) -> str:
    """A number as the sortable tables read it ('' sorts last)."""
    return "" if value is None else repr(float(value))


def _num(value: float | int | None, text: str) -> str:
    return f'<td class="num" data-value="{sort_value(value)}">{text}</td>'


def _type_cell(op_type: str) -> str:
    return (
        f'<td class="nowrap"><span class="swatch" style="background: {op_type_color(op_type)}"></span>'
        f"{escape(op_type)}</td>"
    )


def _breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity after each ``/`` and ``::``: exported ONNX
    names (``/backbone/stage3/block2/expand/Conv``) and runtime kernels have no space to wrap at,
    and one unbroken name would push the table's last columns out of its card."""
    return escape(text).replace("/", "/<wbr>").replace("::", "::<wbr>")


def _join(rows: Iterable[str]) -> SafeString:
    return mark_safe("\n".join(rows))  # noqa: S308 - every row value is escaped where it is built


# -- a job's operators -------------------------------------------------------------------------


def _operator_row(r: OpRow) -> str:
    if r.index is not None:
        index = f'<td class="num" data-value="{r.position}">{r.index}</td>'
    else:
        index = (
            f'<td class="num" data-value="{r.position}"><span class="muted" title="inserted by the runtime">'
            "rt</span></td>"
        )
    if r.timed:
        timing = (
            _num(r.median, formatting.ms(r.median))
            + _num(r.mean, formatting.ms(r.mean))
            + _num(r.p90, formatting.ms(r.p90))
            + _num(r.std, formatting.ms(r.std))
            + f'<td class="num" data-value="{sort_value(r.share)}"><span class="sharebar" '
            f'style="width: {round((r.share or 0.0) * 60)}px"></span>{formatting.percent(r.share)}</td>'
        )
    else:
        into = _breakable(r.fused_into or "another kernel")
        timing = f'<td class="muted small" colspan="5" data-value="">fused into <span class="mono">{into}</span></td>'
    gmacs = r.gmacs_per_s
    fused = "" if r.timed else ' class="fused"'
    return (
        f'<tr data-op-type="{escape(r.op_type)}"{fused}>{index}'
        f'<td class="mono wrap">{_breakable(r.name)}</td>{_type_cell(r.op_type)}'
        f'<td class="mono small wrap">{_breakable(r.kernel)}</td>'
        f'<td class="mono small">{escape(formatting.shapes(r.input_shapes))}</td>'
        f'<td class="mono small">{escape(formatting.shapes(r.output_shapes))}</td>'
        f"{timing}{_num(r.macs, formatting.si(r.macs))}{_num(gmacs, f'{gmacs:.1f}' if gmacs else '')}</tr>"
    )


def operator_rows(rows: list[OpRow]) -> SafeString:
    """The job page's operator table: timings, share, MACs and GMAC/s; fused rows say into what."""
    return _join(_operator_row(r) for r in rows)


# -- a model's operators -----------------------------------------------------------------------


def model_operator_rows(table: list[dict[str, Any]]) -> SafeString:
    """The model page's operator table: shapes, MACs, parameters and attributes."""
    return _join(
        f'<tr data-op-type="{escape(op["type"])}"><td class="num">{op["index"]}</td>'
        f'<td class="mono">{escape(op["name"])}</td>{_type_cell(op["type"])}'
        f'<td class="mono small">{escape(formatting.shapes(op["input_shapes"]))}</td>'
        f'<td class="mono small">{escape(formatting.shapes(op["output_shapes"]))}</td>'
        f"{_num(op['macs'], formatting.si(op['macs']))}{_num(op['params'], formatting.si(op['params']))}"
        f'<td class="mono small muted">{escape(formatting.attrs(op["attrs"]))}</td></tr>'
        for op in table
    )


# -- two jobs' operators -----------------------------------------------------------------------


def _side(ms: float | None, note: str) -> str:
    if ms is None:
        return f'<td class="num" data-value=""><span class="muted small">{escape(note)}</span></td>'
    return _num(ms, formatting.ms(ms))


def _delta_row(d: OpDelta) -> str:
    delta = d.delta
    if delta is None:
        delta_cell = '<td class="num" data-value=""></td>'
    else:
        tone = "worse" if delta > 0 else "better" if delta < 0 else ""
        delta_cell = f'<td class="num {tone}" data-value="{sort_value(delta)}">{delta:+.4f}</td>'
    return (
        f'<tr data-op-type="{escape(d.op_type)}"><td class="mono">{escape(d.label)}</td>{_type_cell(d.op_type)}'
        f"{_side(d.a_ms, d.a_note)}{_side(d.b_ms, d.b_note)}{delta_cell}"
        f"{_num(d.ratio, formatting.ratio(d.ratio))}</tr>"
    )


def delta_rows(deltas: list[OpDelta]) -> SafeString:
    """The comparison's per-operator table: A, B, B − A and B / A."""
    return _join(_delta_row(d) for d in deltas)


# -- the fleet ---------------------------------------------------------------------------------


def _stamp(when: datetime | None) -> tuple[str, str]:
    if when is None:
        return "", "never"
    return str(int(when.timestamp())), when.strftime("%Y-%m-%d %H:%M:%S UTC")


def fleet_rows(rows: list[FleetRow]) -> SafeString:
    """The overview's device table: kind, hardware, state (and why it is offline; "dataset" for a
    device known only from imported measurements), heartbeat, current job, queue depth."""
    device_url, job_url = _url_for("dashboard:device"), _url_for("dashboard:job")
    out = []
    for r in rows:
        d = r.device
        ts, full = _stamp(d.last_heartbeat)
        if r.current_job is not None:
            job = r.current_job
            percent = round(job.progress * 100)
            current = (
                f'<a href="{job_url[0]}{job.pk}{job_url[1]}">#{job.pk} {escape(job.title)}</a>'
                f'<div class="progress mini" role="progressbar" aria-label="progress of job {job.pk}" '
                f'aria-valuemin="0" aria-valuemax="100" aria-valuenow="{percent}" data-job-id="{job.pk}" '
                f'data-active="1"><div class="fill" style="width: {percent}%"></div></div>'
            )
        elif r.busy_elsewhere:
            current = '<span class="muted">another team\'s job</span>'
        else:
            current = '<span class="muted">—</span>'
        ours = f' <span class="muted small">({r.queued_ours} yours)</span>' if r.queued_ours else ""
        state, label = formatting.device_state(d)
        if state == "dataset":
            # No worker holds it: it has no heartbeat and no queue, only imported measurements.
            source = escape(str((d.hardware or {}).get("source") or "elsewhere"))
            reason = f'<div class="muted small">measurements from {source}</div>'
            heartbeat = '<td class="small" data-value="" title="no worker heart-beats a dataset device">—</td>'
            queue = '<td class="num" data-value="">—</td>'
        else:
            offline = not d.is_online and d.offline_reason
            reason = f'<div class="muted small offline-reason">{escape(d.offline_reason)}</div>' if offline else ""
            heartbeat = f'<td class="small" data-value="{ts}" title="{full}">{formatting.ago(d.last_heartbeat)}</td>'
            queue = f'<td class="num" data-value="{r.queued}">{r.queued}{ours}</td>'
        out.append(
            f'<tr><td><a href="{device_url[0]}{d.pk}{device_url[1]}">{escape(d.name)}</a> '
            f'<span class="muted small">#{d.pk}</span></td>'
            f'<td><span class="kind">{escape(d.kind)}</span></td>'
            f'<td class="small">{escape(r.hardware)}</td>'
            f'<td data-value="{escape(state)}"><span class="badge device-{escape(state)}" '
            f'data-device-state="{escape(state)}">{escape(label)}</span>{reason}</td>'
            f"{heartbeat}<td>{current}</td>{queue}</tr>"
        )
    return _join(out)
