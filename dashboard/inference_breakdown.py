"""A profile job's time breakdown and cold starts, as its page shows them: rows for the tables and
the two figures (plain data from the stored result; no measuring here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dashboard import figures
from dashboard.formatting import size
from devicelab.measure.breakdown import STAGES
from server.profiling.models import JobResult


@dataclass(frozen=True)
class StageRow:
    """One stage in the breakdown's table: its time in each pipeline (ms), where it ran, its runs."""

    label: str
    where: str
    ms: list[float]
    n: int


@dataclass(frozen=True)
class Breakdown:
    """What the page shows of a result's time breakdown and cold starts."""

    stored: dict[str, Any]  # TimeBreakdown.as_dict(), or {} when not measured
    pipelines: list[str]  # one label per pipeline: "JPEG 4032x3024, 2.1 MiB"
    totals_ms: list[float]
    rows: list[StageRow]
    cold: dict[str, Any]  # ColdStarts.as_dict()


def _pipeline_label(image: dict[str, Any]) -> str:
    return f"{str(image['format']).upper()} {image['width']}x{image['height']}, {size(image['bytes'])}"


def _stage_names(pipelines: list[dict[str, Any]]) -> list[str]:
    """Every stage any pipeline has, in the order a client runs them."""
    present = {s["name"] for p in pipelines for s in p["stages"]}
    return [name for name in STAGES if name in present]


def breakdown_of(result: JobResult) -> Breakdown:
    """The page's view of a result's breakdown and cold starts."""
    stored = dict(result.time_breakdown or {})
    pipelines = (stored.get("pipelines") or []) if stored.get("applicable") else []
    rows: list[StageRow] = []
    for name in _stage_names(pipelines):
        by_pipeline = [next((s for s in p["stages"] if s["name"] == name), None) for p in pipelines]
        first = next(s for s in by_pipeline if s is not None)
        # a stage one pipeline does not have (a phone's own preparation of its JPEG) is 0 ms there
        ms = [0.0 if s is None else float(s["central_ms"]) for s in by_pipeline]
        rows.append(StageRow(first["label"], first["where"], ms, int(first["n"])))
    return Breakdown(
        stored=stored,
        pipelines=[_pipeline_label(p["image"]) for p in pipelines],
        totals_ms=[float(p["total_ms"]) for p in pipelines],
        rows=rows,
        cold=result.cold_start_distribution,
    )


def breakdown_figures(result: JobResult, breakdown: Breakdown) -> dict[str, str | None]:
    """The stacked bar of the breakdown (None when there is none) and the cold-start distribution."""
    stages = []
    if breakdown.rows:
        names = _stage_names(breakdown.stored["pipelines"])
        stages = [figures.StageBar(name, r.label, r.where, r.ms) for name, r in zip(names, breakdown.rows)]
    samples = breakdown.cold["samples"]
    return {
        "breakdown": figures.time_breakdown(breakdown.pipelines, stages) if stages else None,
        "cold_starts": figures.cold_start_distribution(
            [s["total_ms"] for s in samples],
            [s["load_ms"] for s in samples],
            [s["first_run_ms"] for s in samples],
            list(result.samples_ms),
        ),
    }
