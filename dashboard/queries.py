"""The dashboard's read queries and aggregations, each named for the page part it feeds.

Every page is a handful of queries whatever the number of rows: counts are aggregated in the
database, and a job's per-operator breakdown is computed from one query of its timing rows.
Team scoping happens here and in the views' ``get_object_or_404`` calls: a team sees its own
models, jobs and results; devices are lab-wide, but another team's job on a device shows only
as "busy", never by name.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import BooleanField, Count, ExpressionWrapper, F, Max, Q, QuerySet
from django.db.models.functions import Coalesce

from dashboard.formatting import device_state, hardware_summary
from dashboard.phones import PhoneModel, phone_model
from devicelab.graph.ops import OPS
from server.accounts.models import Team
from server.devices.models import Device, DeviceKind, DeviceStatus
from server.labs.services import LabMachineRow, lab_machine_rows
from server.networks.models import NetworkModel
from server.networks.services import operator_table
from server.predictors.models import ImportedMeasurement
from server.profiling.models import ACTIVE_STATES, JobKind, JobResult, JobState, OperatorTiming, ProfilingJob

# A model's graph JSON can be megabytes: lists never load it.
_HEAVY_MODEL_FIELDS = ("graph", "summary")

# A result's central latency: its median, or its mean where the runtime reported aggregates only
# (a phone's benchmark_model prints count, mean, std, min and max; its median is null). Every
# query that ranks or draws results by latency reads this, so phone results are not left out.
CENTRAL_MS = Coalesce(F("result__e2e_median"), F("result__e2e_mean"))
# Whether that central value is a mean (a finished result without a median).
CENTRAL_IS_MEAN = ExpressionWrapper(
    Q(result__isnull=False, result__e2e_median__isnull=True), output_field=BooleanField()
)

# -- jobs as listed ----------------------------------------------------------------------------

_JOB_LIST_FIELDS = (
    "id",
    "team_id",
    "kind",
    "state",
    "progress",
    "progress_message",
    "settings",
    "attempts",
    "failure_reason",
    "created_at",
    "started_at",
    "finished_at",
    "model",
    "model__name",
    "device",
    "device__name",
    "device__kind",
)


def job_list(team: Team) -> QuerySet[ProfilingJob]:
    """A team's jobs, newest first, with model and device names and the result's median and p90
    (``median_ms``, ``p90_ms``; None until the job succeeded) in the same query. ``median_ms`` is
    the mean where the runtime reported no median (``central_is_mean``; its p90 stays None), and
    ``result_flags`` lists why the result should not be trusted as is (hot, throttled)."""
    return (
        ProfilingJob.objects.for_team(team)
        .select_related("model", "device")
        .only(*_JOB_LIST_FIELDS)
        .annotate(
            median_ms=CENTRAL_MS,
            p90_ms=F("result__e2e_p90"),
            central_is_mean=CENTRAL_IS_MEAN,
            result_flags=F("result__flags"),
        )
    )


def job_for_team(team: Team, pk: int) -> ProfilingJob | None:
    """One of the team's jobs with its model (without the graph), device, result and who cancelled
    it; None otherwise."""
    return (
        ProfilingJob.objects.for_team(team)
        .select_related("model", "device", "result", "cancelled_by")
        .defer(*(f"model__{f}" for f in _HEAVY_MODEL_FIELDS))
        .filter(pk=pk)
        .first()
    )


def result_of(job: ProfilingJob) -> JobResult | None:
    """The job's result, or None (no query when it was select_related)."""
    try:
        return job.result
    except JobResult.DoesNotExist:
        return None


def progress_of(team: Team, ids: list[int]) -> list[dict[str, Any]]:
    """State and progress of the team's jobs among ``ids`` (others are left out), for live bars."""
    rows = (
        ProfilingJob.objects.for_team(team)
        .filter(pk__in=ids)
        .annotate(median_ms=CENTRAL_MS)
        .values("id", "state", "progress", "progress_message", "median_ms")
    )
    return [
        {
            "id": r["id"],
            "state": r["state"],
            "progress": r["progress"],
            "message": r["progress_message"],
            "finished": r["state"] not in ACTIVE_STATES,
            "median_ms": r["median_ms"],
        }
        for r in rows
    ]


def comparable_jobs(team: Team, limit: int = 200) -> QuerySet[ProfilingJob]:
    """The team's succeeded profiling jobs, newest first: what a comparison can pick from (a fusion
    sweep or plan has no end-to-end result to compare)."""
    return job_list(team).filter(state=JobState.SUCCEEDED, kind=JobKind.PROFILE)[:limit]


def team_job_counts(team: Team) -> dict[str, int]:
    """How many of the team's jobs are in each state (one query)."""
    counts = {s: 0 for s in JobState.values}
    for row in ProfilingJob.objects.for_team(team).values("state").annotate(n=Count("id")):
        counts[row["state"]] = row["n"]
    return counts


# -- the fleet ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FleetRow:
    """A device on the overview: queue depths, and the job it runs (named only if it is ours)."""

    device: Device
    hardware: str
    queued: int
    queued_ours: int
    current_job: ProfilingJob | None
    busy_elsewhere: bool


def fleet(team: Team) -> list[FleetRow]:
    """Every device with its queue depth (all teams' and ours) and current job; two queries."""
    queued = Q(profiling_jobs__state=JobState.QUEUED)
    # Explicit order: Meta.ordering is not applied to aggregating (GROUP BY) queries.
    devices = Device.objects.annotate(
        queued=Count("profiling_jobs", filter=queued),
        queued_ours=Count("profiling_jobs", filter=queued & Q(profiling_jobs__team=team)),
    ).order_by("kind", "name", "pk")
    running: dict[int, ProfilingJob] = {}
    for job in (
        ProfilingJob.objects.running()
        .select_related("model")
        .only(
            "id",
            "team_id",
            "device_id",
            "kind",
            "settings",
            "progress",
            "progress_message",
            "started_at",
            "model__name",
        )
        .order_by("started_at")
    ):
        running.setdefault(job.device_id, job)
    rows = []
    for d in devices:
        current = running.get(d.pk)
        ours = current is not None and current.team_id == team.pk
        rows.append(
            FleetRow(
                device=d,
                hardware=hardware_summary(d.hardware or {}),
                queued=d.queued,  # type: ignore[attr-defined]
                queued_ours=d.queued_ours,  # type: ignore[attr-defined]
                current_job=current if ours else None,
                busy_elsewhere=current is not None and not ours,
            )
        )
    return rows


def lab_machines() -> list[LabMachineRow]:
    """The lab machines, for the staff's view of the fleet: last call, address, devices, whether
    revoked (two queries)."""
    return lab_machine_rows()


def fleet_counts(rows: list[FleetRow]) -> dict[str, int]:
    """Devices per state (``dataset``: imported, never online), and jobs queued on the whole fleet."""
    counts = {s: 0 for s in [*DeviceStatus.values, "dataset"]}
    for r in rows:
        state = device_state(r.device)[0]
        counts[state] = counts.get(state, 0) + 1
    counts["total"] = len(rows)
    counts["queued"] = sum(r.queued for r in rows)
    return counts


# -- a device ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImportedRow:
    """One network's imported measurements on a dataset device, as its page lists them."""

    network: str
    e2e_ms: float
    e2e_std_ms: float | None
    kernels: int
    kernel_sum_ms: float
    operators: int

    @property
    def listed_share(self) -> float | None:
        """The listed kernels' time over the end-to-end latency (the rest is overhead and
        unlisted operators)."""
        return self.kernel_sum_ms / self.e2e_ms if self.e2e_ms > 0 else None


def imported_measurements(device: Device) -> list[ImportedRow]:
    """Every network measured elsewhere on ``device`` (a dataset device), by name; one query."""
    rows = (
        ImportedMeasurement.objects.filter(device=device)
        .only("network", "e2e_ms", "e2e_std_ms", "kernels", "operators")
        .order_by("network", "source")
    )
    return [
        ImportedRow(
            network=m.network,
            e2e_ms=m.e2e_ms,
            e2e_std_ms=m.e2e_std_ms,
            kernels=len(m.kernels or []),
            kernel_sum_ms=sum(float(k.get("latency_ms") or 0.0) for k in m.kernels or []),
            operators=len(m.operators or []),
        )
        for m in rows
    ]


def queue_depth(team: Team, device: Device) -> dict[str, int]:
    """A device's queued jobs (all teams', and ours) and running jobs; one query."""
    queued = Q(state=JobState.QUEUED)
    return ProfilingJob.objects.on_device(device).aggregate(
        queued=Count("id", filter=queued),
        queued_ours=Count("id", filter=queued & Q(team=team)),
        running=Count("id", filter=Q(state=JobState.RUNNING)),
    )


def running_job(device: Device) -> ProfilingJob | None:
    """The job a device is measuring now (any team's: the caller decides what to show of it)."""
    return (
        ProfilingJob.objects.running()
        .on_device(device)
        .select_related("model")
        .only("id", "team_id", "kind", "settings", "progress", "progress_message", "model__name")
        .order_by("started_at")
        .first()
    )


@dataclass(frozen=True)
class LatencySeries:
    """Finished jobs of one model (at one thread count) on one device, oldest first."""

    label: str
    # (finished_at, median_ms, p90_ms, job_id); median_ms is the mean and p90_ms None where the
    # runtime reported aggregates only
    points: list[tuple[Any, float, float | None, int]]


def latency_history(team: Team, device: Device, limit: int = 1000) -> list[LatencySeries]:
    """The team's succeeded jobs on ``device`` grouped by model and thread count; one query."""
    rows = (
        ProfilingJob.objects.for_team(team)
        .filter(device=device, state=JobState.SUCCEEDED, result__isnull=False)
        .order_by("-finished_at")
        .annotate(central_ms=CENTRAL_MS)
        .values("id", "model_id", "model__name", "settings", "finished_at", "central_ms", "result__e2e_p90")[:limit]
    )
    groups: dict[tuple[int, int], list[Any]] = defaultdict(list)
    names: dict[int, str] = {}
    for r in rows:
        threads = int((r["settings"] or {}).get("threads", 1))
        groups[(r["model_id"], threads)].append(r)
        names[r["model_id"]] = r["model__name"]
    several_thread_counts = len({t for _, t in groups}) > 1
    series = []
    for (model_id, threads), items in sorted(groups.items(), key=lambda kv: (names[kv[0][0]], kv[0][1])):
        label = f"{names[model_id]} (#{model_id})"
        if several_thread_counts:
            label += f", {threads} thread{'s' if threads != 1 else ''}"
        points = [
            (r["finished_at"], r["central_ms"], r["result__e2e_p90"], r["id"])
            for r in sorted(items, key=lambda r: r["finished_at"])
        ]
        series.append(LatencySeries(label=label, points=points))
    return series


@dataclass(frozen=True)
class JobTemperatures:
    """One finished job on a device: when, and its zones' temperatures before and after (°C)."""

    at: Any
    job_id: int
    before_c: dict[str, float]
    after_c: dict[str, float]
    threshold_c: float | None  # the cool-down threshold it waited for, if any


def _temperatures(value: Any) -> dict[str, float]:
    if not isinstance(value, dict):
        return {}
    return {str(k): float(v) for k, v in value.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def thermal_history(team: Team, device: Device, limit: int = 200) -> list[JobTemperatures]:
    """The temperatures the team's recent succeeded jobs on ``device`` recorded (a phone's worker
    writes them into the result's environment), oldest first; jobs without any are left out.
    One query, reading only those keys of the environment."""
    rows = (
        ProfilingJob.objects.for_team(team)
        .filter(device=device, state=JobState.SUCCEEDED, result__isnull=False)
        .order_by("-finished_at")
        .values(
            "id",
            "finished_at",
            "result__environment__temperatures_before_c",
            "result__environment__temperatures_after_c",
            "result__environment__cooldown__threshold_c",
        )[:limit]
    )
    points = []
    for r in rows:
        before = _temperatures(r["result__environment__temperatures_before_c"])
        after = _temperatures(r["result__environment__temperatures_after_c"])
        if not before and not after:
            continue
        threshold = r["result__environment__cooldown__threshold_c"]
        points.append(
            JobTemperatures(
                at=r["finished_at"],
                job_id=r["id"],
                before_c=before,
                after_c=after,
                threshold_c=float(threshold) if isinstance(threshold, int | float) else None,
            )
        )
    points.sort(key=lambda p: (p.at, p.job_id))
    return points


# -- phones by model ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PhoneGroup:
    """Phones of one model: those a worker measures (``android``) and those known only from
    imported measurements (the qed phones), side by side."""

    model: PhoneModel
    measured: list[Device]
    imported: list[Device]

    @property
    def socs(self) -> list[str]:
        """The SoCs its devices report (one, unless the data disagree)."""
        return sorted({str(d.hardware.get("soc")) for d in [*self.measured, *self.imported] if d.hardware.get("soc")})


def phone_groups(devices: list[Device]) -> list[PhoneGroup]:
    """The phones among ``devices`` grouped by model (``dashboard.phones``), by model name."""
    groups: dict[str, tuple[PhoneModel, list[Device], list[Device]]] = {}
    for d in devices:
        model = phone_model(d)
        if model is None:
            continue
        _, measured, imported = groups.setdefault(model.key, (model, [], []))
        (imported if d.kind == DeviceKind.IMPORTED else measured).append(d)
    out = [PhoneGroup(model, measured, imported) for model, measured, imported in groups.values()]
    out.sort(key=lambda g: g.model.name.lower())
    return out


def same_model(device: Device) -> PhoneGroup | None:
    """The phone model group of ``device`` with the other phones of that model (measured and
    imported); None when the device is not a phone. One query."""
    model = phone_model(device)
    if model is None:
        return None
    phones = Device.objects.filter(kind__in=[DeviceKind.ANDROID, DeviceKind.IMPORTED]).only(
        "id", "kind", "name", "status", "hardware", "offline_reason"
    )
    for group in phone_groups(list(phones)):
        if group.model.key == model.key:
            return group
    return None


# -- models ------------------------------------------------------------------------------------


def model_list(team: Team) -> QuerySet[NetworkModel]:
    """The team's models, newest first, with their job count and last job time; one query."""
    return (
        NetworkModel.objects.for_team(team)
        .defer(*_HEAVY_MODEL_FIELDS)
        .select_related("created_by")
        .annotate(jobs=Count("profiling_jobs"), last_job_at=Max("profiling_jobs__created_at"))
        .order_by("-created_at", "-pk")
    )


@dataclass(frozen=True)
class TypeCost:
    """One operator type of a model: how many operators, MACs, FLOPs and parameters."""

    op_type: str
    count: int
    macs: int
    flops: int
    params: int


def model_costs(model: NetworkModel) -> tuple[list[dict[str, Any]], list[TypeCost]]:
    """A model's operator table (from its stored graph) and its costs per type, most MACs first."""
    table = operator_table(model)
    sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for row in table:
        s = sums[row["type"]]
        s[0] += 1
        s[1] += row["macs"]
        s[2] += row["flops"]
        s[3] += row["params"]
    types = [TypeCost(t, c, m, f, p) for t, (c, m, f, p) in sums.items()]
    types.sort(key=lambda t: (-t.macs, -t.params, t.op_type))
    return table, types


# -- a job's operators -------------------------------------------------------------------------


@dataclass
class OpRow:
    """One row of a job's operator table."""

    position: int  # execution order on the page (graph index; runtime kernels after)
    index: int | None
    name: str
    op_type: str
    kernel: str
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    mean: float | None
    median: float | None
    std: float | None
    n: int | None
    fused_into: str
    macs: int | None
    share: float | None = None  # of the summed operator time
    p90: float | None = None

    @property
    def timed(self) -> bool:
        """Whether it has its own measurement (not fused into another kernel)."""
        return self.mean is not None

    @property
    def ms(self) -> float | None:
        """The time the page ranks and sums: the median, or the mean where the runtime reported
        none (a phone's tool): one slow outlier run moves a mean, not a median."""
        return self.median if self.median is not None else self.mean

    @property
    def gmacs_per_s(self) -> float | None:
        """Achieved throughput in GMAC/s (at the median time), when the operator has MACs and a time."""
        if not self.macs or not self.ms:
            return None
        return self.macs / (self.ms * 1e-3) / 1e9


@dataclass(frozen=True)
class TypeTime:
    """One operator type of a job: its operators' summed median time (mean where there is none)."""

    op_type: str
    count: int
    total_ms: float
    share: float


@dataclass
class Breakdown:
    """A result's operators: rows in execution order, totals per type, the slowest ten."""

    rows: list[OpRow]
    by_type: list[TypeTime] = field(default_factory=list)
    top: list[OpRow] = field(default_factory=list)
    total_ms: float = 0.0
    fused: int = 0
    runtime_kernels: int = 0

    @property
    def op_types(self) -> list[str]:
        """The operator types present, for the table's filter."""
        return sorted({r.op_type for r in self.rows})


def _macs(op_type: str, ins: Any, outs: Any, attrs: Any) -> int | None:
    """MACs of one timed operator from its stored shapes, by devicelab's counting rules."""
    spec = OPS.get(op_type)
    if spec is None:
        return None  # a runtime-inserted kernel
    try:
        return int(spec.macs([tuple(s) for s in ins], [tuple(s) for s in outs], attrs))
    except (KeyError, TypeError, ValueError, IndexError):
        # Rows come from a worker; a row whose attrs do not fit the spec shows no MACs, not a 500.
        return None


TOP_N = 10


def operator_breakdown(result: JobResult) -> Breakdown:
    """The per-operator view of a result, from one query of its timing rows."""
    timings = OperatorTiming.objects.filter(result=result).values_list(
        "index",
        "name",
        "op_type",
        "kernel",
        "input_shapes",
        "output_shapes",
        "attrs",
        "mean",
        "median",
        "std",
        "n",
        "fused_into",
        "pk",
        "p90",
    )
    raw = sorted(timings, key=lambda t: (t[0] is None, t[0] if t[0] is not None else 0, t[12]))
    rows = []
    for position, (index, name, op_type, kernel, ins, outs, attrs, mean, median, std, n, fused, _, p90) in enumerate(
        raw
    ):
        rows.append(
            OpRow(
                position=position,
                index=index,
                name=name,
                op_type=op_type,
                kernel=kernel,
                input_shapes=ins,
                output_shapes=outs,
                mean=mean,
                median=median,
                std=std,
                n=n,
                fused_into=fused,
                macs=_macs(op_type, ins, outs, attrs) if index is not None else None,
                p90=p90,
            )
        )
    timed = [r for r in rows if r.timed]
    total = sum(r.ms or 0.0 for r in timed)
    per_type: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for r in timed:
        r.share = (r.ms or 0.0) / total if total else None
        acc = per_type[r.op_type]
        acc[0] += 1
        acc[1] += r.ms or 0.0
    by_type = [TypeTime(t, int(c), ms, ms / total if total else 0.0) for t, (c, ms) in per_type.items()]
    by_type.sort(key=lambda t: -t.total_ms)
    top = sorted(timed, key=lambda r: -(r.ms or 0.0))[:TOP_N]
    return Breakdown(
        rows=rows,
        by_type=by_type,
        top=top,
        total_ms=total,
        fused=sum(1 for r in rows if not r.timed),
        runtime_kernels=sum(1 for r in rows if r.index is None),
    )


# -- two jobs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpDelta:
    """One operator in a comparison; a side is None when the operator is missing or fused there."""

    label: str
    op_type: str
    a_ms: float | None
    b_ms: float | None
    a_note: str = ""
    b_note: str = ""

    @property
    def delta(self) -> float | None:
        """B minus A, in ms, when both sides were timed."""
        if self.a_ms is None or self.b_ms is None:
            return None
        return self.b_ms - self.a_ms

    @property
    def ratio(self) -> float | None:
        """B over A, when both were timed and A took time."""
        if self.a_ms is None or self.b_ms is None or self.a_ms <= 0:
            return None
        return self.b_ms / self.a_ms


@dataclass(frozen=True)
class TypeDelta:
    """One operator type in a comparison: summed time on each side."""

    op_type: str
    a_ms: float
    b_ms: float

    @property
    def delta(self) -> float:
        """B minus A, in ms."""
        return self.b_ms - self.a_ms


@dataclass
class Comparison:
    """Two results side by side: per-type and per-operator deltas."""

    a: Breakdown
    b: Breakdown
    by_type: list[TypeDelta]
    ops: list[OpDelta]
    matched_by: str  # "graph position" or "operator name"
    matched: int


def _side(row: OpRow | None) -> tuple[float | None, str]:
    if row is None:
        return None, "absent"
    if row.ms is None:
        return None, f"fused into {row.fused_into}" if row.fused_into else "not timed"
    return row.ms, ""


def compare(a_job: ProfilingJob, a: Breakdown, b_job: ProfilingJob, b: Breakdown) -> Comparison:
    """Match the operators of two results (by graph position for the same model, else by name)."""
    same_model = a_job.model_id == b_job.model_id
    types = sorted({t.op_type for t in a.by_type} | {t.op_type for t in b.by_type})
    a_types = {t.op_type: t.total_ms for t in a.by_type}
    b_types = {t.op_type: t.total_ms for t in b.by_type}
    by_type = [TypeDelta(t, a_types.get(t, 0.0), b_types.get(t, 0.0)) for t in types]
    by_type.sort(key=lambda t: -max(t.a_ms, t.b_ms))

    def key(r: OpRow) -> Any:
        return r.index if same_model else r.name

    # Runtime-inserted kernels have no graph position; they are matched by name either way.
    a_ops = {key(r): r for r in a.rows if r.index is not None}
    b_ops = {key(r): r for r in b.rows if r.index is not None}
    ordered_keys = list(a_ops) + [k for k in b_ops if k not in a_ops]
    deltas = []
    for k in ordered_keys:
        ra, rb = a_ops.get(k), b_ops.get(k)
        ref = ra or rb
        assert ref is not None
        a_ms, a_note = _side(ra)
        b_ms, b_note = _side(rb)
        label = f"#{ref.index} {ref.name}" if same_model else ref.name
        deltas.append(OpDelta(label, ref.op_type, a_ms, b_ms, a_note, b_note))
    a_rt = {r.name: r for r in a.rows if r.index is None}
    b_rt = {r.name: r for r in b.rows if r.index is None}
    for name in list(a_rt) + [n for n in b_rt if n not in a_rt]:
        ra, rb = a_rt.get(name), b_rt.get(name)
        ref = ra or rb
        assert ref is not None
        a_ms, a_note = _side(ra)
        b_ms, b_note = _side(rb)
        deltas.append(OpDelta(f"{name} (runtime)", ref.op_type, a_ms, b_ms, a_note, b_note))
    # Largest changes first; operators timed on one side only after them.
    deltas.sort(key=lambda d: (d.delta is None, -abs(d.delta or 0.0)))
    return Comparison(
        a=a,
        b=b,
        by_type=by_type,
        ops=deltas,
        matched_by="graph position" if same_model else "operator name",
        matched=sum(1 for k in a_ops if k in b_ops),
    )
