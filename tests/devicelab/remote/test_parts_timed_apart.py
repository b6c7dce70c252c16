"""Each part of a remote request is timed on its own, and what none of them holds is the
remainder: a server that spends time outside its own clock (here 40 ms before it answers) shows
that time as the remainder, not as download, and a delayed answer's delay is in the download."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from devicelab.remote.client import request_once
from devicelab.remote.endpoint import WAITED_HEADER
from devicelab.remote.shaping import LinkShape

UNCLOCKED_S = 0.040  # what the fake server spends outside the time it reports
REPORTED_SERVER_MS = 1.0
ANSWER = {
    "top5": [{"index": 3, "probability": 0.9}],
    "decode_ms": 0.2,
    "resize_crop_ms": 0.2,
    "normalize_ms": 0.1,
    "compute_ms": 0.4,
    "postprocess_ms": 0.05,
    "server_ms": REPORTED_SERVER_MS,
    "model": "fake",
}


def _read_request(conn: socket.socket) -> None:
    data = b""
    while b"\r\n\r\n" not in data:
        data += conn.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += conn.recv(65536)


def _serve(sock: socket.socket, waited_ms: float | None) -> None:
    conn, _ = sock.accept()
    with conn:
        _read_request(conn)
        time.sleep(UNCLOCKED_S)  # unreported: neither the upload, the server's clock nor the download
        body = json.dumps(ANSWER).encode()
        waited = f"{WAITED_HEADER}: {waited_ms}\r\n" if waited_ms is not None else ""
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{waited}\r\n"
        conn.sendall(head.encode() + body)


@pytest.fixture
def fake_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A one-request HTTP server on loopback that answers after ``UNCLOCKED_S`` it does not report;
    ``request.param``: the delay its head says it waited (None: no such header)."""
    sock = socket.create_server(("127.0.0.1", 0))
    thread = threading.Thread(target=_serve, args=(sock, getattr(request, "param", None)), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    thread.join(timeout=5)
    sock.close()


def test_time_outside_every_clock_is_the_remainder_not_the_download(fake_server: str) -> None:
    r, top5 = request_once(fake_server, b"x" * 1000, "image/jpeg", None)
    assert top5 == [(3, 0.9)]
    assert r.server_ms == REPORTED_SERVER_MS
    assert r.download_ms < 10.0  # a 0.3 kB answer on loopback: received at once
    assert r.remainder_ms >= 1e3 * UNCLOCKED_S - REPORTED_SERVER_MS - 1.0
    assert r.e2e_ms == pytest.approx(r.upload_ms + r.server_ms + r.download_ms + r.remainder_ms)


@pytest.mark.parametrize("fake_server", [25.0], indirect=True)
def test_the_delay_the_server_says_it_waited_is_download(fake_server: str) -> None:
    shape = LinkShape(1e9, 1e9, 0.0)
    r, _ = request_once(fake_server, b"x" * 1000, "image/jpeg", shape)
    assert 25.0 <= r.download_ms < 35.0
    # the 25 ms it says it waited are taken from its unclocked 40: the remainder holds the rest
    assert 0.0 <= r.remainder_ms < 1e3 * UNCLOCKED_S - 20.0
    assert r.e2e_ms == pytest.approx(r.upload_ms + r.server_ms + r.download_ms + r.remainder_ms)
