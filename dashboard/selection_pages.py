"""The model-selection pages: a team's simulations of CNNSelect against its baselines, and one
simulation drawn as seed 002's figures 12 and 13 from its stored result.

A simulation is a ``SelectionSimulation`` row run by the trainer, not a device's job: while it is
queued or running its page shows the state and reloads itself (as a predictor's page does), a
failed one says why, and a succeeded one shows one network profile at a time (``?profile=``, the
first by default) with the comparison over every profile above. Reads go through
``selection_summary``, charts through ``selection_figures``. Another team's simulation answers 404.
"""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from django.db.models import IntegerField
from django.db.models.fields.json import KT
from django.db.models.functions import Cast
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard import selection_figures as charts
from dashboard.access import team_page
from dashboard.selection_summary import PAPER_IMPROVEMENT_PCT, SimulationView, policy_label, simulation_view
from devicelab.selection import paper_scenario
from server.selection.models import SelectionSimulation, SimulationState

PER_PAGE = 50
REFRESH_SECONDS = 5  # a queued or running simulation's page reloads itself this often


@require_GET
@team_page
def selection_list(request: HttpRequest) -> HttpResponse:
    """The team's simulations, newest first: title, what they run, state, when."""
    team = request.team  # type: ignore[attr-defined]
    rows = (
        SelectionSimulation.objects.filter(team=team)
        .defer("spec", "result")  # a result holds every point; the list needs none of it
        .annotate(scenario=KT("spec__scenario"), requests_per_point=Cast(KT("spec__requests"), IntegerField()))
    )
    page = Paginator(rows, PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "dashboard/selection_list.html", {"page": page, "rows": page.object_list})


def _spec_items(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """What a simulation runs, as chips."""
    items = []
    slas = [float(s) for s in spec.get("sla_targets_ms") or []]
    if slas:
        items.append(("SLA targets", f"{len(slas)} from {min(slas):g} to {max(slas):g} ms"))
    profiles = [str(p.get("name")) for p in spec.get("profiles") or [] if isinstance(p, dict)]
    if profiles:
        items.append(("network", ", ".join(profiles)))
    if spec.get("requests") is not None:
        items.append(("requests per point", f"{int(spec['requests']):,}"))
    for key, label, unit in (("threshold_ms", "T_threshold", " ms"), ("seed", "seed", "")):
        if spec.get(key) is not None:
            items.append((label, f"{spec[key]:g}{unit}"))
    if spec.get("input_bytes") is not None:
        items.append(("request size", f"{int(spec['input_bytes']):,} bytes"))
    policies = spec.get("policies") or []
    if policies:
        items.append(("policies", ", ".join(policy_label(str(p)) for p in policies)))
    return items


def _candidates(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The simulated models with where their numbers came from (measured models only say it)."""
    sources = {c.get("name"): c for c in spec.get("candidates") or [] if isinstance(c, dict)}
    out = []
    for m in spec.get("models") or []:
        if not isinstance(m, dict):
            continue
        source = sources.get(m.get("name")) or {}
        latency = source.get("latency_source") or {}
        out.append(
            {
                "name": m.get("name"),
                "accuracy": m.get("accuracy"),
                "mu_ms": m.get("mu_ms"),
                "sigma_ms": m.get("sigma_ms"),
                "samples": len(m.get("samples_ms") or []),
                "model_id": source.get("model"),
                "accuracy_source": source.get("accuracy_source", ""),
                "latency_kind": latency.get("kind", ""),
                "latency_ref": latency.get("job") or latency.get("predictor"),
            }
        )
    return out


def _result_context(request: HttpRequest, view: SimulationView) -> dict[str, Any]:
    names = [p.name for p in view.profiles]
    asked = request.GET.get("profile", "")
    shown = view.profile(asked) if asked in names else view.profiles[0]
    assert shown is not None
    return {
        "view": view,
        "profile_names": names,
        "shown": shown,
        "policies": [(p, policy_label(p)) for p in view.result.policies],
        "charts": {
            "figure12": charts.over_sla_and_accuracy(shown),
            "figure13a": charts.latency_and_accuracy(shown),
            "figure13b": charts.model_usage(shown),
        },
    }


@require_GET
@team_page
def simulation_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """One simulation: its state while queued or running (reloading), why it failed, or figure 12,
    figure 13(a) and (b) and the table for one network profile (``?profile=``), with CNNSelect's
    relative improvement in SLA attainment over greedy per profile and overall."""
    team = request.team  # type: ignore[attr-defined]
    sim = SelectionSimulation.objects.filter(team=team, pk=pk).select_related("created_by").first()
    if sim is None:
        raise Http404("no such simulation for your team")
    spec = sim.spec if isinstance(sim.spec, dict) else {}
    active = sim.state in (SimulationState.QUEUED, SimulationState.RUNNING)
    context: dict[str, Any] = {
        "sim": sim,
        "spec_items": _spec_items(spec),
        "scenario": spec.get("scenario", ""),
        "is_paper": spec.get("scenario") == paper_scenario().name,
        "candidates": _candidates(spec),
        "active": active,
        "refresh_seconds": REFRESH_SECONDS if active else None,
        "paper_improvement_pct": PAPER_IMPROVEMENT_PCT,
        "unreadable": "",
    }
    if sim.state == SimulationState.SUCCEEDED and isinstance(sim.result, dict):
        try:
            context.update(_result_context(request, simulation_view(sim.result)))
        except (ValueError, KeyError, TypeError) as e:  # a result stored by an older, different shape
            context["unreadable"] = str(e)
    return render(request, "dashboard/selection_simulation.html", context)


__all__ = ["selection_list", "simulation_detail"]
