"""Profile records: a graph with what one backend measured for it, as predictors train on them.

A ``ProfileRecord`` keeps the parts of a ``ProfileResult`` a predictor needs (per-operator rows
with the kernel names the runtime recorded, end-to-end statistics, which kernel node belongs to
which operator) next to the graph, and converts to and from plain JSON data, so measurements
can be cached on disk or rebuilt from database rows.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from devicelab.backends.base import OpTiming, ProfileResult
from devicelab.graph.ir import Graph
from devicelab.graph.jsonio import graph_from_dict, graph_to_dict
from devicelab.measure.stats import SampleStats
from devicelab.predict.errors import PredictorError

STATISTICS = ("median", "mean", "min", "p90")
_COUNTS = ("warmup_runs", "runs", "rounds")  # how much was measured, not where


@dataclass(frozen=True)
class ProfileRecord:
    """One graph measured once: per-operator rows, end-to-end statistics, settings."""

    graph: Graph
    ops: tuple[OpTiming, ...]
    e2e: SampleStats
    settings: dict[str, Any] = field(default_factory=dict)  # ProfileSettings.as_dict()
    device: str = ""  # device identity
    kernel_owner: dict[str, str | None] = field(default_factory=dict)  # kernel node -> IR operator
    runtime: str = ""  # e.g. "onnxruntime 1.31.1"
    profiled_e2e_ms: float | None = None  # mean run time in the per-operator (profiled) runs

    def kernel_sum_ms(self, statistic: str = "median") -> float:
        """Sum of the timed operator and runtime rows by ``statistic``."""
        return float(sum(stat(o.stats, statistic) for o in self.ops if o.stats is not None))

    def consistency(self, statistic: str = "median") -> tuple[float, float]:
        """(end-to-end CV, end-to-end / kernel sum): a run disturbed by other load shows a high CV
        or end-to-end and per-operator phases that disagree (they run one after the other)."""
        ks = self.kernel_sum_ms(statistic)
        return self.e2e.cv, (self.e2e_ms(statistic) / ks if ks > 0 else float("inf"))

    def e2e_ms(self, statistic: str = "median") -> float:
        """The end-to-end latency by ``statistic`` (median, mean, min, p90)."""
        return stat(self.e2e, statistic)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return {
            "graph": graph_to_dict(self.graph),
            "ops": [_timing_to_dict(o) for o in self.ops],
            "e2e": self.e2e.as_dict(),
            "settings": dict(self.settings),
            "device": self.device,
            "kernel_owner": dict(self.kernel_owner),
            "runtime": self.runtime,
            "profiled_e2e_ms": self.profiled_e2e_ms,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileRecord:
        """From ``to_dict`` data; ``PredictorError`` if it is not a record."""
        try:
            return cls(
                graph=graph_from_dict(d["graph"]),
                ops=tuple(_timing_from_dict(o) for o in d["ops"]),
                e2e=SampleStats(**d["e2e"]),
                settings=dict(d.get("settings", {})),
                device=str(d.get("device", "")),
                kernel_owner=dict(d.get("kernel_owner", {})),
                runtime=str(d.get("runtime", "")),
                profiled_e2e_ms=d.get("profiled_e2e_ms"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise PredictorError(f"not a profile record: {type(e).__name__}: {e}") from None


def stat(s: SampleStats, statistic: str) -> float:
    """One statistic of a ``SampleStats``; the median of statistics reported as aggregates only
    (a phone's ``benchmark_model`` prints no runs, so no median: NaN) is their mean."""
    if statistic not in STATISTICS:
        raise PredictorError(f"unknown statistic {statistic!r}; use one of {list(STATISTICS)}")
    value = float(getattr(s, statistic))
    if statistic == "median" and math.isnan(value):
        return float(s.mean)
    return value


def _timing_to_dict(o: OpTiming) -> dict[str, Any]:
    d = asdict(o)
    d["stats"] = None if o.stats is None else o.stats.as_dict()
    return d


def _timing_from_dict(d: dict[str, Any]) -> OpTiming:
    d = dict(d)
    d["stats"] = None if d.get("stats") is None else SampleStats(**d["stats"])
    return OpTiming(**d)


def record_from_result(graph: Graph, result: ProfileResult) -> ProfileRecord:
    """A record of one profiling run of ``graph``."""
    env = result.environment
    return ProfileRecord(
        graph=graph,
        ops=tuple(result.ops),
        e2e=result.e2e,
        settings=result.settings.as_dict(),
        device=result.device.identity,
        kernel_owner=dict(env.get("kernel_owner", {})),
        runtime=str(env.get("runtime", "")),
        profiled_e2e_ms=env.get("profiled_e2e_mean_ms"),
    )


def merge_rounds(records: Sequence[ProfileRecord], statistic: str = "median") -> ProfileRecord:
    """One record from several measurements of the same graph in the same scenario, taken at
    different times: each operator row and the end-to-end statistics come from the round in
    which they were fastest by ``statistic``.

    Interference from other work on a shared machine only adds time, and it comes in bursts
    lasting seconds (a whole profile measured in a slow second is slow throughout), so the
    fastest of several rounds spread over time is the undisturbed time; each row keeps the
    complete statistics of the round it came from. ``PredictorError`` when the records are not
    of one graph and one scenario, or the runtime ran different kernels in different rounds."""
    if not records:
        raise PredictorError("no rounds to merge")
    first = records[0]
    if len(records) == 1:
        return first
    scenario_of(records)
    keys = [_row_key(o) for o in first.ops]
    # Each round's row for each of the first round's rows: the same operator, or the same
    # runtime kernel on the same shapes (the runtime names its own kernels anew in each session).
    matched: list[list[OpTiming]] = [[o] for o in first.ops]
    for r in records[1:]:
        if r.graph.name != first.graph.name:
            raise PredictorError(f"cannot merge rounds of different graphs ({first.graph.name!r}, {r.graph.name!r})")
        slots: dict[tuple[Any, ...], list[OpTiming]] = {}
        for o in r.ops:
            slots.setdefault(_row_key(o), []).append(o)
        if sorted(map(repr, keys)) != sorted(repr(k) for k, v in slots.items() for _ in v):
            raise PredictorError(f"graph {first.graph.name!r}: the runtime ran different kernels in different rounds")
        for i, k in enumerate(keys):
            matched[i].append(slots[k].pop(0))
    ops = []
    for rows in matched:
        timed = [o for o in rows if o.stats is not None]
        ops.append(min(timed, key=lambda t: stat(t.stats, statistic)) if timed else rows[0])  # type: ignore[arg-type]
    e2e_best = min(records, key=lambda r: r.e2e_ms(statistic))
    profiled = [r.profiled_e2e_ms for r in records if r.profiled_e2e_ms is not None]
    settings = dict(first.settings)
    settings["rounds"] = len(records)
    return dataclasses.replace(
        first,
        ops=tuple(ops),
        e2e=e2e_best.e2e,
        settings=settings,
        profiled_e2e_ms=min(profiled) if profiled else None,
    )


def _row_key(o: OpTiming) -> tuple[Any, ...]:
    if o.index is not None:
        return (o.index, o.name, o.kernel)
    return (None, o.kernel, repr(o.input_shapes), repr(o.output_shapes))


def scenario_of(records: Sequence[ProfileRecord]) -> tuple[str, dict[str, Any], str]:
    """The (device, settings without run counts, runtime) all records share, or ``PredictorError``."""
    keys = set()
    for r in records:
        s = {k: v for k, v in r.settings.items() if k not in _COUNTS}
        keys.add((r.device, tuple(sorted((k, str(v)) for k, v in s.items())), r.runtime))
    if len(keys) != 1:
        raise PredictorError(f"the records come from {len(keys)} scenarios; a predictor is trained on one")
    device, items, runtime = keys.pop()
    settings = {k: v for k, v in records[0].settings.items() if k not in _COUNTS}
    return device, settings, runtime


__all__ = ["STATISTICS", "ProfileRecord", "merge_rounds", "record_from_result", "scenario_of", "stat"]
