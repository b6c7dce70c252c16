"""An HTTP proxy between a lab worker and the server, for faults on the wire: it forwards every
request as it came and can corrupt the bytes of model-file downloads (``GET /api/lab/files/...``)
the first ``corrupt`` times, as a broken link or middlebox would."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import requests

# Headers the proxy sets itself (hop-by-hop, or recomputed for the body it sends).
_SKIP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


class CorruptingProxy:
    """A proxy to ``upstream`` on a free loopback port; ``url`` is where workers reach it."""

    def __init__(self, upstream: str, corrupt: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.corrupt = corrupt
        self.downloads = 0
        self.corrupted = 0
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _SKIP}
                resp = requests.request(
                    self.command, proxy.upstream + self.path, data=body, headers=headers, timeout=60
                )
                content = resp.content
                if self.command == "GET" and self.path.startswith("/api/lab/files/") and resp.status_code == 200:
                    content = proxy.downloaded(content)
                self.send_response(resp.status_code)
                for k, v in resp.headers.items():
                    if k.lower() not in _SKIP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            do_GET = do_POST = _forward

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def downloaded(self, content: bytes) -> bytes:
        """A model file going through: count it, and flip a byte while corruptions are left."""
        with self._lock:
            self.downloads += 1
            if self.corrupted >= self.corrupt or not content:
                return content
            self.corrupted += 1
        middle = len(content) // 2
        return content[:middle] + bytes([content[middle] ^ 0xFF]) + content[middle + 1 :]

    def __enter__(self) -> CorruptingProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
