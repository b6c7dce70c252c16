"""Network conditions the lab applies to its own transfers: a link's rate and one-way delay.

The lab does not touch the kernel's network stack (no ``tc``/``netem``, no privileges): the
sender of each transfer paces it itself. Our client paces its upload, our inference server its
response, both on loopback, so a remote run under any link can be reproduced on one machine.

Pacing: the one-way delay first (the first byte's propagation), then the bytes in chunks, each
chunk sent once a token bucket filled at the link's rate holds its size. The bucket starts
empty, so the last byte leaves ``delay + bytes / rate`` after the transfer started, as on a link
of that rate and delay. Its depth is a few chunks: a sleep that overshoots (a loaded machine, the
GIL) is made up by the next chunks instead of stretching the transfer, but a stall longer than
the depth is not (a link does not send faster after an idle spell).

What it does not model: TCP's slow start and congestion control, loss and retransmission, queues
shared with other traffic, and the handshake's round trip (the client connects before its clock
starts). ``docs/remote.md`` has its measured accuracy.
"""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

MIN_RATE_BYTES_PER_S = 1_000.0  # below 1 kB/s a photo upload would take minutes
MAX_DELAY_MS = 10_000.0
CHUNK_S = 0.005  # a chunk is about this much of the link's time ...
MIN_CHUNK_BYTES = 1_024
MAX_CHUNK_BYTES = 64 * 1_024  # ... within these bounds
BUCKET_CHUNKS = 4  # the bucket's depth, in chunks


@dataclass(frozen=True)
class LinkShape:
    """A network link as the lab applies it: uplink and downlink rates (bytes/s; ``math.inf`` for
    no rate limit) and the one-way delay (ms) added to each direction."""

    uplink_bytes_per_s: float
    downlink_bytes_per_s: float
    one_way_delay_ms: float

    def __post_init__(self) -> None:
        for name in ("uplink_bytes_per_s", "downlink_bytes_per_s"):
            rate = getattr(self, name)
            if math.isnan(rate) or rate < MIN_RATE_BYTES_PER_S:
                raise ValueError(f"{name} must be at least {MIN_RATE_BYTES_PER_S:.0f} bytes/s (or inf), got {rate}")
        delay = self.one_way_delay_ms
        if not (math.isfinite(delay) and 0 <= delay <= MAX_DELAY_MS):
            raise ValueError(f"one_way_delay_ms must be between 0 and {MAX_DELAY_MS:.0f} ms, got {delay}")

    def upload_ms(self, nbytes: int) -> float:
        """The time an upload of ``nbytes`` takes on this link (ms): delay + bytes / rate."""
        return self.one_way_delay_ms + 1e3 * nbytes / self.uplink_bytes_per_s

    def download_ms(self, nbytes: int) -> float:
        """The time a download of ``nbytes`` takes on this link (ms): delay + bytes / rate."""
        return self.one_way_delay_ms + 1e3 * nbytes / self.downlink_bytes_per_s

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON (an unlimited rate is ``None``)."""
        return {k: (None if isinstance(v, float) and math.isinf(v) else v) for k, v in asdict(self).items()}


def chunk_bytes(bytes_per_s: float) -> int:
    """The pacing chunk for a rate: about ``CHUNK_S`` of the link's time, within bounds.

    Small enough that a transfer of 100 kB is paced in tens of steps, large enough that a sleep's
    overshoot (tens of microseconds) stays a small part of each step."""
    if math.isinf(bytes_per_s):
        return MAX_CHUNK_BYTES
    return int(min(MAX_CHUNK_BYTES, max(MIN_CHUNK_BYTES, bytes_per_s * CHUNK_S)))


class TokenBucket:
    """Tokens (bytes) accrue at ``rate`` up to ``capacity``; ``take(n)`` waits until ``n`` are there.

    Starts empty: what is taken first waits for its own tokens, as the first bytes on a link take
    their transmission time."""

    def __init__(
        self,
        rate: float,
        capacity: float,
        *,
        clock: Callable[[], float] = time.perf_counter,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not (rate > 0 and math.isfinite(rate)):
            raise ValueError(f"a token bucket needs a finite positive rate, got {rate}")
        if not capacity > 0:
            raise ValueError(f"a token bucket needs a positive capacity, got {capacity}")
        self.rate = rate
        self.capacity = capacity
        self._clock = clock
        self._sleep = sleep
        self._tokens = 0.0
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._at) * self.rate)
        self._at = now

    def take(self, n: int) -> None:
        """Wait until ``n`` tokens are in the bucket, then take them."""
        if n > self.capacity:
            raise ValueError(f"cannot take {n} tokens from a bucket of {self.capacity:.0f}")
        self._refill()
        # short by less than a rounding error counts as there: the clock cannot step that finely
        while self._tokens < n * (1 - 1e-9):
            self._sleep((n - self._tokens) / self.rate)
            self._refill()
        self._tokens -= n


def sleep_ms(ms: float, *, clock: Callable[[], float] = time.perf_counter) -> None:
    """Sleep ``ms`` milliseconds, to the clock (a short ``time.sleep`` may return early on some OSes)."""
    end = clock() + ms / 1e3
    while (left := end - clock()) > 0:
        time.sleep(left)


def send_shaped(sock: socket.socket, data: bytes, bytes_per_s: float, delay_ms: float) -> None:
    """Send ``data`` as over a link of this rate (bytes/s, ``inf`` for none) and one-way delay (ms).

    Returns when the last chunk is in the kernel's send buffer; on loopback, with the peer
    reading, that is when the peer has it (the pacing keeps the buffer nearly empty)."""
    if delay_ms > 0:
        sleep_ms(delay_ms)
    if math.isinf(bytes_per_s):
        sock.sendall(data)
        return
    chunk = chunk_bytes(bytes_per_s)
    bucket = TokenBucket(bytes_per_s, BUCKET_CHUNKS * chunk)
    view = memoryview(data)
    for start in range(0, len(view), chunk):
        piece = view[start : start + chunk]
        bucket.take(len(piece))
        sock.sendall(piece)


__all__ = [
    "MAX_DELAY_MS",
    "MIN_RATE_BYTES_PER_S",
    "LinkShape",
    "TokenBucket",
    "chunk_bytes",
    "send_shaped",
    "sleep_ms",
]
