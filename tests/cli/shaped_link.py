"""A TCP relay on loopback that behaves like a link of a given rate and one-way delay in each
direction, for tests that record a network: each chunk that arrives is released ``delay`` after
it arrived, then paced by a token bucket at the link's rate (``devicelab.remote.shaping``)."""

from __future__ import annotations

import queue
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from devicelab.remote.shaping import BUCKET_CHUNKS, LinkShape, TokenBucket, chunk_bytes

_END = b""
QUICKACK = getattr(socket, "TCP_QUICKACK", 12)  # Linux; re-armed before every read


def _delay_line(src: socket.socket, dst: socket.socket, rate: float, delay_s: float) -> None:
    """Relay ``src`` to ``dst`` until ``src`` closes: each piece delayed, then paced."""
    chunk = chunk_bytes(rate)
    pending: queue.Queue[tuple[float, bytes]] = queue.Queue()

    def read() -> None:
        try:
            while True:
                # ACK at once: Django's test server writes headers and body apart without
                # TCP_NODELAY, so a delayed ACK here would hold its body back 40 ms (Nagle)
                src.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
                data = src.recv(chunk)
                if not data:
                    break
                pending.put((time.perf_counter(), data))
        except OSError:
            pass
        pending.put((time.perf_counter(), _END))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    bucket = TokenBucket(rate, BUCKET_CHUNKS * chunk)
    try:
        while True:
            idle = pending.empty()
            arrived, data = pending.get()
            if idle:  # a link does not bank its idle time: the burst's first bytes wait their own
                bucket = TokenBucket(rate, BUCKET_CHUNKS * chunk)
            wait = arrived + delay_s - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if data is _END:
                break
            bucket.take(len(data))
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


@contextmanager
def shaped_link(upstream: tuple[str, int], link: LinkShape) -> Iterator[str]:
    """A relay to ``upstream`` shaped as ``link``; yields its ``http://127.0.0.1:port``."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()
    sockets: list[socket.socket] = []

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            server = socket.create_connection(upstream)
            for s in (client, server):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sockets.append(s)
            delay = link.one_way_delay_ms / 1e3
            for args in ((client, server, link.uplink_bytes_per_s), (server, client, link.downlink_bytes_per_s)):
                threading.Thread(target=_delay_line, args=(*args, delay), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
        for s in sockets:  # shut down first: a read blocked on a socket keeps a closed one open
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


__all__ = ["shaped_link"]
