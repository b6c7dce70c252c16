"""Stored timings as devicelab profile records: what a predictor of a team's device trains on.

A successful job's ``JobResult`` and ``OperatorTiming`` rows are turned back into the
``ProfileResult`` the worker reported, and ``devicelab.predict.record_from_result`` makes the
record from it and the job's stored graph, the same function that serves records measured
without the server. The rows keep mean, median, std and n of each operator; the other
statistics of an operator are NaN, so that a statistic we do not have cannot pass for one we
do (the deducers read the median).

A phone's ``benchmark_model`` reports averages only: its operator rows and its end-to-end result
have no median (null). An operator row's mean stands in for its median here; the end-to-end
median stays NaN and ``devicelab.predict.records.stat`` reads the mean in its place, so training
samples of a phone use the mean throughout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph import graph_from_dict
from devicelab.measure.environment import stored_environment
from devicelab.measure.stats import HIGH_CV, SampleStats
from devicelab.predict.errors import PredictorError
from devicelab.predict.records import ProfileRecord, merge_rounds, record_from_result
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.networks.services import import_limits
from server.profiling.models import JobResult, JobState, OperatorTiming

_NAN = float("nan")


def _op_stats(row: OperatorTiming) -> SampleStats | None:
    if row.mean is None or row.n is None:
        return None
    # A phone's tool reports an operator's average only: the mean stands in for the median the
    # deducers read, and the spread stays unknown (NaN), never invented.
    median = row.median if row.median is not None else row.mean
    std = row.std if row.std is not None else _NAN
    cv = std / row.mean if row.std is not None and row.mean > 0 else (0.0 if row.std is not None else _NAN)
    return SampleStats(
        n=row.n, mean=row.mean, median=median, p90=_NAN, std=std, min=_NAN, max=_NAN, cv=cv, noisy=cv > HIGH_CV
    )


def _or_nan(value: float | None) -> float:
    return _NAN if value is None else value


def _timing(row: OperatorTiming) -> OpTiming:
    return OpTiming(
        index=row.index,
        name=row.name,
        type=row.op_type,
        kernel=row.kernel,
        input_shapes=[list(s) for s in row.input_shapes],
        output_shapes=[list(s) for s in row.output_shapes],
        attrs=dict(row.attrs),
        stats=_op_stats(row),
        fused_into=row.fused_into or None,
    )


def result_from_rows(result: JobResult, timings: Sequence[OperatorTiming]) -> ProfileResult:
    """The ``ProfileResult`` a stored result was made from (operator rows in insertion order)."""
    e2e = SampleStats(
        n=result.e2e_n,
        mean=result.e2e_mean,
        median=_or_nan(result.e2e_median),
        p90=_or_nan(result.e2e_p90),
        std=_or_nan(result.e2e_std),
        min=_or_nan(result.e2e_min),
        max=_or_nan(result.e2e_max),
        cv=_or_nan(result.e2e_cv),
        noisy=result.noisy,
    )
    info = result.device_info or {}
    device = DeviceInfo(
        str(info.get("kind", "")), str(info.get("identity", "")), str(info.get("name", "")), info.get("hardware", {})
    )
    return ProfileResult(
        device=device,
        settings=ProfileSettings.from_dict(result.settings),
        e2e=e2e,
        samples_ms=list(result.samples_ms),
        cold=ColdStart(result.load_ms, result.first_run_ms),
        ops=[_timing(t) for t in timings],
        environment=stored_environment(result.environment),
    )


@dataclass(frozen=True)
class StoredRecord:
    """A profile record with where it came from."""

    record: ProfileRecord
    job_id: int
    model_id: int  # the network: records of one network never sit in both train and test
    model_sha256: str


@dataclass
class ScenarioRecords:
    """A team's records of one device and scenario, and what was left out and why."""

    records: list[StoredRecord]
    runtime: str
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> jobs

    @property
    def networks(self) -> int:
        """Distinct networks among the records."""
        return len({r.model_id for r in self.records})


def _runtime(result: JobResult) -> str:
    """The runtime a result was measured with, as its backend recorded it ("" when it did not)."""
    return str(stored_environment(result.environment).get("runtime", ""))


def result_delegate(result: JobResult) -> str:
    """The delegate a result ran with: the one its settings asked for, else the one the backend
    recorded (a phone's job without a delegate runs the tool's default); "" off phones."""
    asked = str((result.settings or {}).get("delegate") or "")
    return asked or str(stored_environment(result.environment).get("delegate") or "")


def _scenario_matches(result: JobResult, threads: int, cores: Sequence[int], precision: str, delegate: str) -> bool:
    settings = result.settings or {}
    return (
        int(settings.get("threads", 1)) == threads
        and [int(c) for c in settings.get("cores", [])] == list(cores)
        and str(settings.get("precision", "fp32")) == precision
        and result_delegate(result) == delegate
    )


def scenario_results(
    team: Team,
    device: Device,
    threads: int,
    cores: Sequence[int] = (),
    precision: str = "fp32",
    delegate: str = "",
) -> list[JobResult]:
    """The team's stored results on ``device`` measured with these threads, cores, precision and
    (on a phone) delegate, oldest first: results of another delegate are never mixed in."""
    results = (
        JobResult.objects.filter(job__team=team, job__device=device, job__state=JobState.SUCCEEDED)
        .select_related("job")
        .order_by("pk")
    )
    return [r for r in results if _scenario_matches(r, threads, cores, precision, delegate)]


def count_networks(
    team: Team,
    device: Device,
    threads: int,
    cores: Sequence[int] = (),
    precision: str = "fp32",
    delegate: str = "",
) -> int:
    """How many distinct networks (probe graphs aside) the team measured in this scenario: a cheap
    check before training."""
    ids = {r.job.model_id for r in scenario_results(team, device, threads, cores, precision, delegate)}
    return NetworkModel.objects.filter(pk__in=ids).exclude(name__in=_probe_names()).count()


def scenario_records(
    team: Team,
    device: Device,
    threads: int,
    cores: Sequence[int] = (),
    precision: str = "fp32",
    delegate: str = "",
) -> ScenarioRecords:
    """The team's records of one scenario, rebuilt from the stored rows.

    A scenario is one runtime: when the runtime was upgraded between jobs, only the results of
    the newest runtime are kept (the older ones are counted in ``skipped``).
    """
    results = scenario_results(team, device, threads, cores, precision, delegate)
    skipped: dict[str, int] = {}
    runtime = _runtime(results[-1]) if results else ""
    kept = []
    for r in results:
        if _runtime(r) != runtime:
            why = f"measured with runtime {_runtime(r)!r}, not the newest {runtime!r}"
            skipped[why] = skipped.get(why, 0) + 1
            continue
        kept.append(r)
    timings: dict[int, list[OperatorTiming]] = {}
    for t in OperatorTiming.objects.filter(result__in=[r.pk for r in kept]).order_by("pk"):
        timings.setdefault(t.result_id, []).append(t)
    models = {
        m.pk: m
        for m in NetworkModel.objects.filter(pk__in={r.job.model_id for r in kept}).only("pk", "graph", "sha256")
    }
    graphs: dict[int, Any] = {}
    records = []
    for r in kept:
        model = models[r.job.model_id]  # type: ignore[index]  # a result's job is a profile: it has a model
        graph = graphs.get(model.pk)
        if graph is None:
            graph = graphs[model.pk] = graph_from_dict(model.graph, import_limits())
        record = record_from_result(graph, result_from_rows(r, timings.get(r.pk, [])))
        records.append(StoredRecord(record, r.job_id, model.pk, model.sha256))
    return ScenarioRecords(records, runtime, skipped)


def merged_by_network(stored: Sequence[StoredRecord]) -> list[StoredRecord]:
    """One record per network: the results of repeated jobs of one network in one scenario (it
    was profiled again later, e.g. ``latencylab trainset build --rounds 3``) are merged as rounds,
    each operator row from the job it was fastest in (``devicelab.predict.merge_rounds``). A
    network whose jobs ran different kernels keeps its newest job. First-seen order is kept."""
    groups: dict[int, list[StoredRecord]] = {}
    for s in stored:
        groups.setdefault(s.model_id, []).append(s)
    out = []
    for group in groups.values():
        newest = group[-1]
        if len(group) == 1:
            out.append(newest)
            continue
        try:
            merged = merge_rounds([s.record for s in group])
        except PredictorError:
            out.append(newest)
            continue
        out.append(dataclasses.replace(newest, record=merged))
    return out


def is_probe(record: ProfileRecord) -> bool:
    """Whether the record is of one of the CPU deducer's probe graphs (they teach fusion rules
    and are never latency training data)."""
    return record.graph.name in _probe_names()


_PROBES: set[str] = set()


def _probe_names() -> set[str]:
    if not _PROBES:
        from devicelab.predict.cpu_probes import probe_graphs

        _PROBES.update(g.name for g in probe_graphs())
    return _PROBES


__all__ = [
    "ScenarioRecords",
    "StoredRecord",
    "count_networks",
    "is_probe",
    "merged_by_network",
    "result_delegate",
    "result_from_rows",
    "scenario_records",
    "scenario_results",
]
