"""What a remote run hands to the server (``RemoteRunRecord``): the scenario's measurements with
the spec, the payload and one summary per profile, typed, with the JSON that carries it across a
process or machine boundary (``as_dict`` / ``from_dict``, exact both ways).

``remote_on_device`` builds it from ``RemoteScenario.as_dict()`` and the summaries, so what the
server stores is exactly what crossed. Every key the server reads is a typed field; each
profile's requests (``results``, ``RemoteMeasurement.as_dict()``) stay JSON for the pages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, TypedDict

from devicelab.measure.environment import HostLockRecord
from devicelab.measure.stats import SampleStats
from devicelab.remote.spec import RemoteSpec
from devicelab.wire import JsonDict, JsonRecord, OwnJson

PARTS = ("upload", "server", "compute", "download", "remainder", "e2e")


class RemoteEnvironment(TypedDict, total=False):
    """The serving side of a remote run (``RemoteScenario.environment``)."""

    server: str  # what served the model, and how the link was shaped
    runtime: str  # the inference runtime and its version
    threads: int  # the serving process's intra-op threads
    cores: list[int]  # the cores it was pinned to ([]: the OS decides)
    requests: int  # timed requests per profile
    host_lock: HostLockRecord  # whether it held the host's processors alone (a lab machine's CPU devices)


@dataclass(frozen=True)
class ProfileSummary(JsonRecord):
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
    # e2e less upload, server and download, each timed on its own: what no clock attributes.
    # None in a run measured before the download was timed (it was then the remainder itself).
    remainder: SampleStats | None = None


@dataclass(frozen=True)
class RemoteRunRecord(JsonRecord):
    """A remote run as it crosses to the server (``remote_on_device``'s result)."""

    model: str  # the served graph's name
    load_ms: float  # the server's model load, paid once before the first request
    content_type: str
    payload_bytes: int
    results: dict[str, JsonDict]  # by profile: ``RemoteMeasurement.as_dict()`` (every request)
    environment: RemoteEnvironment
    spec: Annotated[RemoteSpec, OwnJson("a remote run's spec")]
    payload: str  # jpeg, png or tensor
    summaries: tuple[ProfileSummary, ...]  # in the spec's order of profiles
    elapsed_s: float

    json_name = "remote run"

    def measurements(self) -> JsonDict:
        """What the server keeps of the scenario beside its columns: the model, the load, the
        payload's type and size, every request by profile, and the serving side."""
        d = self.as_dict()
        return {k: d[k] for k in ("model", "load_ms", "content_type", "payload_bytes", "results", "environment")}


__all__ = ["PARTS", "ProfileSummary", "RemoteEnvironment", "RemoteRunRecord"]
