"""Simulations of CNNSelect against its baselines (seed 002, section 5.2) as jobs: submitted here,
run by the trainer (``server.selection.tasks``), stored with their result.

A spec names its models either as the paper's built-in scenario (``{"scenario": "paper"}``:
table 5's models and numbers) or as the team's models measured on a device (``{"device": id,
"models": [ids]}``: each model's profile resolved now, by ``profiles.candidate_profiles``, and
frozen into the stored spec, so the simulation replays exactly what was measured when it was
asked for). The SLA targets, network profiles (presets or the team's stored ones), request count,
seed, T_threshold and policies complete it. The row is the truth: the task claims a queued
simulation with a conditional update, so a duplicate message does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from devicelab.selection import POLICIES, ModelProfile, NetworkProfile, paper_scenario, simulate
from devicelab.selection.simulate import DEFAULT_POLICIES
from devicelab.text import clip_middle
from server.accounts.models import Team
from server.devices.models import Device
from server.leases import LeaseKeeper, lease_lapsed, sweep_lapsed
from server.selection.models import SelectionSimulation, SimulationState
from server.selection.profiles import candidate_profiles
from server.selection.services import network_profile

log = logging.getLogger("latencylab.selection")

SPEC_FIELDS = {
    "title",
    "scenario",
    "device",
    "models",
    "sla_targets_ms",
    "profiles",
    "requests",
    "seed",
    "threshold_ms",
    "policies",
    "input_bytes",
}
MAX_REQUESTS = 100_000
MAX_POINTS = 400  # SLA targets x profiles


def _fail(field: str, message: str) -> ValidationError:
    return ValidationError({field: message})


def _int(raw: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(key, f"{key} must be an integer in [{low}, {high}], got {value!r}")
    return value


def _models(team: Team, raw: Mapping[str, Any]) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """(scenario name, model profiles as dicts, what each candidate came from)."""
    scenario = raw.get("scenario")
    if scenario is not None:
        if scenario != "paper" or "models" in raw or "device" in raw:
            raise _fail("scenario", 'the built-in scenario is "paper" (table 5), without device or models')
        paper = paper_scenario()
        return paper.name, [m.as_dict() for m in paper.models], []
    device_id = raw.get("device")
    if isinstance(device_id, bool) or not isinstance(device_id, int):
        raise _fail("device", f"give a device id with your models, or scenario 'paper'; got device {device_id!r}")
    device = Device.objects.filter(pk=device_id).first()
    if device is None:
        raise _fail("device", f"there is no device #{device_id} (GET /api/devices/)")
    candidates = candidate_profiles(team, device, raw.get("models"))  # type: ignore[arg-type]
    return f"measured on {device.name}", [c.profile.as_dict() for c in candidates], [c.as_dict() for c in candidates]


def _profiles(team: Team, raw: Mapping[str, Any], default: list[str]) -> list[dict[str, Any]]:
    names = raw.get("profiles", default)
    if not isinstance(names, list) or not names or len(set(map(str, names))) != len(names):
        raise _fail("profiles", f"profiles must be a non-empty list of distinct profile names, got {names!r}")
    return [network_profile(team, n).as_dict() for n in names]


def _slas(raw: Mapping[str, Any], default: list[float]) -> list[float]:
    slas = raw.get("sla_targets_ms", default)
    if (
        not isinstance(slas, list)
        or not slas
        or not all(isinstance(s, (int, float)) and not isinstance(s, bool) and 0 < s < 1e7 for s in slas)
    ):
        raise _fail("sla_targets_ms", f"sla_targets_ms must be a non-empty list of positive numbers, got {slas!r}")
    return sorted({float(s) for s in slas})


def submit_simulation(team: Team, raw: Any, user: Any = None, enqueue: bool = True) -> SelectionSimulation:
    """Validate a simulation request, freeze its models' profiles, store it queued and (on commit)
    send it to the trainer; ``ValidationError`` naming the field when the request is bad."""
    if not isinstance(raw, Mapping):
        raise ValidationError("the request body must be a JSON object")
    unknown = sorted(set(raw) - SPEC_FIELDS)
    if unknown:
        raise ValidationError(f"unknown field(s) {unknown}; the fields are {sorted(SPEC_FIELDS)}")
    scenario_name, models, candidates = _models(team, raw)
    paper = paper_scenario()
    slas = _slas(raw, list(paper.sla_targets_ms))
    profiles = _profiles(team, raw, [p.name for p in paper.profiles])
    if len(slas) * len(profiles) > MAX_POINTS:
        raise _fail("sla_targets_ms", f"{len(slas)} SLA targets x {len(profiles)} profiles is over {MAX_POINTS} points")
    policies = raw.get("policies", list(DEFAULT_POLICIES))
    if not isinstance(policies, list) or not policies or any(p not in POLICIES for p in policies):
        raise _fail("policies", f"policies must be a non-empty list of {list(POLICIES)}, got {policies!r}")
    threshold = raw.get("threshold_ms", paper.threshold_ms)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or threshold < 0:
        raise _fail("threshold_ms", f"threshold_ms must be a number >= 0, got {threshold!r}")
    title = raw.get("title", "")
    if not isinstance(title, str) or len(title) > 200:
        raise _fail("title", "a title is a string of at most 200 characters")
    spec = {
        "scenario": scenario_name,
        "models": models,
        "candidates": candidates,
        "sla_targets_ms": slas,
        "profiles": profiles,
        "requests": _int(raw, "requests", 10_000, 100, MAX_REQUESTS),
        "seed": _int(raw, "seed", 0, 0, 2**31 - 1),
        "threshold_ms": float(threshold),
        "policies": list(dict.fromkeys(policies)),
        "input_bytes": _int(raw, "input_bytes", paper.request_bytes, 1, 10**9),
    }
    with transaction.atomic():
        row = SelectionSimulation.objects.create(
            team=team,
            created_by=user if getattr(user, "is_authenticated", False) else None,
            title=title or f"CNNSelect vs greedy: {scenario_name}",
            spec=spec,
        )
        if enqueue:
            from server.taskqueue import send_after_commit, send_simulation

            send_after_commit(send_simulation, row.pk, **_pending(row.pk))
    return row


def _dispatch(simulation_id: int) -> bool:
    """Send the simulation to the trainer; False, logged, when the broker cannot take it (the row
    stays queued and the idle trainer sends it again)."""
    from server.taskqueue import send_simulation, try_send

    return try_send(send_simulation, simulation_id, **_pending(simulation_id))


def _pending(simulation_id: int) -> dict[str, str]:
    """What a simulation that could not be sent leaves behind, and who sends it again."""
    return {"what": f"simulation {simulation_id} stays queued", "then": "the idle trainer sends it again"}


def resend_queued_simulations(requested_before: Any) -> list[int]:
    """Send again every simulation still queued that was asked for before ``requested_before``."""
    ids = list(
        SelectionSimulation.objects.filter(state=SimulationState.QUEUED, created_at__lt=requested_before)
        .order_by("created_at")
        .values_list("pk", flat=True)
    )
    return [pk for pk in ids if _dispatch(pk)]


# A simulation whose trainer was lost this many times fails (one that kills its trainer must
# not take every trainer down in turn).
MAX_SIMULATION_ATTEMPTS = 3


def sweep_lost_simulations(now: datetime | None = None) -> list[int]:
    """Simulations whose lease ran out (their trainer was killed, ran out of memory or restarted)
    are queued again and sent, or failed, saying why, after ``MAX_SIMULATION_ATTEMPTS`` attempts;
    their ids. Run by every trainer's sweeper; the conditional updates do the work once."""
    now = now or timezone.now()
    return sweep_lapsed(
        lease_lapsed(SelectionSimulation.objects.filter(state=SimulationState.RUNNING), now),
        held_by="claimed_by",
        attempts="attempts",
        max_attempts=MAX_SIMULATION_ATTEMPTS,
        lost="the trainer stopped while simulating",
        requeued=lambda why: {
            "state": SimulationState.QUEUED,
            "claimed_by": "",
            "progress_message": why,
            "lease_until": None,
        },
        failed=lambda why: {
            "state": SimulationState.FAILED,
            "failure_reason": why,
            "finished_at": now,
            "lease_until": None,
        },
        dispatch=_dispatch,
    )


def run_simulation(simulation_id: int, token: str) -> SelectionSimulation | None:
    """Claim a queued simulation, run it, store its result (or why it failed); None when it was
    not queued (another message took it, or it is gone)."""
    now = timezone.now()
    lease = float(django_settings.LATENCYLAB_TRAINING_LEASE_SECONDS)
    claimed = SelectionSimulation.objects.filter(pk=simulation_id, state=SimulationState.QUEUED).update(
        state=SimulationState.RUNNING,
        claimed_by=token,
        started_at=now,
        progress_message="simulating",
        attempts=F("attempts") + 1,
        lease_until=now + timedelta(seconds=lease),
    )
    if claimed != 1:
        return None
    row = SelectionSimulation.objects.get(pk=simulation_id)
    spec = row.spec
    held = SelectionSimulation.objects.filter(pk=simulation_id, claimed_by=token, state=SimulationState.RUNNING)

    def renew() -> bool:
        return held.update(lease_until=timezone.now() + timedelta(seconds=lease)) == 1

    try:
        with LeaseKeeper(renew, lease / 4, f"simulation {simulation_id}"):
            result = simulate(
                [ModelProfile.from_dict(m) for m in spec["models"]],
                sla_targets_ms=spec["sla_targets_ms"],
                profiles=[NetworkProfile.from_dict(p) for p in spec["profiles"]],
                requests=spec["requests"],
                seed=spec["seed"],
                policies=spec["policies"],
                threshold_ms=spec["threshold_ms"],
                request_bytes=spec["input_bytes"],
            ).as_dict()
    except Exception as exc:  # noqa: BLE001 - a bad frozen spec or a bug: the row says which
        log.exception("simulation %s failed", simulation_id)
        fail_simulation(simulation_id, f"{type(exc).__name__}: {exc}", token)
        return SelectionSimulation.objects.get(pk=simulation_id)
    SelectionSimulation.objects.filter(pk=simulation_id, claimed_by=token, state=SimulationState.RUNNING).update(
        state=SimulationState.SUCCEEDED,
        result=result,
        progress=1.0,
        progress_message="done",
        finished_at=timezone.now(),
        lease_until=None,
    )
    return SelectionSimulation.objects.get(pk=simulation_id)


def fail_simulation(simulation_id: int, reason: str, token: str | None = None) -> bool:
    """Fail a queued or running simulation with ``reason`` (only the claim's holder, when given)."""
    rows = SelectionSimulation.objects.filter(
        pk=simulation_id, state__in=(SimulationState.QUEUED, SimulationState.RUNNING)
    )
    if token is not None:
        rows = rows.filter(claimed_by=token)
    reason = clip_middle(reason, 5000)  # the cause is at the end: cut the middle
    return rows.update(state=SimulationState.FAILED, failure_reason=reason, finished_at=timezone.now()) == 1


__all__ = [
    "fail_simulation",
    "sweep_lost_simulations",
    "resend_queued_simulations",
    "run_simulation",
    "submit_simulation",
]
