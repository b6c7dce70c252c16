"""Model selection for one request (``POST /api/select/``): CNNSelect over the team's candidate
models with their profiles on the serving device (``profiles``), the time the input took given
directly or estimated from a network profile."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError

from devicelab.selection import (
    DEFAULT_SELECT_POLICY,
    DEFAULT_THRESHOLD_MS,
    PRESETS,
    SELECT_POLICIES,
    ModelProfile,
    NetworkProfile,
    select_model,
    sla_table,
)
from server.accounts.models import Team
from server.devices.models import Device
from server.selection.models import StoredNetworkProfile
from server.selection.profiles import Candidate, candidate_profiles

SELECT_FIELDS = {
    "device",
    "models",
    "sla_ms",
    "input_ms",
    "network_profile",
    "input_bytes",
    "output_bytes",
    "threshold_ms",
    "seed",
    "policy",
}
TABLE_FIELDS = {
    "device",
    "models",
    "sla_targets_ms",
    "network_profile",
    "input_bytes",
    "output_bytes",
    "threshold_ms",
    "seed",
    "policy",
    "requests",
    "on_device",
    "load_per_request",
}
DEFAULT_INPUT_BYTES = 330_000  # the paper's preprocessed image (section 5.2)
DEFAULT_OUTPUT_BYTES = 1_000  # the answer: labels, as the paper's 2 T_input assumes it smaller than the input
DEFAULT_TABLE_REQUESTS = 4_000
MAX_TABLE_REQUESTS = 20_000
MAX_TABLE_SLAS = 200
# Requests x SLA targets of one answer: it is computed in the request (about 1 s per 200,000 on
# the lab's 2 cores, six candidates); a longer sweep is a simulation, run by the trainer.
MAX_TABLE_WORK = 200_000


def _number(
    raw: Mapping[str, Any],
    key: str,
    *,
    minimum: float = 0.0,
    maximum: float = float("inf"),
    default: float | None = None,
) -> float:
    """``raw[key]`` as a finite number in [minimum, maximum]; ``ValidationError`` naming ``key``
    when it is missing, null, not a number or out of range."""
    value = raw.get(key, default)
    if value is None:
        raise ValidationError({key: f"{key} is required"})
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not np.isfinite(value)
        or not minimum <= value <= maximum
    ):
        bounds = f">= {minimum:g}" if maximum == float("inf") else f"between {minimum:g} and {maximum:g}"
        raise ValidationError({key: f"{key} must be a number {bounds}, got {value!r}"})
    return float(value)


def _integer(raw: Mapping[str, Any], key: str, *, minimum: int, maximum: int | None = None, default: int) -> int:
    """``raw[key]`` as an integer in [minimum, maximum] (a count of bytes or requests: 2.5 is a
    mistake, not 2); ``ValidationError`` naming ``key`` otherwise."""
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (maximum and value > maximum):
        bounds = f">= {minimum}" if maximum is None else f"between {minimum} and {maximum}"
        raise ValidationError({key: f"{key} must be an integer {bounds}, got {value!r}"})
    return value


def network_profile(team: Team, name: Any) -> NetworkProfile:
    """A preset by name, else the team's stored profile of that name."""
    if not isinstance(name, str) or not name:
        raise ValidationError({"network_profile": f"a network profile is named by a string, got {name!r}"})
    if name in PRESETS:
        return PRESETS[name]
    stored = StoredNetworkProfile.objects.filter(team=team, name=name).first()
    if stored is None:
        known = [*PRESETS, *StoredNetworkProfile.objects.filter(team=team).values_list("name", flat=True)]
        raise ValidationError({"network_profile": f"no network profile {name!r}; known: {', '.join(known)}"})
    return NetworkProfile.from_dict(stored.data)


def _input_time(team: Team, raw: Mapping[str, Any]) -> tuple[float, float | None, dict[str, Any]]:
    """T_input, the network's download / upload time ratio when a profile tells it, and where they came from."""
    if ("input_ms" in raw) == ("network_profile" in raw):  # a null counts as given: it is a mistake
        raise ValidationError({"input_ms": "give exactly one of input_ms and network_profile"})
    if "input_ms" in raw:
        return _number(raw, "input_ms"), None, {"kind": "given"}
    profile = network_profile(team, raw["network_profile"])
    nbytes = _integer(raw, "input_bytes", minimum=1, default=DEFAULT_INPUT_BYTES)
    out_bytes = _integer(raw, "output_bytes", minimum=0, default=DEFAULT_OUTPUT_BYTES)
    upload = profile.transfer_ms(nbytes)
    ratio = profile.transfer_ms(out_bytes) / upload if upload > 0 else None
    source = {"kind": "network_profile", "profile": profile.name, "input_bytes": nbytes, "output_bytes": out_bytes}
    return upload, ratio, source


def _policy(raw: Mapping[str, Any]) -> str:
    policy = raw.get("policy", DEFAULT_SELECT_POLICY)
    if policy not in SELECT_POLICIES:
        raise ValidationError({"policy": f"policy must be one of {list(SELECT_POLICIES)}, got {policy!r}"})
    return str(policy)


def _device(raw: Mapping[str, Any], key: str = "device") -> Device:
    device_id = raw.get(key)
    if isinstance(device_id, bool) or not isinstance(device_id, int):
        raise ValidationError({key: f"{key} must be a device id, got {device_id!r}"})
    device = Device.objects.filter(pk=device_id).first()
    if device is None:
        raise ValidationError({key: f"there is no device #{device_id} (GET /api/devices/)"})
    return device


def _seed(raw: Mapping[str, Any]) -> int | None:
    seed = raw.get("seed")
    if "seed" in raw and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValidationError({"seed": f"seed must be a non-negative integer (or left out), got {seed!r}"})
    return seed


def _warnings(candidates: list[Candidate]) -> list[str]:
    return [w for c in candidates if (w := c.warning()) is not None]


def select_for_request(team: Team, raw: Any) -> dict[str, Any]:
    """CNNSelect's answer for one request: the chosen model, the probabilities, and why."""
    if not isinstance(raw, Mapping):
        raise ValidationError("the request body must be a JSON object")
    unknown = sorted(set(raw) - SELECT_FIELDS)
    if unknown:
        raise ValidationError(f"unknown field(s) {unknown}; the fields are {sorted(SELECT_FIELDS)}")
    device = _device(raw)
    sla_ms = _number(raw, "sla_ms", minimum=0.0)
    threshold_ms = _number(raw, "threshold_ms", default=DEFAULT_THRESHOLD_MS)
    policy = _policy(raw)
    input_ms, download_ratio, input_source = _input_time(team, raw)
    seed = _seed(raw)
    candidates = candidate_profiles(team, device, raw.get("models"))  # type: ignore[arg-type]
    try:
        selection = select_model(
            [c.profile for c in candidates],
            sla_ms=sla_ms,
            input_ms=input_ms,
            threshold_ms=threshold_ms,
            rng=seed,
            policy=policy,
            download_ratio=download_ratio,
        )
    except ValueError as e:
        raise ValidationError(str(e)) from None
    by_name = {c.profile.name: c for c in candidates}
    answer = selection.as_dict()
    answer["chosen"] = {"model": by_name[selection.chosen].model.pk, "name": selection.chosen}
    answer.update(
        device=device.pk,
        sla_ms=sla_ms,
        input_ms=input_ms,
        input_source=input_source,
        threshold_ms=threshold_ms,
        candidates=[c.as_dict() for c in candidates],
        warnings=_warnings(candidates),
    )
    return answer


def select_table(team: Team, raw: Any) -> dict[str, Any]:
    """The developer's question over a range of SLAs (``devicelab.selection.sla_table``): per
    candidate served on ``device`` over ``network_profile`` and, with ``on_device`` (a phone or
    CPU the models were profiled on), run on the device itself (its cold start per request with
    ``load_per_request``), the chance of meeting each SLA, the expected accuracy and the accuracy
    within the SLA; then the selection policy's and greedy's over the same requests."""
    if not isinstance(raw, Mapping):
        raise ValidationError("the request body must be a JSON object")
    unknown = sorted(set(raw) - TABLE_FIELDS)
    if unknown:
        raise ValidationError(f"unknown field(s) {unknown}; the fields are {sorted(TABLE_FIELDS)}")
    device = _device(raw)
    slas = raw.get("sla_targets_ms")
    if not isinstance(slas, list) or not 1 <= len(slas) <= MAX_TABLE_SLAS:
        raise ValidationError({"sla_targets_ms": f"a list of 1 to {MAX_TABLE_SLAS} SLA targets (ms)"})
    for i, _ in enumerate(slas):
        _number({"sla_targets_ms": slas[i]}, "sla_targets_ms", minimum=1e-9)
    if "network_profile" not in raw:
        raise ValidationError({"network_profile": "a table needs a network profile (the spread of the network)"})
    profile = network_profile(team, raw["network_profile"])
    in_bytes = _integer(raw, "input_bytes", minimum=1, default=DEFAULT_INPUT_BYTES)
    out_bytes = _integer(raw, "output_bytes", minimum=0, default=DEFAULT_OUTPUT_BYTES)
    threshold_ms = _number(raw, "threshold_ms", default=DEFAULT_THRESHOLD_MS)
    requests = _integer(raw, "requests", minimum=100, maximum=MAX_TABLE_REQUESTS, default=DEFAULT_TABLE_REQUESTS)
    if requests * len(slas) > MAX_TABLE_WORK:
        raise ValidationError(
            {
                "requests": f"{requests:,} requests x {len(slas)} SLA targets is over {MAX_TABLE_WORK:,}: ask fewer, "
                "or run a simulation (POST /api/selection/simulations/)"
            }
        )
    policy = _policy(raw)
    seed = _seed(raw) or 0
    candidates = candidate_profiles(team, device, raw.get("models"))  # type: ignore[arg-type]
    local: list[Candidate] = []
    local_profiles: list[ModelProfile] = []
    on_device = None
    load_per_request = raw.get("load_per_request", False)
    if not isinstance(load_per_request, bool):
        raise ValidationError({"load_per_request": f"load_per_request is true or false, got {load_per_request!r}"})
    if raw.get("on_device") is not None:
        on_device = _device(raw, "on_device")
        local = candidate_profiles(team, on_device, raw.get("models"), field="on_device", measured_only=True)  # type: ignore[arg-type]
        for c in local:
            if not load_per_request:
                local_profiles.append(c.profile)
                continue
            if not c.cold_start_ms:
                raise ValidationError(
                    {"on_device": f"{c.model.name!r} has no cold start measured on {on_device.name!r}"}
                )
            local_profiles.append(ModelProfile.from_samples(c.profile.name, c.profile.accuracy, c.cold_start_ms))
    elif load_per_request:
        raise ValidationError({"load_per_request": "load_per_request prices the on_device option: name on_device"})
    try:
        table = sla_table(
            [c.profile for c in candidates],
            sla_targets_ms=[float(t) for t in slas],
            profile=profile,
            on_device=local_profiles,
            policy=policy,
            threshold_ms=threshold_ms,
            request_bytes=in_bytes,
            response_bytes=out_bytes,
            requests=requests,
            seed=seed,
        )
    except ValueError as e:
        raise ValidationError(str(e)) from None
    answer = table.as_dict()
    answer.update(
        device=device.pk,
        on_device=None if on_device is None else on_device.pk,
        load_per_request=load_per_request,
        candidates=[c.as_dict() for c in candidates],
        on_device_candidates=[
            {**c.as_dict(), "cold_starts": len(c.cold_start_ms), "mu_ms": p.mu_ms, "sigma_ms": p.sigma_ms}
            for c, p in zip(local, local_profiles, strict=True)
        ],
        warnings=_warnings(candidates) + _warnings(local),
    )
    return answer


PROFILE_FIELDS = {"name", "latency_ms", "throughput_mbps", "cv", "transfers", "source"}
MAX_TRANSFERS = 10_000
# Bounds of a custom profile: past them a number describes no network, and an absurd one (1e30 ms)
# would only turn every selection's input time into noise or an overflow. A latency over an hour
# per transfer is not a measurement; 1 Tbit/s is beyond any link a phone or a server has; a
# spread of ten times the mean is beyond any network's jitter.
MAX_LATENCY_MS = 3_600_000.0
MAX_THROUGHPUT_MBPS = 1_000_000.0
MAX_CV = 10.0


def store_network_profile(team: Team, raw: Any) -> StoredNetworkProfile:
    """A team's network profile: recorded (``transfers``: [bytes, seconds] pairs the lab measured)
    or custom (``latency_ms`` up to an hour, ``throughput_mbps`` up to 1 Tbit/s or null for
    unlimited, ``cv`` up to 10: the bounds of any real network, see ``MAX_LATENCY_MS``);
    ``ValidationError`` naming the field."""
    from django.db import IntegrityError, transaction

    if not isinstance(raw, Mapping):
        raise ValidationError("the request body must be a JSON object")
    unknown = sorted(set(raw) - PROFILE_FIELDS)
    if unknown:
        raise ValidationError(f"unknown field(s) {unknown}; the fields are {sorted(PROFILE_FIELDS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not name or len(name) > 100 or "\x00" in name:
        raise ValidationError({"name": "a profile needs a name of 1 to 100 characters"})
    if name in PRESETS:
        raise ValidationError({"name": f"{name!r} is a built-in preset; pick another name"})
    transfers = raw.get("transfers")
    source = raw.get("source", "")
    if not isinstance(source, str) or len(source) > 500:
        raise ValidationError({"source": "source is a string of at most 500 characters"})
    try:
        if transfers is not None:
            if set(raw) - {"name", "transfers", "source"}:
                raise ValidationError({"transfers": "a recorded profile has name, transfers and source only"})
            if not isinstance(transfers, list) or len(transfers) > MAX_TRANSFERS:
                raise ValidationError({"transfers": f"transfers is a list of at most {MAX_TRANSFERS} [bytes, seconds]"})
            if not all(isinstance(t, list) and len(t) == 2 for t in transfers):
                raise ValidationError({"transfers": "each transfer is a [bytes, seconds] pair"})
            profile = NetworkProfile.from_transfers(
                name, [(t[0], t[1]) for t in transfers], source=source or "recorded"
            )
            kind = "recorded"
        else:
            profile = NetworkProfile.user(
                name,
                latency_ms=_number(raw, "latency_ms", maximum=MAX_LATENCY_MS),
                throughput_mbps=(
                    None
                    if raw.get("throughput_mbps") is None
                    else _number(raw, "throughput_mbps", maximum=MAX_THROUGHPUT_MBPS)
                ),
                cv=_number(raw, "cv", maximum=MAX_CV, default=0.0),
                source=source or "user-defined",
            )
            kind = "custom"
    except ValueError as e:
        if transfers is not None:
            raise ValidationError({"transfers": str(e)}) from None
        raise ValidationError(str(e)) from None
    try:
        with transaction.atomic():
            return StoredNetworkProfile.objects.create(team=team, name=name, kind=kind, data=profile.as_dict())
    except IntegrityError:
        raise ValidationError({"name": f"the team has a network profile named {name!r} already"}) from None


def network_profiles(team: Team) -> list[dict[str, Any]]:
    """The presets, then the team's stored profiles, with their mean transfer of 330 KB."""
    out = []
    for profile, stored in [(p, None) for p in PRESETS.values()] + [
        (NetworkProfile.from_dict(s.data), s) for s in StoredNetworkProfile.objects.filter(team=team)
    ]:
        out.append(
            {
                **profile.as_dict(),
                "id": None if stored is None else stored.pk,
                "stored_kind": "preset" if stored is None else stored.kind,
                "throughput_mbps": profile.throughput_mbps,
                "transfer_330kb_ms": profile.transfer_ms(DEFAULT_INPUT_BYTES),
            }
        )
    return out


__all__ = ["network_profile", "network_profiles", "select_for_request", "select_table", "store_network_profile"]
