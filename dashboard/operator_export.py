"""A job's operator table as files to download: CSV for a spreadsheet, JSON for a script.

Both carry what the job page's operator table shows (``queries.operator_breakdown``: the stored
timing rows in execution order, with MACs, share and GMAC/s computed the one way the page does),
unrounded, under column names that carry their units.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from dashboard.formatting import shapes
from dashboard.queries import Breakdown, OpRow
from server.profiling.models import ProfilingJob

# column -> what it holds, with its unit; the CSV's header and the JSON's "columns", in this order
COLUMNS: dict[str, str] = {
    "index": "the operator's position in the graph (empty: a kernel the runtime inserted)",
    "name": "the operator's name in the graph, or the runtime kernel's",
    "type": "the operator type (LatencyLab's vocabulary; 'runtime' for an inserted kernel)",
    "kernel": "the runtime's kernel that ran it",
    "input_shapes": "input tensor shapes, NCHW, e.g. 1x3x224x224",
    "output_shapes": "output tensor shapes, NCHW",
    "median_ms": "median time over its profiled runs (milliseconds; empty where the runtime reports means only)",
    "mean_ms": "mean time over its profiled runs (milliseconds)",
    "p90_ms": "90th percentile of its time (milliseconds; empty where the runtime reports means only)",
    "std_ms": "standard deviation of its time (milliseconds)",
    "runs": "how many runs timed it (count)",
    "share_percent": "its share of the summed operator time, at the median (percent)",
    "macs": "multiply-accumulates (count)",
    "gmac_per_s": "achieved throughput at the median time (GMAC per second)",
    "fused_into": "the kernel it was fused into (its own times are then empty)",
}


def _record(r: OpRow) -> dict[str, Any]:
    return {
        "index": r.index,
        "name": r.name,
        "type": r.op_type,
        "kernel": r.kernel,
        "input_shapes": r.input_shapes,
        "output_shapes": r.output_shapes,
        "median_ms": r.median,
        "mean_ms": r.mean,
        "p90_ms": r.p90,
        "std_ms": r.std,
        "runs": r.n,
        "share_percent": r.share * 100 if r.share is not None else None,
        "macs": r.macs,
        "gmac_per_s": r.gmacs_per_s,
        "fused_into": r.fused_into,
    }


def operator_records(breakdown: Breakdown) -> list[dict[str, Any]]:
    """One dict per row of the job page's operator table, keyed by ``COLUMNS``, in execution order."""
    return [_record(r) for r in breakdown.rows]


def _cell(key: str, value: Any) -> Any:
    if value is None:
        return ""
    if key in ("input_shapes", "output_shapes"):
        return shapes(value)
    if isinstance(value, float):
        return repr(value)  # every digit, as stored
    return value


def operators_csv(breakdown: Breakdown) -> str:
    """The operator table as CSV: a header of ``COLUMNS`` (units in the names), then one line per row."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for record in operator_records(breakdown):
        writer.writerow([_cell(key, record[key]) for key in COLUMNS])
    return out.getvalue()


def operators_document(job: ProfilingJob, breakdown: Breakdown) -> dict[str, Any]:
    """The operator table as a JSON document: which job, model, device and settings, what each
    column holds, and the rows."""
    return {
        "job": job.pk,
        "model": {"id": job.model_id, "name": job.model.name if job.model is not None else None},
        "device": {"id": job.device_id, "name": job.device.name, "kind": job.device.kind},
        "settings": job.settings,
        "columns": COLUMNS,
        "operators": operator_records(breakdown),
    }


__all__ = ["COLUMNS", "operator_records", "operators_csv", "operators_document"]
