"""What a remote run hands to the server (``RemoteRunRecord``): the scenario's measurements with
the spec, the payload and one summary per profile, typed, with the JSON that carries it across a
process or machine boundary (``as_dict`` / ``from_dict``, exact both ways).

``remote_on_device`` builds it from ``RemoteScenario.as_dict()`` and the summaries, so what the
server stores is exactly what crossed. Every key the server reads is a typed field; each
profile's requests (``results``, ``RemoteMeasurement.as_dict()``) stay JSON for the pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict, cast

from devicelab.measure.stats import SampleStats
from devicelab.remote.spec import RemoteSpec
from devicelab.wire import Fields, JsonDict, PayloadError, is_number, read

PARTS = ("upload", "server", "compute", "download", "e2e")


class RemoteEnvironment(TypedDict, total=False):
    """The serving side of a remote run (``RemoteScenario.environment``)."""

    server: str  # what served the model, and how the link was shaped
    runtime: str  # the inference runtime and its version
    threads: int  # the serving process's intra-op threads
    cores: list[int]  # the cores it was pinned to ([]: the OS decides)
    requests: int  # timed requests per profile


@dataclass(frozen=True)
class ProfileSummary:
    """One profile's requests summarized: each part's statistics (ms), the server's stages'
    medians, and the network's share of the end to end."""

    profile: str
    requests: int
    upload: SampleStats
    server: SampleStats
    compute: SampleStats
    download: SampleStats
    e2e: SampleStats
    stages_ms: dict[str, float]  # medians of the server's stages, and "other": its time outside them
    network_share: float  # (upload + download) / e2e, of the means

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "profile": self.profile,
            "requests": self.requests,
            **{part: getattr(self, part).as_dict() for part in PARTS},
            "stages_ms": dict(self.stages_ms),
            "network_share": self.network_share,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> ProfileSummary:
        """Read back from ``as_dict``'s JSON."""
        summary = cls(
            profile=f.text("profile"),
            requests=f.integer("requests"),
            upload=f.record("upload", SampleStats.from_fields),
            server=f.record("server", SampleStats.from_fields),
            compute=f.record("compute", SampleStats.from_fields),
            download=f.record("download", SampleStats.from_fields),
            e2e=f.record("e2e", SampleStats.from_fields),
            stages_ms={k: float(v) for k, v in f.mapping("stages_ms", is_number, "a number").items()},
            network_share=f.number("network_share"),
        )
        f.done()
        return summary


@dataclass(frozen=True)
class RemoteRunRecord:
    """A remote run as it crosses to the server (``remote_on_device``'s result)."""

    model: str  # the served graph's name
    load_ms: float  # the server's model load, paid once before the first request
    content_type: str
    payload_bytes: int
    results: dict[str, JsonDict]  # by profile: ``RemoteMeasurement.as_dict()`` (every request)
    environment: RemoteEnvironment
    spec: RemoteSpec
    payload: str  # jpeg, png or tensor
    summaries: tuple[ProfileSummary, ...]  # in the spec's order of profiles
    elapsed_s: float

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "model": self.model,
            "load_ms": self.load_ms,
            "content_type": self.content_type,
            "payload_bytes": self.payload_bytes,
            "results": dict(self.results),
            "environment": dict(self.environment),
            "spec": self.spec.as_dict(),
            "payload": self.payload,
            "summaries": [s.as_dict() for s in self.summaries],
            "elapsed_s": self.elapsed_s,
        }

    @classmethod
    def from_fields(cls, f: Fields) -> RemoteRunRecord:
        """Read from the JSON ``as_dict`` wrote."""
        try:
            spec = RemoteSpec.from_dict(f.obj("spec"))
        except (TypeError, ValueError) as exc:
            raise PayloadError(f"{f.path('spec')} is not a remote run's spec: {exc}") from None
        record = cls(
            model=f.text("model"),
            load_ms=f.number("load_ms"),
            content_type=f.text("content_type"),
            payload_bytes=f.integer("payload_bytes"),
            results=f.mapping("results", lambda v: isinstance(v, dict), "a JSON object"),
            environment=cast(RemoteEnvironment, f.shaped("environment", RemoteEnvironment)),
            spec=spec,
            payload=f.text("payload"),
            summaries=f.records("summaries", ProfileSummary.from_fields),
            elapsed_s=f.number("elapsed_s"),
        )
        f.done()
        return record

    @classmethod
    def from_dict(cls, data: object) -> RemoteRunRecord:
        """The inverse of ``as_dict``; ``PayloadError`` naming the first missing, mistyped or
        unknown key."""
        return read(data, "remote run", cls.from_fields)

    def measurements(self) -> JsonDict:
        """What the server keeps of the scenario beside its columns: the model, the load, the
        payload's type and size, every request by profile, and the serving side."""
        d = self.as_dict()
        return {k: d[k] for k in ("model", "load_ms", "content_type", "payload_bytes", "results", "environment")}


__all__ = ["PARTS", "ProfileSummary", "RemoteEnvironment", "RemoteRunRecord"]
