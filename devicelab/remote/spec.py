"""What a remote run measures, as a job states it: the network profiles, how many requests, the
payload, the seed, and the serving process's threads and cores.

``RemoteSettings`` declares what a request says, each field once (``devicelab.spec``): the API's
request body (``server.remote.api.requests``) and ``latencylab remote run``'s flags are derived
from it. ``RemoteSpec`` is those settings with each profile resolved: the server resolves each
name at submission (presets, a team's stored ones, or ``unshaped``) and the spec carries the
profile itself (``NetworkProfile.as_dict()``; None for ``unshaped``), so a run measures what was
asked even if the stored profile changes or goes away before the worker gets to it.

This module imports no numpy: the command line builds its parser from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from devicelab import spec as declared
from devicelab.backends.profile_settings import MAX_THREADS
from devicelab.spec import MAX_SEED, Items, setting

if TYPE_CHECKING:
    from devicelab.selection.network_profiles import NetworkProfile

UNSHAPED = "unshaped"  # a link the lab does not shape: loopback as it is
PAYLOADS = ("jpeg", "png", "tensor")
MAX_PROFILES = 8
MAX_REQUESTS = 500
MAX_WARMUP = 100
MAX_CORE_ID = 2**16 - 1  # a bound for the schema: machines have far fewer cores


@dataclass(frozen=True)
class RemoteSettings:
    """What a remote run's request says; each field declared once, with its bounds and help."""

    profiles: tuple[str, ...] = setting(
        (),
        min_items=1,
        max_items=MAX_PROFILES,
        unique=True,
        help=f"1 to {MAX_PROFILES} network profiles, measured interleaved: presets (campus_wifi, lte, "
        f"cellular_hotspot, prototype_wifi), your team's stored ones (GET /api/network-profiles/), or {UNSHAPED} "
        "(loopback as it is).",
    )
    requests: int = setting(20, ge=1, le=MAX_REQUESTS, help="Timed requests per profile.")
    warmup: int = setting(3, ge=0, le=MAX_WARMUP, help="Requests per profile sent first and dropped.")
    payload: str = setting(
        "jpeg",
        choices=PAYLOADS,
        help="What the client sends (default jpeg): jpeg or png, the lab's phone photo at 1024 x 768, decoded, "
        "resized and normalized by the server; tensor, that photo preprocessed on the client to the model's input "
        "(float32).",
    )
    seed: int = setting(0, ge=0, le=MAX_SEED, help="Seeds the profiles' per-request draws and the order of the rounds.")
    threads: int = setting(1, ge=1, le=MAX_THREADS, help="The server's threads.")
    cores: tuple[int, ...] = setting(
        (),
        items=Items(ge=0, le=MAX_CORE_ID),
        max_items=MAX_THREADS,
        help="Core ids to pin the server to (default []: the OS decides); the device must have them.",
    )

    def __post_init__(self) -> None:
        declared.check(self, RemoteSettings)


@dataclass(frozen=True)
class RemoteSpec(RemoteSettings):
    """One remote run: every profile measured ``requests`` times after ``warmup`` dropped requests."""

    network_profiles: dict[str, NetworkProfile | None] = field(default_factory=dict)  # by name; None: unshaped

    def __post_init__(self) -> None:
        super().__post_init__()
        if set(self.network_profiles) != set(self.profiles):
            raise ValueError(f"network_profiles must hold exactly the profiles {list(self.profiles)}")
        for name, profile in self.network_profiles.items():
            if (profile is None) != (name == UNSHAPED):
                raise ValueError(f"only {UNSHAPED!r} goes without a network profile; {name!r} does not")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (a job's settings)."""
        links = {n: None if (p := self.network_profiles[n]) is None else p.as_dict() for n in self.profiles}
        return {**declared.as_dict(self, RemoteSettings), "network_profiles": links}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RemoteSpec:
        """The inverse of ``as_dict``; ``ValueError`` for a key it does not know or a bad value
        (``devicelab.spec.SpecError`` naming the field)."""
        from devicelab.selection.network_profiles import NetworkProfile

        known = sorted([s.name for s in declared.settings_of(RemoteSettings)] + ["network_profiles"])
        unknown = sorted(set(d) - set(known))
        if unknown:
            raise ValueError(f"unknown remote run key(s) {unknown}; known: {known}")
        raw = dict(d)
        profiles = raw.get("profiles")
        if not isinstance(profiles, list | tuple) or not all(isinstance(p, str) for p in profiles):
            raise ValueError(f"profiles must be a list of names, got {profiles!r}")
        stored = raw.pop("network_profiles", None) or {}
        if not isinstance(stored, Mapping):
            raise ValueError(f"network_profiles must be an object by name, got {stored!r}")
        links = {n: None if stored.get(n) is None else NetworkProfile.from_dict(stored[n]) for n in profiles}
        return cls(network_profiles=links, **raw)


__all__ = [
    "MAX_CORE_ID",
    "MAX_PROFILES",
    "MAX_REQUESTS",
    "MAX_SEED",
    "MAX_WARMUP",
    "PAYLOADS",
    "UNSHAPED",
    "RemoteSettings",
    "RemoteSpec",
]
