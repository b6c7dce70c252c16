"""Remote runs as jobs: submit one, store what the worker measured, read it.

A remote run serves one of the team's image models on a CPU device (the lab machine) and measures
it from a client under 1 to 8 network profiles: presets, the team's stored profiles, or
``unshaped``. Each name is resolved at submission and the profile itself is frozen in the job's
settings (``RemoteSpec.as_dict()``). Storing is idempotent and only lands for the run that holds
the job's claim, as for profiling results and sharing sweeps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from devicelab import spec as declared
from devicelab.backends.base import UnsupportedSetting
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph import GraphError, graph_from_dict
from devicelab.graph.ir import Graph
from devicelab.measure.breakdown import NotAnImageModel, image_input
from devicelab.remote.client import profile_link
from devicelab.remote.on_device import CPU, payload_bytes
from devicelab.remote.results import ProfileSummary, RemoteRunRecord
from devicelab.remote.spec import UNSHAPED, RemoteSettings, RemoteSpec
from devicelab.selection.network_profiles import NetworkProfile
from devicelab.spec import SpecError, settings_of
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.networks.services import check_model_runs_on, import_limits, model_not_ready_message
from server.profiling.models import JobKind, ProfilingJob
from server.profiling.services import check_device_takes_jobs, claimed_for_ingest, finish_ingest, queue_job
from server.remote.models import RemoteProfileSummary, RemoteScenarioResult
from server.selection.services import network_profile

PROFILE_NAME_LENGTH = 100  # as a stored profile's name
ANSWER_BYTES = 700  # the server's answer (top 5 and its times), head included: about 0.6 kB
# The network time a run's requests are expected to take (each profile's mean transfers) may be
# at most this share of the task's time limit: the rest is the server's compute, the model's
# load, and the spread of the profiles' draws.
NETWORK_SHARE_OF_LIMIT = 0.5


def _fail(field: str, message: str) -> ValidationError:
    return ValidationError({field: message})


def checked_settings(raw: Mapping[str, Any]) -> RemoteSettings:
    """A run's settings as sent, checked by their declaration (keys left out take their defaults);
    a ``ValidationError`` naming the field (``settings`` for an unknown key)."""
    known = sorted(s.name for s in settings_of(RemoteSettings))
    unknown = sorted(set(raw) - set(known))
    if unknown:
        raise _fail("settings", f"unknown key(s) {unknown}; known: {known}")
    try:
        return RemoteSettings(**raw)
    except SpecError as exc:
        raise _fail(exc.key.partition("[")[0], str(exc)) from None


def served_graph(model: NetworkModel) -> Graph:
    """The model's graph as the worker serves it; a ``ValidationError`` on ``model`` when it is
    not an image model with one N x 3 x H x W float32 input (the endpoint takes a photo)."""
    try:
        graph = graph_from_dict(model.graph, import_limits())
        image = image_input(graph)
    except (GraphError, NotAnImageModel) as exc:
        raise _fail(
            "model",
            f"model {model.name!r} (#{model.pk}) is not an image model a remote run can serve: {exc}; "
            "a remote run sends a photo to a model with one N x 3 x H x W image input",
        ) from None
    if image.dtype != "float32":
        raise _fail("model", f"model {model.name!r} (#{model.pk}) takes {image.dtype} images; serving takes float32")
    return graph


def resolve_profiles(team: Team, names: Sequence[str]) -> dict[str, NetworkProfile | None]:
    """Profile names (presets, the team's stored profiles, or ``unshaped``; a list their
    declaration took) as the profiles they name, in order; a ``ValidationError`` on ``profiles``
    naming the bad one otherwise."""
    resolved: dict[str, NetworkProfile | None] = {}
    for i, name in enumerate(names):
        if not 0 < len(name) <= PROFILE_NAME_LENGTH or "\x00" in name:
            raise _fail(
                "profiles", f"profiles[{i}] must be a name of 1 to {PROFILE_NAME_LENGTH} characters, got {name!r}"
            )
        if name == UNSHAPED:
            resolved[name] = None
            continue
        try:
            profile = network_profile(team, name)
        except ValidationError as exc:
            why = " ".join(exc.message_dict.get("network_profile", exc.messages))
            raise _fail("profiles", f"profiles[{i}]: {why}, or {UNSHAPED} (no shaping)") from None
        try:
            profile_link(profile, 1.0)  # its mean link is one the lab can apply
        except ValueError as exc:
            raise _fail("profiles", f"profiles[{i}]: {name!r} cannot be applied to a link: {exc}") from None
        resolved[name] = profile
    return resolved


def _check_serving(device: Device, settings: RemoteSettings) -> None:
    """The serving process's threads and cores are within what the device declared."""
    capabilities = device.declared_capabilities()
    if capabilities is None:
        return
    try:
        capabilities.check(ProfileSettings(backend=device.kind, threads=settings.threads, cores=settings.cores))
    except UnsupportedSetting as exc:
        raise _fail(
            exc.setting, f"device {device.name!r} (#{device.pk}) cannot serve with this {exc.setting}: {exc.reason}"
        ) from None


def network_estimate_s(spec: RemoteSpec, nbytes: int) -> float:
    """The network time a run is expected to take (s): every request's upload of ``nbytes`` and
    its answer, at each profile's mean."""
    per_round_ms = sum(
        p.transfer_ms(nbytes) + p.transfer_ms(ANSWER_BYTES) for p in spec.network_profiles.values() if p is not None
    )
    return (spec.requests + spec.warmup) * per_round_ms / 1e3


def _check_fits_the_time_limit(spec: RemoteSpec, nbytes: int) -> None:
    limit = float(django_settings.LATENCYLAB_TASK_TIME_LIMIT) * NETWORK_SHARE_OF_LIMIT
    estimate = network_estimate_s(spec, nbytes)
    if estimate > limit:
        raise _fail(
            "requests",
            f"{spec.requests} requests (and {spec.warmup} warm-up) under these profiles take about {estimate:.0f} s "
            f"of network time for a {nbytes:,}-byte {spec.payload} payload; a job may spend {limit:.0f} s on it "
            "(half its time limit): ask for fewer requests or profiles",
        )


def submit_remote_run(
    team: Team, model: NetworkModel, device: Device, raw: Mapping[str, Any], user: Any = None
) -> ProfilingJob:
    """Queue a remote run of ``model`` served by the CPU ``device``. ``raw``: ``profiles`` (1 to
    8 names: presets, the team's stored profiles, ``unshaped``), ``requests`` per profile (default
    20, 1..500), ``warmup`` (default 3), ``payload`` (``jpeg``, the default: the lab's phone photo;
    ``png``; ``tensor``: the photo preprocessed on the phone), ``seed`` (default 0), and the serving
    process's ``threads`` (default 1) and ``cores`` (default: the OS decides)."""
    if model.team_id != team.pk:
        raise _fail("model", f"there is no model #{model.pk} in team {team.name!r}")
    if not model.is_ready:
        raise _fail("model", model_not_ready_message(model))
    check_device_takes_jobs(device)
    if device.kind != CPU:
        raise _fail(
            "device",
            f"remote runs are served by a CPU device (the lab machine); {device.name!r} (#{device.pk}) is a "
            f"{device.kind} device",
        )
    check_model_runs_on(model, device)
    settings = checked_settings(raw)
    graph = served_graph(model)
    links = resolve_profiles(team, settings.profiles)
    _check_serving(device, settings)
    spec = RemoteSpec(**declared.as_dict(settings), network_profiles=links)
    _check_fits_the_time_limit(spec, payload_bytes(spec.payload, graph))
    return queue_job(team, device, kind=JobKind.REMOTE_SCENARIO, settings=spec.as_dict(), user=user, model=model)


# -- the worker's side -------------------------------------------------------------------------


def _summary(result: RemoteScenarioResult, position: int, s: ProfileSummary) -> RemoteProfileSummary:
    return RemoteProfileSummary(
        result=result,
        position=position,
        profile=s.profile,
        requests=s.requests,
        **{
            f"{part}_{stat}_ms": getattr(getattr(s, part), stat)
            for part in ("upload", "server", "compute", "download")
            for stat in ("median", "p90")
        },
        remainder_median_ms=None if s.remainder is None else s.remainder.median,
        remainder_p90_ms=None if s.remainder is None else s.remainder.p90,
        e2e_median_ms=s.e2e.median,
        e2e_p90_ms=s.e2e.p90,
        e2e_mean_ms=s.e2e.mean,
        e2e_std_ms=s.e2e.std,
        network_share=s.network_share,
        stages_ms=dict(s.stages_ms),
    )


def ingest_remote(job_id: int, token: str, result: RemoteRunRecord) -> RemoteScenarioResult | None:
    """Store a remote run (``remote_on_device``'s result) and its profiles' summaries in one
    transaction; the job succeeds. The stored run when it was stored already; None when the job
    is not this run's."""
    with transaction.atomic():
        job = claimed_for_ingest(job_id, token, RemoteScenarioResult.objects.all())
        if job is None:
            return RemoteScenarioResult.objects.filter(job_id=job_id).first()
        stored = RemoteScenarioResult.objects.create(
            job=job,
            attempt=job.attempts,
            model_name=result.model[:200],
            payload=result.payload,
            content_type=result.content_type,
            payload_bytes=result.payload_bytes,
            load_ms=result.load_ms,
            requests=result.spec.requests,
            warmup=result.spec.warmup,
            spec=result.spec.as_dict(),
            environment=dict(result.environment),
            data=result.measurements(),
            elapsed_s=result.elapsed_s,
        )
        RemoteProfileSummary.objects.bulk_create(_summary(stored, i, s) for i, s in enumerate(result.summaries))
        finish_ingest(job, token)
    return stored


# -- reading -----------------------------------------------------------------------------------


def profile_summaries(stored: RemoteScenarioResult) -> QuerySet[RemoteProfileSummary]:
    """A run's profiles in the order the job named them."""
    return stored.profiles.all()


def stored_run(job: ProfilingJob) -> RemoteScenarioResult | None:
    """The job's stored run, None before it is stored."""
    return RemoteScenarioResult.objects.filter(job=job).first()
