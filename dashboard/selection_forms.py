"""The model-selection pages that ask: the developer's question answered over a range of SLAs
(``/selection/ask/``: per model served remotely and on a device, and per policy, the chance of
meeting each SLA and the accuracy it buys) and starting a simulation from the dashboard
(``/selection/simulations/new/``). Both call the services the API calls (``select_table``,
``submit_simulation``) and show their refusals on the form.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from dashboard.access import team_page
from dashboard.selection_summary import policy_label
from devicelab.selection import DEFAULT_THRESHOLD_MS, PRESETS, SELECT_POLICIES
from devicelab.selection.simulate import DEFAULT_POLICIES, POLICIES
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.selection.models import StoredNetworkProfile
from server.selection.services import select_table
from server.selection.simulations import submit_simulation

MAX_SLA_TARGETS = 200  # the API's bound (server.selection.services.MAX_TABLE_SLAS)


def _profile_choices(team: Team) -> list[tuple[str, str]]:
    """The presets, then the team's stored network profiles."""
    stored = StoredNetworkProfile.objects.filter(team=team).values_list("name", flat=True)
    return [(n, f"{n} (preset)") for n in PRESETS] + [(n, n) for n in stored]


class _SlaRange(forms.Form):
    """SLA targets from, to, every: the range a developer asks about."""

    sla_from = forms.FloatField(label="SLA from (ms)", min_value=1, initial=100)
    sla_to = forms.FloatField(label="to (ms)", min_value=1, initial=600)
    sla_step = forms.FloatField(label="every (ms)", min_value=1, initial=50)

    def sla_targets(self) -> list[float]:
        """The targets of a valid form (``clean`` checked their number)."""
        lo, hi, step = (float(self.cleaned_data[k]) for k in ("sla_from", "sla_to", "sla_step"))
        return [round(lo + i * step, 6) for i in range(int((hi - lo) / step + 1e-9) + 1)]

    def clean(self) -> dict[str, Any]:
        """The range must run upwards and hold at most ``MAX_SLA_TARGETS`` targets."""
        data = super().clean() or {}
        lo, hi, step = data.get("sla_from"), data.get("sla_to"), data.get("sla_step")
        if lo is not None and hi is not None and step is not None:
            if hi < lo:
                raise ValidationError("the last SLA target must not be below the first")
            if (hi - lo) / step + 1 > MAX_SLA_TARGETS:
                raise ValidationError(f"at most {MAX_SLA_TARGETS} SLA targets: take a larger step")
        return data


class AskForm(_SlaRange):
    """The developer's question: which of my models, over this network, meets which SLA how often."""

    device = forms.ModelChoiceField(queryset=Device.objects.none(), label="Serving device")
    models = forms.ModelMultipleChoiceField(
        queryset=NetworkModel.objects.none(), widget=forms.CheckboxSelectMultiple, label="Candidate models"
    )
    network_profile = forms.ChoiceField(label="Network")
    on_device = forms.ModelChoiceField(
        queryset=Device.objects.none(),
        required=False,
        label="Or run on this device",
        help_text="A phone or CPU the models were profiled on: priced from the lab's own profiles there.",
    )
    load_per_request = forms.BooleanField(
        required=False, label="The app loads the model per request", help_text="Adds the measured cold start."
    )
    policy = forms.ChoiceField(choices=[(p, p) for p in SELECT_POLICIES], initial="lab", label="CNNSelect reading")
    threshold_ms = forms.FloatField(min_value=0, initial=DEFAULT_THRESHOLD_MS, label="T_threshold (ms)")

    def __init__(self, team: Team, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        devices = Device.objects.order_by("name")
        self.fields["device"].queryset = devices  # type: ignore[attr-defined]
        self.fields["on_device"].queryset = devices  # type: ignore[attr-defined]
        self.fields["models"].queryset = NetworkModel.objects.for_team(team).order_by("name")  # type: ignore[attr-defined]
        self.fields["network_profile"].choices = _profile_choices(team)  # type: ignore[attr-defined]

    def request_body(self) -> dict[str, Any]:
        """What ``select_table`` takes, from a valid form."""
        d = self.cleaned_data
        body: dict[str, Any] = {
            "device": d["device"].pk,
            "models": [m.pk for m in d["models"]],
            "network_profile": d["network_profile"],
            "sla_targets_ms": self.sla_targets(),
            "policy": d["policy"],
            "threshold_ms": float(d["threshold_ms"]),
            "load_per_request": bool(d["load_per_request"]),
        }
        if d.get("on_device") is not None:
            body["on_device"] = d["on_device"].pk
        return body


def _pivot(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer's rows as a table: one row per option, one column per SLA target."""
    slas = answer["sla_targets_ms"]
    order: list[tuple[str, str]] = []
    cells: dict[tuple[str, str], dict[float, dict[str, Any]]] = {}
    for r in answer["rows"]:
        key = (r["option"], r["kind"])
        if key not in cells:
            order.append(key)
            cells[key] = {}
        cells[key][r["sla_ms"]] = r
    kinds = {"remote": "remote", "on_device": "on device", "policy": "per request"}
    rows = [
        {
            "option": policy_label(option) if kind == "policy" else option,
            "kind": kinds.get(kind, kind),
            "cells": [cells[(option, kind)][s] for s in slas],
        }
        for option, kind in order
    ]
    return {"slas": slas, "rows": rows}


@require_GET
@team_page
def ask(request: HttpRequest) -> HttpResponse:
    """The form, and once filled in, per option and SLA target the chance of meeting it, the
    expected accuracy and the accuracy within the SLA (a GET: asking changes nothing)."""
    team = request.team  # type: ignore[attr-defined]
    form = AskForm(team, request.GET if "device" in request.GET else None)
    context: dict[str, Any] = {"form": form, "answer": None}
    if form.is_bound and form.is_valid():
        try:
            answer = select_table(team, form.request_body())
        except ValidationError as e:
            for field, errors in (e.message_dict if hasattr(e, "error_dict") else {"__all__": e.messages}).items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            context.update(answer=answer, table=_pivot(answer))
    return render(request, "dashboard/selection_ask.html", context)


class SimulationForm(_SlaRange):
    """A simulation of the section 5.2 kind: table 5's models or the team's, over networks and SLAs."""

    scenario = forms.ChoiceField(
        choices=[("paper", "Table 5's eleven models (the paper)"), ("measured", "My models, measured on a device")],
        initial="paper",
        widget=forms.RadioSelect,
    )
    device = forms.ModelChoiceField(queryset=Device.objects.none(), required=False, label="Serving device")
    models = forms.ModelMultipleChoiceField(
        queryset=NetworkModel.objects.none(), widget=forms.CheckboxSelectMultiple, required=False, label="Models"
    )
    profiles = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple, label="Networks")
    policies = forms.MultipleChoiceField(
        choices=[(p, policy_label(p)) for p in POLICIES], widget=forms.CheckboxSelectMultiple, label="Policies"
    )
    requests = forms.IntegerField(min_value=1, max_value=100_000, initial=10_000, label="Requests per point")
    threshold_ms = forms.FloatField(min_value=0, initial=DEFAULT_THRESHOLD_MS, label="T_threshold (ms)")
    title = forms.CharField(required=False, max_length=200)

    def __init__(self, team: Team, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("initial", {}).update(
            {"sla_from": 10, "sla_to": 700, "sla_step": 10, "policies": list(DEFAULT_POLICIES)}
        )
        super().__init__(*args, **kwargs)
        self.fields["device"].queryset = Device.objects.order_by("name")  # type: ignore[attr-defined]
        self.fields["models"].queryset = NetworkModel.objects.for_team(team).order_by("name")  # type: ignore[attr-defined]
        self.fields["profiles"].choices = _profile_choices(team)  # type: ignore[attr-defined]
        self.initial.setdefault("profiles", ["prototype_wifi", "campus_wifi", "lte", "cellular_hotspot"])

    def request_body(self) -> dict[str, Any]:
        """What ``submit_simulation`` takes, from a valid form."""
        d = self.cleaned_data
        body: dict[str, Any] = {
            "sla_targets_ms": self.sla_targets(),
            "profiles": list(d["profiles"]),
            "policies": list(d["policies"]),
            "requests": int(d["requests"]),
            "threshold_ms": float(d["threshold_ms"]),
            "title": d["title"],
        }
        if d["scenario"] == "paper":
            body["scenario"] = "paper"
        else:
            if d.get("device") is None or not d.get("models"):
                raise ValidationError({"models": "your models need a serving device and at least one model"})
            body.update(device=d["device"].pk, models=[m.pk for m in d["models"]])
        return body


@require_http_methods(["GET", "POST"])
@team_page
def new_simulation(request: HttpRequest) -> HttpResponse:
    """Start a simulation from the dashboard; its page follows it while the trainer runs it."""
    team = request.team  # type: ignore[attr-defined]
    form = SimulationForm(team, request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            sim = submit_simulation(team, form.request_body(), user=request.user)
        except ValidationError as e:
            for field, errors in (e.message_dict if hasattr(e, "error_dict") else {"__all__": e.messages}).items():
                form.add_error(field if field in form.fields else None, errors)
        else:
            messages.success(request, f"Simulation #{sim.pk} queued.")
            return redirect("dashboard:selection_simulation", pk=sim.pk)
    return render(request, "dashboard/selection_new.html", {"form": form})


__all__ = ["AskForm", "SimulationForm", "ask", "new_simulation"]
