"""The predictor pages: every version a team sees per device, and one version's evaluation.

Reads go through ``predictor_queries`` (team scoping: own and shared predictors only; another
team's predictor id answers 404, as in the API), charts through ``predictor_figures``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from dashboard import predictor_figures as charts
from dashboard import predictor_queries as queries
from dashboard.access import team_page
from server.devices.models import Device
from server.predictors.adapt import request_adapted_predictor
from server.predictors.models import Predictor, PredictorState

ADAPT_METHODS = ("rf", "lasso", "gbdt", "mlp")  # the adapt form's choice, the API's default first
REFRESH_SECONDS = 5  # a queued or training predictor's page reloads itself this often

# What a predictor's meta says, in reading order (``train_predictor`` and ``training.train_*``).
_META_LABELS = {
    "seed": "Seed",
    "training_data_sha256": "Training data SHA-256",
    "libraries": "Library versions",
    "search": "Hyper-parameter search",
    "overhead": "Overhead model",
    "source": "Data source",
    "runtime": "Runtime",
    "qed_device": "qed device",
    "networks": "Networks",
    "records": "Profiling records",
    "probe_records": "Probe records",
    "n_train_samples": "Training samples",
    "jobs": "Profiling jobs",
    "skipped": "Records skipped",
    "train_seconds": "Training time (s)",
    "trained_at": "Trained at (UTC)",
}

_SCENARIO_LABELS = {
    "backend": "backend",
    "device": "device",
    "threads": "threads",
    "cores": "cores",
    "precision": "precision",
    "runtime": "runtime",
    "gpu": "GPU",
}

_PARAM_LABELS = {
    "threads": "threads",
    "cores": "cores",
    "precision": "precision",
    "seed": "seed",
    "search": "search",
    "overhead": "overhead",
}


def _text(value: Any) -> str:
    """A JSON value as one line: lists and mappings joined, long lists counted."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_text(v)}" for k, v in value.items())
    if isinstance(value, list):
        if len(value) > 12:
            return f"{len(value)} items"
        return ", ".join(_text(v) for v in value)
    return str(value)


def meta_rows(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """How a predictor was made, as (label, value) rows: known keys first, then the rest."""
    keys = [k for k in _META_LABELS if k in meta] + sorted(k for k in meta if k not in _META_LABELS)
    rows = []
    for key in keys:
        value = meta[key]
        if value in (None, "", [], {}):
            continue
        if key == "jobs" and isinstance(value, list) and all(isinstance(v, int) for v in value):
            text = f"{len(value)} (#{min(value)} … #{max(value)})" if len(value) > 1 else f"#{value[0]}"
        else:
            text = _text(value)
        rows.append((_META_LABELS.get(key, key.replace("_", " ").capitalize()), text))
    return rows


def adapted_provenance(predictor: Predictor) -> dict[str, Any] | None:
    """An adapted predictor's sources and shots: fitted (weights, leave-one-out errors) once it is
    trained, as requested before; None for another predictor."""
    if predictor.source != "adapted":
        return None
    fitted = (predictor.meta or {}).get("adapted")
    if isinstance(fitted, dict):
        return {"fitted": True, "sources": fitted.get("sources", []), "shots": fitted.get("shots", [])}
    params = predictor.params or {}
    names = params.get("source_devices", [])
    sources = [{"name": f"#{pk} {name}"} for pk, name in zip(params.get("sources", []), names, strict=False)]
    return {"fitted": False, "sources": sources, "shots": params.get("shots", [])}


def _items(values: dict[str, Any], labels: dict[str, str]) -> list[tuple[str, str]]:
    items = []
    for key, label in labels.items():
        if key not in values or values[key] in (None, ""):
            continue
        value = values[key]
        if key == "cores":
            value = ",".join(str(c) for c in value) if value else "any"
        items.append((label, str(value)))
    return items


def protocol_text(protocol: str) -> str:
    """What an evaluation protocol means, in one sentence (paper 001, section 5)."""
    if protocol.startswith("holdout"):
        return (
            "A seeded 20 % of the networks was held out before training; every error below is on those "
            "networks, unseen by every deduction rule and model."
        )
    if protocol.startswith("grouped"):
        return (
            "Cross-validation grouped by network: each network's error comes from a predictor trained on the "
            "other folds, which never saw any of its operators."
        )
    return ""


@require_GET
@team_page
def predictor_list(request: HttpRequest) -> HttpResponse:
    """Per device, the predictor versions the team sees (its own and the shared ones), best marked;
    it reloads itself while one of them is queued or training."""
    team = request.team  # type: ignore[attr-defined]
    groups = queries.predictors_by_device(team)
    active = any(p.state in (PredictorState.QUEUED, PredictorState.TRAINING) for g in groups for p in g.predictors)
    return render(
        request,
        "dashboard/predictors.html",
        {
            "groups": groups,
            "total": sum(len(g.predictors) for g in groups),
            "method_names": queries.METHOD_NAMES,
            # The list follows a training's progress too, as a predictor's own page does.
            "refresh_seconds": REFRESH_SECONDS if active else None,
            "adapt_methods": ADAPT_METHODS,
        },
    )


def parse_shot_lines(text: str) -> list[dict[str, Any]]:
    """The adapt form's shots, one ``MODEL LATENCY_MS`` per line (a zoo name or a model id), or
    ``ValidationError`` naming the line."""
    shots: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.replace("=", " ").replace(",", " ").split()
        if not parts:
            continue
        try:
            if len(parts) != 2:
                raise ValueError
            latency = float(parts[1])
        except ValueError:
            raise ValidationError(
                {"shots": f"line {number}: expected MODEL LATENCY_MS, e.g. mobilenet_v2 7.1"}
            ) from None
        shots.append({"model": int(parts[0]) if parts[0].isdigit() else parts[0], "latency_ms": latency})
    return shots


@require_POST
@team_page
def predictor_adapt(request: HttpRequest) -> HttpResponse:
    """The predictors page's adapt form: queue an adapted predictor and show its page; the list
    again with the reason (400) when the request cannot be made."""
    team = request.team  # type: ignore[attr-defined]
    form = request.POST
    try:
        device = None
        if form.get("device"):
            device = Device.objects.filter(pk=int(form["device"])).first() if form["device"].isdigit() else None
            if device is None:
                raise ValidationError({"device": f"there is no device #{form['device']}"})
        name = form.get("new_device", "").strip()
        new_device = {"name": name, "soc": form.get("soc", ""), "gpu": form.get("gpu", "")} if name else None
        row = request_adapted_predictor(
            team,
            device,
            parse_shot_lines(form.get("shots", "")),
            new_device=new_device,
            method=form.get("method") or "rf",
            user=request.user,
        )
    except ValidationError as exc:
        groups = queries.predictors_by_device(team)
        return render(
            request,
            "dashboard/predictors.html",
            {
                "groups": groups,
                "total": sum(len(g.predictors) for g in groups),
                "method_names": queries.METHOD_NAMES,
                "adapt_methods": ADAPT_METHODS,
                "adapt_errors": exc.messages,
                "adapt_form": form,
            },
            status=400,
        )
    return redirect("dashboard:predictor", row.pk)


def _charts(predictor: Predictor, comparison: queries.ScenarioComparison) -> dict[str, str | None]:
    evaluation = predictor.evaluation if isinstance(predictor.evaluation, dict) else {}
    points = queries.evaluation_points(evaluation)
    kernels = queries.kernel_errors(evaluation)
    curves = charts.curves_of(comparison.peers)
    if not any(c.current for c in curves):
        # Not ready (or beyond the peers shown), but evaluated: its own curve still shows.
        own = queries.training_curve(evaluation.get("by_training_size"))
        if own:
            label = f"{queries.method_name(predictor.method)} v{predictor.version}"
            curves.append(charts.Curve(label, predictor.method, own, current=True))
    return {
        "scatter": charts.predicted_vs_measured(points, predictor.method) if points else None,
        "kernels": charts.mape_by_kernel_type(kernels) if kernels else None,
        "curve": charts.mape_vs_training_size(curves) if curves else None,
    }


@require_GET
@team_page
def predictor_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One predictor version: scenario, how it was made, its evaluation and charts, and how the
    methods compare on its device and scenario."""
    team = request.team  # type: ignore[attr-defined]
    predictor = queries.predictor_for_team(team, pk)
    if predictor is None:
        raise Http404("no such predictor for your team")
    evaluation = predictor.evaluation if isinstance(predictor.evaluation, dict) else {}
    comparison = queries.scenario_peers(team, predictor)
    protocol = str(evaluation.get("protocol", ""))
    active = predictor.state in (PredictorState.QUEUED, PredictorState.TRAINING)
    missing = evaluation.get("missing")
    return render(
        request,
        "dashboard/predictor.html",
        {
            "predictor": predictor,
            "method_name": queries.method_name(predictor.method),
            "scenario_items": _items(predictor.scenario or {}, _SCENARIO_LABELS),
            "param_items": _items(predictor.params or {}, _PARAM_LABELS),
            # an adapted predictor's provenance has its own card (sources, shots), not a meta line
            "meta": meta_rows({k: v for k, v in (predictor.meta or {}).items() if k != "adapted"}),
            "adapted": adapted_provenance(predictor),
            "evaluation": evaluation,
            "e2e_mape": queries.finite(evaluation.get("e2e_mape", predictor.e2e_mape)),
            "protocol": protocol,
            "protocol_text": protocol_text(protocol),
            "n_points": len(evaluation.get("points") or []),
            "missing": missing if isinstance(missing, dict) else {},
            "deduction": evaluation.get("deduction") if isinstance(evaluation.get("deduction"), dict) else None,
            "noise": evaluation.get("noise_floor") if isinstance(evaluation.get("noise_floor"), dict) else None,
            "is_best": predictor.state == PredictorState.READY
            and queries.best_on_device(team, predictor.device_id) == predictor.pk,
            "comparison": comparison,
            "charts": _charts(predictor, comparison),
            "refresh_seconds": REFRESH_SECONDS if active else None,
            "active": active,
        },
    )
