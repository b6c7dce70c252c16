"""Remote inference measured from the client: upload, server compute, download, end to end.

One request is timed by the client on its own clock: ``upload_ms`` from the first byte it sends
(the link's delay included, see ``devicelab.remote.shaping``) to the last; ``e2e_ms`` from the
first byte sent to the response's last byte; ``server_ms`` is what the server says it spent
(decode, resize + crop, normalize, compute, postprocess), and ``download_ms`` is the rest of the
wait after the upload: the response's delay and transfer. So ``upload + server + download = e2e``, as the paper splits a
cloud inference (table 4's uploading and computing, figure 10's network and inference time).

The connection is opened before the clock starts: a client that keeps its connection does not
pay the handshake, and on loopback there is no round trip to pay anyway.
"""

from __future__ import annotations

import http.client
import json
import math
import random
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph.ir import Graph
from devicelab.measure.harness import ReportFn
from devicelab.measure.stats import SampleStats, summarize
from devicelab.remote.endpoint import (
    DELAY_HEADER,
    DOWNLINK_HEADER,
    SHAPE_HEADER,
    TENSOR_TYPE,
    WAITED_HEADER,
    serve_model,
)
from devicelab.remote.results import RemoteEnvironment
from devicelab.remote.shaping import LinkShape, send_shaped
from devicelab.selection.network_profiles import NetworkProfile

TIMEOUT_S = 120.0
UPLOAD_WIDTH, UPLOAD_HEIGHT = 1024, 768

ShapeDraw = Callable[[np.random.Generator], LinkShape]
"""A link drawn per request (a network profile's spread), from the measurement's generator."""


class RemoteError(RuntimeError):
    """The server refused or failed a request; ``status`` is its HTTP status, the message its reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.reason = message


@dataclass(frozen=True)
class RemoteRequest:
    """One request's times (ms) and sizes (bytes), and the link it was sent over.

    ``upload_ms``, ``server_ms`` and ``download_ms`` are each timed on their own;
    ``remainder_ms`` is the end to end less the three, the time no clock attributes."""

    upload_ms: float
    server_ms: float
    download_ms: float
    e2e_ms: float
    remainder_ms: float
    decode_ms: float  # the server's stages, as it reported them
    resize_crop_ms: float
    normalize_ms: float
    compute_ms: float
    postprocess_ms: float
    upload_bytes: int
    download_bytes: int
    shape: LinkShape | None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "shape"}
        d["shape"] = self.shape.as_dict() if self.shape is not None else None
        return d


@dataclass(frozen=True)
class RemoteMeasurement:
    """Requests to one endpoint over one link (or one profile's draws): each request and the
    statistics of each part."""

    url: str
    content_type: str
    requests: list[RemoteRequest]
    upload: SampleStats
    server: SampleStats
    download: SampleStats
    e2e: SampleStats
    compute: SampleStats
    top5: list[tuple[int, float]]  # the last answer's (index, probability)
    warmup: int
    remainder: SampleStats  # e2e less upload, server and download: what none of the clocks holds

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "url": self.url,
            "content_type": self.content_type,
            "warmup": self.warmup,
            "upload": self.upload.as_dict(),
            "server": self.server.as_dict(),
            "download": self.download.as_dict(),
            "e2e": self.e2e.as_dict(),
            "compute": self.compute.as_dict(),
            "remainder": self.remainder.as_dict(),
            "top5": [list(p) for p in self.top5],
            "requests": [r.as_dict() for r in self.requests],
        }


def _measurement(
    url: str, content_type: str, done: list[tuple[RemoteRequest, list[tuple[int, float]]]], warmup: int
) -> RemoteMeasurement:
    reqs = [r for r, _ in done]
    return RemoteMeasurement(
        url=url,
        content_type=content_type,
        requests=reqs,
        upload=summarize([r.upload_ms for r in reqs]),
        server=summarize([r.server_ms for r in reqs]),
        download=summarize([r.download_ms for r in reqs]),
        e2e=summarize([r.e2e_ms for r in reqs]),
        compute=summarize([r.compute_ms for r in reqs]),
        top5=done[-1][1],
        warmup=warmup,
        remainder=summarize([r.remainder_ms for r in reqs]),
    )


def _request_bytes(
    host: str, port: int, payload: bytes, content_type: str, headers: Mapping[str, str], shape: LinkShape | None
) -> bytes:
    lines = [
        "POST /infer HTTP/1.1",
        f"Host: {host}:{port}",
        f"Content-Type: {content_type}",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    if shape is not None:
        # the server paces its response as this link's downlink
        if not math.isinf(shape.downlink_bytes_per_s):
            lines.append(f"{DOWNLINK_HEADER}: {shape.downlink_bytes_per_s!r}")
        lines.append(f"{DELAY_HEADER}: {shape.one_way_delay_ms!r}")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


def _response_bytes(response: http.client.HTTPResponse, body: bytes) -> int:
    status = len(f"HTTP/1.1 {response.status} {response.reason}\r\n")
    head = sum(len(f"{k}: {v}\r\n") for k, v in response.getheaders()) + 2
    return status + head + len(body)


def _ms(t0: int, t1: int) -> float:
    return (t1 - t0) / 1e6


def _waited_ms(response: http.client.HTTPResponse) -> float:
    """The delay the server waited before its answer's first byte (ms), as its head says; 0 from
    a server that does not say."""
    try:
        return max(0.0, float(response.getheader(WAITED_HEADER) or 0.0))
    except ValueError:
        return 0.0


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None or parts.port is None:
        raise ValueError(f"{url!r} is not an http://host:port URL")
    return parts.hostname, parts.port


def request_once(
    url: str,
    payload: bytes,
    content_type: str,
    shape: LinkShape | None,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = TIMEOUT_S,
) -> tuple[RemoteRequest, list[tuple[int, float]]]:
    """One ``POST /infer`` over ``shape`` (None: not shaped): its times and the answer's top-5."""
    host, port = _address(url)
    request = _request_bytes(host, port, payload, content_type, headers or {}, shape)
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.perf_counter_ns()
        if shape is None:
            sock.sendall(request)
        else:
            send_shaped(sock, request, shape.uplink_bytes_per_s, shape.one_way_delay_ms)
        t1 = time.perf_counter_ns()
        sock.recv(1, socket.MSG_PEEK)  # blocks until the answer's first byte is here, leaves it unread
        t_first = time.perf_counter_ns()
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
        t2 = time.perf_counter_ns()
    try:
        answer = json.loads(body)
    except ValueError:
        raise RemoteError(response.status, f"the answer is not JSON: {body[:200]!r}") from None
    if response.status != 200:
        raise RemoteError(response.status, str(answer.get("error", answer)))
    server_ms = float(answer["server_ms"])
    download_bytes = _response_bytes(response, body)
    e2e_ms = _ms(t0, t2)
    # Each part timed on its own: the upload by the client's clock around its sends, the server
    # by its own clock, the download as the delay the server waited before its first byte (it
    # says so in its head) plus the client's receiving from that first byte to the last. What
    # none of them holds (the server reading the body's end from its socket and handing it to a
    # thread, writing its answer, the client waking up) is the remainder, not hidden in a part.
    waited_ms = _waited_ms(response)
    download_ms = waited_ms + _ms(t_first, t2)
    # The client's clock reading after its last send is late when it is descheduled right there
    # (a loaded machine), which would overlap the upload with the server's time. The server had
    # the last byte no later than the first byte's arrival less its wait and its own time: the
    # upload ends at the earlier of the two, so the parts never overlap.
    upload_ms = max(0.0, min(_ms(t0, t1), _ms(t0, t_first) - waited_ms - server_ms))
    top5 = [(int(p["index"]), float(p["probability"])) for p in answer["top5"]]
    timing = RemoteRequest(
        upload_ms=upload_ms,
        server_ms=server_ms,
        download_ms=download_ms,
        e2e_ms=e2e_ms,
        remainder_ms=max(0.0, e2e_ms - upload_ms - server_ms - download_ms),
        decode_ms=float(answer["decode_ms"]),
        resize_crop_ms=float(answer["resize_crop_ms"]),
        normalize_ms=float(answer["normalize_ms"]),
        compute_ms=float(answer["compute_ms"]),
        postprocess_ms=float(answer["postprocess_ms"]),
        upload_bytes=len(request),
        download_bytes=download_bytes,
        shape=shape,
    )
    return timing, top5


def _link(shape: LinkShape | ShapeDraw | None, rng: np.random.Generator) -> LinkShape | None:
    if shape is None or isinstance(shape, LinkShape):
        return shape
    return shape(rng)


def measure_remote(
    url: str,
    payload: bytes,
    content_type: str,
    shape: LinkShape | ShapeDraw | None,
    requests: int,
    warmup: int,
    rng: np.random.Generator,
    headers: Mapping[str, str] | None = None,
) -> RemoteMeasurement:
    """``warmup`` dropped requests, then ``requests`` timed ones, each over ``shape`` (a fixed link,
    a link drawn per request from ``rng``, or None for an unshaped one)."""
    if requests < 1 or warmup < 0:
        raise ValueError(f"requests must be at least 1 and warmup at least 0, got {requests} and {warmup}")
    for _ in range(warmup):
        request_once(url, payload, content_type, _link(shape, rng), headers)
    done = [request_once(url, payload, content_type, _link(shape, rng), headers) for _ in range(requests)]
    return _measurement(url, content_type, done, warmup)


@dataclass(frozen=True)
class RemoteScenario:
    """A remote run: one served model measured over several links, interleaved round by round."""

    model: str
    load_ms: float  # the server's model load, paid once before the first request
    content_type: str
    payload_bytes: int
    results: dict[str, RemoteMeasurement]  # by link name
    environment: RemoteEnvironment = field(default_factory=lambda: RemoteEnvironment())

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "model": self.model,
            "load_ms": self.load_ms,
            "content_type": self.content_type,
            "payload_bytes": self.payload_bytes,
            "results": {name: m.as_dict() for name, m in self.results.items()},
            "environment": dict(self.environment),
        }


def run_remote_scenario(
    graph: Graph,
    shapes: Mapping[str, LinkShape | ShapeDraw | None],
    *,
    payload: bytes | None = None,
    content_type: str = "image/jpeg",
    headers: Mapping[str, str] | None = None,
    requests: int = 20,
    warmup: int = 3,
    rng: np.random.Generator | None = None,
    settings: ProfileSettings | None = None,
    progress: ReportFn | None = None,
) -> RemoteScenario:
    """Serve ``graph`` on loopback, measure every link ``requests`` times, stop the server.

    The links take turns, one request each per round, in an order shuffled every round: a burst
    of other load on the machine then hits every link alike, not one of them. Without a payload,
    the lab's photo is sent as a 1024 x 768 JPEG (``upload_photo``). ``progress`` is told after
    every request (it may raise to stop the run: the server is stopped on the way out)."""
    if not shapes:
        raise ValueError("a remote scenario needs at least one link")
    if requests < 1 or warmup < 0:
        raise ValueError(f"requests must be at least 1 and warmup at least 0, got {requests} and {warmup}")
    rng = rng if rng is not None else np.random.default_rng(0)
    if payload is None:
        payload, content_type = upload_photo()
    order = random.Random(int(rng.integers(2**32)))
    names = list(shapes)
    done: dict[str, list[tuple[RemoteRequest, list[tuple[int, float]]]]] = {n: [] for n in names}
    total, sent = (warmup + requests) * len(names), 0

    def report(message: str) -> None:
        if progress is not None:
            progress(sent / total, message)

    with serve_model(graph, settings) as endpoint:
        report("model loaded")
        for name in names:
            for i in range(warmup):
                request_once(endpoint.url, payload, content_type, _link(shapes[name], rng), headers)
                sent += 1
                report(f"warm-up {name} {i + 1}/{warmup}")
        for round_ in range(requests):
            order.shuffle(names)
            for name in names:
                done[name].append(request_once(endpoint.url, payload, content_type, _link(shapes[name], rng), headers))
                sent += 1
                report(f"round {round_ + 1}/{requests}")
        url, info = endpoint.url, endpoint.info
    return RemoteScenario(
        model=graph.name,
        load_ms=float(info["load_ms"]),
        content_type=content_type,
        payload_bytes=len(payload),
        results={name: _measurement(url, content_type, done[name], warmup) for name in shapes},
        environment={
            "server": "devicelab.remote.endpoint on loopback, shaped by devicelab.remote.shaping",
            "runtime": info["runtime"],
            "threads": info["threads"],
            "cores": info["cores"],
            "requests": requests,
        },
    )


# ---------------------------------------------------------------------------------------------
# Payloads


def upload_photo(width: int = UPLOAD_WIDTH, height: int = UPLOAD_HEIGHT, fmt: str = "jpeg") -> tuple[bytes, str]:
    """The lab's photo scene (``devicelab.measure.photos``) at an upload's size: its bytes and
    content type. 1024 x 768 as a JPEG is 163 kB, near the paper's uploads (section 4: 110 kB
    and 172 kB images; section 5.2: 330 kB on average), where the 12-megapixel original is MBs."""
    from devicelab.measure.photos import encode, scene

    return encode(scene(width, height), fmt), f"image/{fmt}"


def tensor_payload(x: np.ndarray) -> tuple[bytes, str, dict[str, str]]:
    """A raw float32 tensor as ``POST /infer`` takes it: the body, its content type, its shape header."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    return a.tobytes(), TENSOR_TYPE, {SHAPE_HEADER: ",".join(str(d) for d in a.shape)}


# ---------------------------------------------------------------------------------------------
# Network profiles


def profile_link(profile: NetworkProfile, factor: float = 1.0) -> LinkShape:
    """The link that makes every transfer take ``factor`` times the profile's mean time for its size:
    the profile's fixed latency as the one-way delay, its throughput as both rates.

    So an upload of n bytes takes ``factor * (latency_ms + n * ms_per_byte)``, the profile's own
    ``transfer_ms`` scaled by its random factor, and the response the same with its own size."""
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"a profile's factor must be finite and positive, got {factor}")
    per_byte = profile.ms_per_byte * factor
    rate = math.inf if per_byte == 0 else 1e3 / per_byte
    return LinkShape(rate, rate, profile.latency_ms * factor)


def profile_draw(profile: NetworkProfile) -> ShapeDraw:
    """A profile as ``measure_remote`` and ``run_remote_scenario`` take it: a link per request,
    scaled by one draw of the profile's random factor (``sample_factor``; recorded profiles replay
    their transfers' spread). Upload and download share the draw, as in ``sample_exchange_ms``:
    they cross the same network at the same moment."""
    return lambda rng: profile_link(profile, float(profile.sample_factor(1, rng)[0]))


__all__ = [
    "RemoteError",
    "RemoteMeasurement",
    "RemoteRequest",
    "RemoteScenario",
    "ShapeDraw",
    "measure_remote",
    "profile_draw",
    "profile_link",
    "request_once",
    "run_remote_scenario",
    "upload_photo",
    "tensor_payload",
]
