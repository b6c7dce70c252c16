"""A remote run on a registered device: what a worker calls for a job of kind ``remote_scenario``.

The lab machine that holds the CPU device serves the job's model on loopback, in a process of its
own with the job's threads and cores (``devicelab.remote.endpoint``), and the worker plays the
phone: it sends the payload under every network profile of the job, the profiles interleaved
round by round (``run_remote_scenario``), reporting progress after every request.

The result is ``RemoteScenario.as_dict()`` with the spec beside and one summary per profile
(``ProfileSummary``): the statistics the pages and tables show, computed here from the samples
(``devicelab.measure.stats.summarize``), so the server stores them as they are.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from devicelab.backends.base import BackendError, DeviceInfo
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph.ir import Graph
from devicelab.measure.harness import ReportFn
from devicelab.measure.stats import summarize
from devicelab.remote.client import (
    RemoteError,
    RemoteMeasurement,
    ShapeDraw,
    profile_draw,
    run_remote_scenario,
    tensor_payload,
    upload_photo,
)
from devicelab.remote.endpoint import EndpointError
from devicelab.remote.results import ProfileSummary, RemoteRunRecord
from devicelab.remote.spec import PAYLOADS, RemoteSpec

CPU = "cpu"
# The server's stages, in the order they run (the names of its answer's ``<stage>_ms``).
SERVER_STAGES = ("decode", "resize_crop", "normalize", "compute", "postprocess")


@dataclass(frozen=True)
class Payload:
    """What the client sends: the body, its content type and any header it needs."""

    kind: str  # jpeg, png or tensor
    body: bytes
    content_type: str
    headers: dict[str, str]


def make_payload(kind: str, graph: Graph) -> Payload:
    """The request a phone would send: the lab's photo (1024 x 768) as a JPEG or a PNG, or, for
    ``tensor``, that photo decoded, resized, cropped and normalized on the phone to the model's
    input (float32, N x 3 x H x W; the server then only runs the model)."""
    if kind in ("jpeg", "png"):
        body, content_type = upload_photo(fmt=kind)
        return Payload(kind, body, content_type, {})
    if kind != "tensor":
        raise ValueError(f"payload must be jpeg, png or tensor, got {kind!r}")
    from devicelab.measure import image_pipeline
    from devicelab.measure.breakdown import image_input

    image = image_input(graph)
    photo, _ = upload_photo()
    cropped = image_pipeline.resize_crop(image_pipeline.decode(photo), image.height, image.width)
    body, content_type, headers = tensor_payload(image_pipeline.normalize([cropped] * image.batch, "float32"))
    return Payload(kind, body, content_type, headers)


@functools.lru_cache(maxsize=len(PAYLOADS))
def _photo_bytes(fmt: str) -> int:
    return len(upload_photo(fmt=fmt)[0])


def payload_bytes(kind: str, graph: Graph) -> int:
    """The size of ``make_payload(kind, graph)``'s body, without sending it (the photos' sizes are
    measured once per process)."""
    if kind == "tensor":
        from devicelab.measure.breakdown import image_input

        return 4 * math.prod(image_input(graph).shape)
    return _photo_bytes(kind)


def summarize_profile(name: str, m: RemoteMeasurement) -> ProfileSummary:
    """A profile's summary from its measured requests."""
    stages = {s: summarize([getattr(r, f"{s}_ms") for r in m.requests]).median for s in SERVER_STAGES}
    # what the server spent outside its named stages (reading its clock, the answer's JSON)
    other = [max(0.0, r.server_ms - sum(getattr(r, f"{s}_ms") for s in SERVER_STAGES)) for r in m.requests]
    stages["other"] = summarize(other).median
    return ProfileSummary(
        profile=name,
        requests=len(m.requests),
        upload=m.upload,
        server=m.server,
        compute=m.compute,
        download=m.download,
        e2e=m.e2e,
        stages_ms=stages,
        network_share=(m.upload.mean + m.download.mean) / m.e2e.mean if m.e2e.mean > 0 else 0.0,
        remainder=m.remainder,
    )


def links(spec: RemoteSpec) -> dict[str, ShapeDraw | None]:
    """Every profile of the spec as the scenario takes it: a link drawn per request (None: unshaped)."""
    out: dict[str, ShapeDraw | None] = {}
    for name in spec.profiles:
        profile = spec.network_profiles[name]
        out[name] = None if profile is None else profile_draw(profile)
    return out


def remote_on_device(
    info: DeviceInfo, graph: Graph, spec_dict: Mapping[str, Any], progress: ReportFn | None = None
) -> RemoteRunRecord:
    """Serve ``graph`` on the CPU device ``info`` names (this machine) and measure it under every
    profile of ``spec_dict`` (``RemoteSpec.as_dict()``); the record of ``RemoteScenario.as_dict()``
    with the spec, the payload's kind, one summary per profile (``summaries``, in the spec's order) and
    ``elapsed_s`` beside. The endpoint's failures are ``BackendError``s saying why."""
    if info.kind != CPU:
        raise ValueError(
            f"remote runs are served by a CPU device (this machine); {info.name!r} is a {info.kind} device"
        )
    t0 = time.perf_counter()
    spec = RemoteSpec.from_dict(spec_dict)
    payload = make_payload(spec.payload, graph)
    if progress is not None:
        progress(0.0, f"loading {graph.name} to serve it")
    try:
        scenario = run_remote_scenario(
            graph,
            links(spec),
            payload=payload.body,
            content_type=payload.content_type,
            headers=payload.headers,
            requests=spec.requests,
            warmup=spec.warmup,
            rng=np.random.default_rng(spec.seed),
            settings=ProfileSettings(threads=spec.threads, cores=spec.cores),
            progress=progress,
        )
    except EndpointError as exc:
        raise BackendError(str(exc)) from None
    except RemoteError as exc:
        raise BackendError(f"the inference endpoint refused the {spec.payload} payload: {exc}") from None
    out = scenario.as_dict()
    out.update(
        {
            "spec": spec.as_dict(),
            "payload": spec.payload,
            "summaries": [summarize_profile(n, scenario.results[n]).as_dict() for n in spec.profiles],
            "elapsed_s": time.perf_counter() - t0,
        }
    )
    if progress is not None:
        progress(1.0, "done")
    return RemoteRunRecord.from_dict(out)


__all__ = [
    "SERVER_STAGES",
    "Payload",
    "ProfileSummary",
    "links",
    "make_payload",
    "payload_bytes",
    "remote_on_device",
    "summarize_profile",
]
