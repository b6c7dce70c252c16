"""The lab machine's HTTP client takes the environment's proxy and CA settings once, when it is
made, and never a ``~/.netrc`` login in place of its lab token."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from workers.server_api import LabServer


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers every GET with a Hello and notes the request line and Authorization header."""

    seen: list[tuple[str, str]] = []

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        type(self).seen.append((self.requestline, self.headers.get("Authorization", "")))
        body = b'{"machine": "box"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, str]]]]:
    """A loopback HTTP server; its URL and what it saw."""
    handler = type("Recorder", (_Recorder,), {"seen": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.seen
    server.shutdown()
    server.server_close()


def test_a_netrc_login_for_the_server_does_not_replace_the_lab_token(
    recorder: tuple[str, list[tuple[str, str]]], tmp_path: Path, monkeypatch: Any
) -> None:
    url, seen = recorder
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login admin password secret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert LabServer(url, "lab_abc").hello().machine == "box"
    assert seen == [("GET /api/lab/hello HTTP/1.1", "Lab lab_abc")]


def test_the_proxy_of_the_environment_is_used_unless_no_proxy_names_the_server(
    recorder: tuple[str, list[tuple[str, str]]], monkeypatch: Any
) -> None:
    proxy, seen = recorder  # the recorder plays a forward proxy: it sees the absolute URL
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    assert LabServer("http://lab.example.org:8000", "lab_abc").hello().machine == "box"
    assert seen == [("GET http://lab.example.org:8000/api/lab/hello HTTP/1.1", "Lab lab_abc")]

    monkeypatch.setenv("NO_PROXY", "lab.example.org")
    assert LabServer("http://lab.example.org:8000", "lab_abc").session.proxies == {}


def test_the_ca_bundle_of_the_environment_is_used(monkeypatch: Any, tmp_path: Path) -> None:
    bundle = tmp_path / "lab-ca.pem"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(bundle))
    assert LabServer("https://lab.example.org", "lab_abc").session.verify == str(bundle)
