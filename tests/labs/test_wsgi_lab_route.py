"""The web server's WSGI application sends lab protocol calls (``/api/lab/``) through a handler
with only the middleware they need, and everything else through the full stack: a lab call
carries no browser headers (CSP, frame options) and still the security ones."""

from __future__ import annotations

import io
import json
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest

pytestmark = pytest.mark.django_db(transaction=True)  # a request closes its connection at its end


def _call(path: str, token: str = "") -> tuple[str, dict[str, str], bytes]:
    from server.wsgi import application

    environ: dict[str, Any] = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO(b"")}
    setup_testing_defaults(environ)
    environ["HTTP_HOST"] = "localhost"
    if token:
        environ["HTTP_AUTHORIZATION"] = f"Lab {token}"
    answer: dict[str, Any] = {}

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        answer["status"], answer["headers"] = status, dict(headers)

    body = b"".join(application(environ, start_response))
    return answer["status"], answer["headers"], body


def test_a_lab_call_skips_the_browser_middleware_and_is_answered(add_lab: Any, settings: Any) -> None:
    settings.ALLOWED_HOSTS = ["localhost"]
    lab, token = add_lab("route-box")
    status, headers, body = _call("/api/lab/hello", token)
    assert status.startswith("200"), body
    assert json.loads(body)["machine"] == "route-box"
    assert headers.get("X-Content-Type-Options") == "nosniff"  # SecurityMiddleware
    assert "Content-Security-Policy" not in headers and "X-Frame-Options" not in headers
    assert "Set-Cookie" not in headers

    status, headers, _ = _call("/api/lab/hello")
    assert status.startswith("401")

    status, headers, _ = _call("/api/health/")
    assert "X-Frame-Options" in headers  # the rest of the site: the whole stack
