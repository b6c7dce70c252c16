"""``latencylab up`` waits for a busy web server through its health check, refuses a port that is
taken, and leaves no gunicorn worker behind when it stops, even one that ignores SIGTERM."""

from __future__ import annotations

import http.server
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from latencylab.commands.service_cmds import Interrupted, Service, _wait_for_http
from tests.cli.test_service_commands import _embedded_env
from tests.cli.test_up_signals import Up
from tests.waiting import wait_for


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


class _Up(Up):
    """``up`` that is serving once it has said so (its own health check passed)."""

    def wait_up(self, timeout: float = 180) -> None:
        def said_up() -> bool:
            assert self.proc.poll() is None, f"up exited with {self.proc.returncode}:\n{self.tail()}"
            return "LatencyLab is up at" in self.log.read_text(errors="replace")

        wait_for(said_up, timeout, lambda: f"up to say it is up:\n{self.tail()}", interval=0.5)


@pytest.fixture
def running_up(tmp_path: Path) -> Iterator[_Up]:
    up = _Up(tmp_path)
    try:
        up.wait_up()
        yield up
    finally:
        up.kill_group()


def _port_is_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


@pytest.mark.slow
def test_a_taken_port_is_refused_and_a_stuck_gunicorn_worker_does_not_outlive_up(
    running_up: _Up, tmp_path: Path
) -> None:
    up = running_up
    # A second up on the same port says so at once and exits, instead of restarting a gunicorn
    # that cannot bind for ever.
    second = subprocess.run(
        [sys.executable, "-m", "latencylab.cli", "up", "--port", str(up.port)],
        env=_embedded_env(tmp_path / "second"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1, second.stderr
    assert f"port {up.port} on 127.0.0.1 is taken" in second.stderr
    assert "held by" in second.stderr and "gunicorn" in second.stderr
    assert "Connection in use" not in second.stderr

    # A gunicorn worker that ignores SIGTERM (stopped: it handles nothing) outlived its master,
    # killed 20 s into the stop, holding the port.
    master = up.child("gunicorn")
    worker = master.children()[0]
    worker.send_signal(signal.SIGSTOP)
    up.proc.send_signal(signal.SIGINT)
    assert up.proc.wait(timeout=90) == 0, up.tail()
    try:
        assert worker.status() == psutil.STATUS_ZOMBIE  # killed, not reaped yet by its new parent
    except psutil.NoSuchProcess:
        pass
    assert _port_is_free(up.port)
