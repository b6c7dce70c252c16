"""Fusion experiments as jobs: submit a sweep or a plan, store what the worker measured, read rows.

A sweep's or plan's networks are zoo names (``zoo``) and the team's models (``models``, ids),
checked at submission; the worker builds their graphs (``graphs_for_job``). Storing is idempotent
and only lands for the run that holds the job's claim, as for profiling results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from devicelab.fusion import results
from devicelab.fusion.results import FusionPlanRecord, FusionRowRecord, FusionSweepRecord
from devicelab.fusion.spec import OPENCL, PRECISIONS, PlanOptions, SweepSpec, kind_order
from devicelab.graph import graph_from_dict, zoo
from devicelab.graph.ir import Graph
from devicelab.spec import SpecError
from server.accounts.models import Team
from server.devices.models import Device
from server.fusion.models import FusionMeasurement, FusionPlanResult, FusionSweepResult, kinds_key
from server.networks.models import NetworkModel
from server.networks.services import check_model_runs_on, import_limits, model_not_ready_message
from server.profiling.models import JobKind, JobState, ProfilingJob
from server.profiling.services import check_device_takes_jobs, claimed_for_ingest, finish_ingest, queue_job

# A sweep stops starting new sets this long before the task's time limit, to store its rows.
TIME_LIMIT_MARGIN_S = 300
MAX_NETWORKS = 12


def _fail(field: str, message: str) -> ValidationError:
    return ValidationError({field: message})


def _networks(team: Team, device: Device, raw: Mapping[str, Any], default_zoo: Sequence[str]) -> dict[str, Any]:
    """Checked ``zoo`` names and ``models`` ids (the team's, ready, with no operator outside the
    graph IR: the OpenCL device runs the IR itself); the default zoo when neither."""
    names, ids = raw.get("zoo"), raw.get("models")
    if names is None and ids is None:
        names, ids = list(default_zoo), []
    names, ids = names or [], ids or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _fail("zoo", f"zoo must be a list of zoo model names, got {names!r}")
    if not isinstance(ids, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        raise _fail("models", f"models must be a list of model ids, got {ids!r}")
    known = zoo.entries()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise _fail("zoo", f"no zoo model named {unknown}; GET /api/zoo/ or `latencylab zoo list` lists them")
    found = {
        m.pk: m
        for m in NetworkModel.objects.for_team(team)
        .filter(pk__in=ids)
        .only("pk", "name", "state", "format", "summary", "graph")
    }
    missing = [i for i in ids if i not in found]
    if missing:
        raise _fail("models", f"there is no model {missing} in team {team.name!r}")
    for model in found.values():
        if not model.is_ready:
            raise _fail("models", model_not_ready_message(model))
        check_model_runs_on(model, device)
    count = len(names) + len(ids)
    if count == 0:
        raise _fail("zoo", "name at least one network (zoo names or model ids)")
    if count > MAX_NETWORKS:
        raise _fail("zoo", f"at most {MAX_NETWORKS} networks per job, not {count}")
    return {"zoo": names, "models": ids, "model_names": [found[i].name for i in ids]}


def _check_device(device: Device) -> None:
    check_device_takes_jobs(device)
    if device.kind != OPENCL:
        raise _fail(
            "device", f"fusion runs on OpenCL devices; {device.name!r} (#{device.pk}) is a {device.kind} device"
        )


def _precision(raw: Mapping[str, Any]) -> str:
    precision = raw.get("precision", "fp32")
    if precision not in PRECISIONS:
        raise _fail("precision", f"precision must be one of {list(PRECISIONS)}, not {precision!r}")
    return str(precision)


def _time_limit_budget() -> float:
    return float(django_settings.LATENCYLAB_TASK_TIME_LIMIT - TIME_LIMIT_MARGIN_S)


def check_sweep_spec(raw: Any) -> dict[str, Any]:
    """A sweep spec as given (``SweepSpec``'s fields, any left out take their defaults), checked
    by its declaration and complete; the time budget is capped below the task's time limit."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _fail("spec", f"spec must be a JSON object, got {type(raw).__name__}")
    limit = _time_limit_budget()
    budget = raw.get("time_budget_s")
    if budget is not None and (not isinstance(budget, int | float) or isinstance(budget, bool) or budget <= 0):
        raise _fail("spec", f"spec.time_budget_s must be a positive number of seconds, got {budget!r}")
    if budget is not None and budget > limit:
        raise _fail(
            "spec",
            f"spec.time_budget_s {budget} is over what a job may take ({limit:.0f} s: LATENCYLAB_TASK_TIME_LIMIT "
            f"less {TIME_LIMIT_MARGIN_S} s to store the rows)",
        )
    try:
        spec = SweepSpec.from_dict(raw)
    except SpecError as exc:
        raise _fail("spec", f"spec.{exc}") from None
    except ValueError as exc:  # an unknown key, or nothing to measure
        raise _fail("spec", f"spec: {exc}") from None
    checked = spec.as_dict()
    if checked["time_budget_s"] is None:
        checked["time_budget_s"] = limit
    return checked


def submit_fusion_sweep(team: Team, device: Device, raw: Mapping[str, Any], user: Any = None) -> ProfilingJob:
    """Queue a fusion sweep on an OpenCL device. ``raw``: ``zoo`` (names; default: the six networks
    of ParallelFusion's table 1), ``models`` (the team's model ids), ``precision``, ``spec``."""
    _check_device(device)
    unknown = sorted(set(raw) - {"zoo", "models", "precision", "spec"})
    if unknown:
        raise _fail("settings", f"unknown key(s) {unknown}; known: ['models', 'precision', 'spec', 'zoo']")
    settings = {
        **_networks(team, device, raw, sorted(n for n, e in zoo.entries().items() if e.table1)),
        "precision": _precision(raw),
        "spec": check_sweep_spec(raw.get("spec")),
    }
    return queue_job(team, device, kind=JobKind.FUSION_SWEEP, settings=settings, user=user)


def check_plan_options(raw: Any) -> dict[str, Any]:
    """A plan's options as given (``PlanOptions``'s fields, any left out take their defaults),
    checked by their declaration and complete."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise _fail("options", f"options must be a JSON object, got {type(raw).__name__}")
    try:
        return PlanOptions.from_dict(raw).as_dict()
    except SpecError as exc:
        raise _fail("options", f"options.{exc}") from None
    except ValueError as exc:  # an unknown key
        raise _fail("options", f"options: {exc}") from None


def _sweep_for_plan(team: Team, device: Device, raw: Any) -> int | None:
    """The sweep whose measured rows the planner uses: the one named, or the team's newest
    succeeded sweep on the device; None when there is none (the planner's latency model alone)."""
    sweeps = ProfilingJob.objects.for_team(team).filter(
        kind=JobKind.FUSION_SWEEP, state=JobState.SUCCEEDED, device=device, fusion_sweep__isnull=False
    )
    if raw is None:
        newest = sweeps.order_by("-finished_at", "-pk").first()
        return None if newest is None else newest.pk
    if raw is False:
        return None
    if not isinstance(raw, int) or isinstance(raw, bool) or not sweeps.filter(pk=raw).exists():
        raise _fail("sweep", f"no succeeded fusion sweep #{raw!r} of team {team.name!r} on device {device.name!r}")
    return raw


def submit_fusion_plan(team: Team, device: Device, raw: Mapping[str, Any], user: Any = None) -> ProfilingJob:
    """Queue a fusion plan run: networks run together (default: two MobileNet-V2, figure 11),
    planned from a sweep's measurements (``sweep``: a job id, default the newest on the device,
    ``false`` for none) and the latency model, and compared with sequential and fuse-all runs."""
    _check_device(device)
    unknown = sorted(set(raw) - {"zoo", "models", "precision", "options", "sweep"})
    if unknown:
        raise _fail("settings", f"unknown key(s) {unknown}; known: ['models', 'options', 'precision', 'sweep', 'zoo']")
    settings = {
        **_networks(team, device, raw, ["mobilenet_v2", "mobilenet_v2"]),
        "precision": _precision(raw),
        "options": check_plan_options(raw.get("options")),
        "sweep": _sweep_for_plan(team, device, raw.get("sweep")),
    }
    return queue_job(team, device, kind=JobKind.FUSION_PLAN, settings=settings, user=user)


# -- the worker's side -------------------------------------------------------------------------


def graphs_for_job(job: ProfilingJob) -> list[Graph]:
    """The job's networks as graphs: zoo names built, the team's models read within the server's
    import limits (``GraphError`` names a model that can no longer be read)."""
    graphs = [zoo.build(name) for name in job.settings.get("zoo", [])]
    ids = job.settings.get("models", [])
    models = {m.pk: m for m in NetworkModel.objects.filter(pk__in=ids, team_id=job.team_id)}
    for pk in ids:
        model = models.get(pk)
        if model is None:
            raise LookupError(f"model #{pk} was deleted after the job was queued")
        graph = graph_from_dict(model.graph, import_limits())
        graph.name = model.name
        graphs.append(graph)
    return graphs


# The stored variants of the fuser's default layout (``stored_variant``).
DEFAULT_LAYOUT_VARIANTS = ("rounded", "unrounded")


def sweep_rows_for_plan(job: ProfilingJob) -> list[dict[str, Any]] | None:
    """The measured rows of the sweep a plan job names, as the planner takes them: those of the
    fuser's default layout, the one the plan runs (a sweep may also have measured the paper's)."""
    sweep_id = job.settings.get("sweep")
    if sweep_id is None:
        return None
    rows = FusionMeasurement.objects.filter(sweep__job_id=sweep_id, error="", variant__in=DEFAULT_LAYOUT_VARIANTS)
    return list(rows.values_list("data", flat=True))


def stored_variant(row: Mapping[str, Any]) -> str:
    """The variant a stored row (its ``data``) is filed under (``results.stored_variant``)."""
    return results.stored_variant(str(row["variant"]), row.get("requested_layout"))


def _row(sweep: FusionSweepResult, row: FusionRowRecord) -> FusionMeasurement:
    return FusionMeasurement(
        sweep=sweep,
        experiment=row.experiment,
        kinds=kinds_key(row.kinds),
        size=row.size,
        instance=row.instance,
        variant=row.stored_variant,
        layout=row.layout,
        total_mflops=row.total_mflops,
        throughput=row.throughput,
        verdict="" if row.ratio is None else row.ratio.verdict,
        busy_ratio=None if row.busy_ratio is None else row.busy_ratio.ratio,
        throughput_wall=row.throughput_wall,
        padding_fraction=row.padding_fraction,
        correct=row.correct,
        error=row.error,
        data=row.as_dict(),
    )


def ingest_sweep(job_id: int, token: str, result: FusionSweepRecord) -> FusionSweepResult | None:
    """Store a sweep and its rows in one transaction; the job succeeds. None when the job is no
    longer this run's or was stored already."""
    with transaction.atomic():
        job = claimed_for_ingest(job_id, token, FusionSweepResult.objects.all())
        if job is None:
            return FusionSweepResult.objects.filter(job_id=job_id).first()
        data = result.as_dict()
        sweep = FusionSweepResult.objects.create(
            job=job,
            attempt=job.attempts,
            device_name=result.device,
            wave_size=result.wave_size,
            precision=result.precision,
            networks=list(result.models),
            spec=dict(result.spec),
            operators_per_kind=dict(result.operators_per_kind),
            representatives=data["representatives"],
            combinations=data["combinations"],
            sampled=result.sampled,
            notes=list(result.notes),
            planned_units=result.planned_units,
            measured_units=result.measured_units,
            elapsed_s=result.elapsed_s,
            environment=dict(result.environment),
        )
        FusionMeasurement.objects.bulk_create((_row(sweep, r) for r in result.rows), batch_size=500)
        finish_ingest(job, token)
    return sweep


def ingest_plan(job_id: int, token: str, comparison: FusionPlanRecord) -> FusionPlanResult | None:
    """Store a plan comparison; the job succeeds."""
    with transaction.atomic():
        job = claimed_for_ingest(job_id, token, FusionPlanResult.objects.all())
        if job is None:
            return FusionPlanResult.objects.filter(job_id=job_id).first()
        headline = plan_headline(comparison)
        stored = FusionPlanResult.objects.create(job=job, attempt=job.attempts, data=comparison.as_dict(), **headline)
        finish_ingest(job, token)
    return stored


def plan_headline(comparison: FusionPlanRecord) -> dict[str, Any]:
    """The columns a plan result is listed by: each strategy's median device time over rounds,
    the fused strategies' paired span ratio against sequential, and whether both were correct."""
    return {
        "networks": list(comparison.models),
        "sequential_ms": comparison.median_ms("sequential"),
        "plan_ms": comparison.median_ms("plan"),
        "fuse_all_ms": comparison.median_ms("fuse_all"),
        "plan_ratio": comparison.ratios["plan"].throughput,
        "fuse_all_ratio": comparison.ratios["fuse_all"].throughput,
        "correct": all(c.correct for c in comparison.checks.values()),
    }


# -- reading -----------------------------------------------------------------------------------


def sweep_rows(
    sweep: FusionSweepResult,
    *,
    experiment: str | None = None,
    size: int | None = None,
    variant: str | None = None,
    kinds: Sequence[str] | None = None,
    contains: Sequence[str] | None = None,
    errors: bool | None = None,
) -> QuerySet[FusionMeasurement]:
    """A sweep's rows, filtered: by experiment, size, variant, the exact tuple of ``kinds`` (in
    any order), rows that ``contains`` every given kind, and with (``errors=True``) or without
    errors."""
    rows = sweep.rows.all()
    if experiment:
        rows = rows.filter(experiment=experiment)
    if size is not None:
        rows = rows.filter(size=size)
    if variant:
        rows = rows.filter(variant=variant)
    if kinds:
        rows = rows.filter(kinds=kinds_key(sorted(kinds, key=kind_order)))
    for kind in contains or ():
        rows = rows.filter(kinds__contains=kinds_key([kind]))
    if errors is True:
        rows = rows.exclude(error="")
    elif errors is False:
        rows = rows.filter(error="")
    return rows
