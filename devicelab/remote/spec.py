"""What a remote run measures, as a job states it: the network profiles, how many requests, the
payload, the seed, and the serving process's threads and cores.

A job names its profiles (presets, a team's stored ones, or ``unshaped``); the server resolves
each name at submission and the spec carries the profile itself (``NetworkProfile.as_dict()``;
None for ``unshaped``), so a run measures what was asked even if the stored profile changes or
goes away before the worker gets to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from devicelab.backends.profile_settings import MAX_THREADS
from devicelab.selection.network_profiles import NetworkProfile

UNSHAPED = "unshaped"  # a link the lab does not shape: loopback as it is
PAYLOADS = ("jpeg", "png", "tensor")
MAX_PROFILES = 8
MAX_REQUESTS = 500
MAX_WARMUP = 100
MAX_SEED = 2**32 - 1
DEFAULT_REQUESTS = 20
DEFAULT_WARMUP = 3
DEFAULT_PAYLOAD = "jpeg"


def _count(name: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer between {low} and {high}, got {value!r}")
    return value


def _profile_dict(profile: NetworkProfile | None) -> dict[str, Any] | None:
    return None if profile is None else profile.as_dict()


@dataclass(frozen=True)
class RemoteSpec:
    """One remote run: every profile measured ``requests`` times after ``warmup`` dropped requests."""

    profiles: tuple[str, ...]  # the links' names, in the order the job named them
    network_profiles: dict[str, NetworkProfile | None]  # by name; None for ``unshaped``
    requests: int = DEFAULT_REQUESTS
    warmup: int = DEFAULT_WARMUP
    payload: str = DEFAULT_PAYLOAD
    seed: int = 0
    threads: int = 1
    cores: tuple[int, ...] = field(default=())

    def __post_init__(self) -> None:
        if not 1 <= len(self.profiles) <= MAX_PROFILES:
            raise ValueError(f"a remote run measures 1 to {MAX_PROFILES} network profiles, got {len(self.profiles)}")
        if len(set(self.profiles)) != len(self.profiles):
            raise ValueError(f"profiles names one more than once: {list(self.profiles)}")
        if set(self.network_profiles) != set(self.profiles):
            raise ValueError(f"network_profiles must hold exactly the profiles {list(self.profiles)}")
        for name, profile in self.network_profiles.items():
            if (profile is None) != (name == UNSHAPED):
                raise ValueError(f"only {UNSHAPED!r} goes without a network profile; {name!r} does not")
        _count("requests", self.requests, 1, MAX_REQUESTS)
        _count("warmup", self.warmup, 0, MAX_WARMUP)
        _count("seed", self.seed, 0, MAX_SEED)
        _count("threads", self.threads, 1, MAX_THREADS)
        if self.payload not in PAYLOADS:
            raise ValueError(f"payload must be one of {', '.join(PAYLOADS)}, got {self.payload!r}")
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in self.cores):
            raise ValueError(f"cores must be non-negative core ids, got {list(self.cores)}")
        if len(self.cores) > MAX_THREADS:
            raise ValueError(f"cores lists {len(self.cores)} core ids; at most {MAX_THREADS}")

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (a job's settings)."""
        return {
            "profiles": list(self.profiles),
            "network_profiles": {n: _profile_dict(self.network_profiles[n]) for n in self.profiles},
            "requests": self.requests,
            "warmup": self.warmup,
            "payload": self.payload,
            "seed": self.seed,
            "threads": self.threads,
            "cores": list(self.cores),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RemoteSpec:
        """The inverse of ``as_dict``; ValueError for a key it does not know or a bad value."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown remote run key(s) {unknown}; known: {sorted(known)}")
        raw = dict(d)
        profiles = raw.pop("profiles", None)
        if not isinstance(profiles, list | tuple) or not all(isinstance(p, str) for p in profiles):
            raise ValueError(f"profiles must be a list of names, got {profiles!r}")
        stored = raw.pop("network_profiles", None) or {}
        if not isinstance(stored, Mapping):
            raise ValueError(f"network_profiles must be an object by name, got {stored!r}")
        links = {n: None if stored.get(n) is None else NetworkProfile.from_dict(stored[n]) for n in profiles}
        cores = raw.pop("cores", ())
        if not isinstance(cores, list | tuple):
            raise ValueError(f"cores must be a list of core ids, got {cores!r}")
        return cls(profiles=tuple(profiles), network_profiles=links, cores=tuple(cores), **raw)


__all__ = [
    "DEFAULT_PAYLOAD",
    "DEFAULT_REQUESTS",
    "DEFAULT_WARMUP",
    "MAX_PROFILES",
    "MAX_REQUESTS",
    "MAX_SEED",
    "MAX_WARMUP",
    "PAYLOADS",
    "UNSHAPED",
    "RemoteSpec",
]
