"""The web server's WSGI application sends lab protocol calls (``/api/lab/``) and API calls with
an API token through handlers with only the middleware they need, and everything else through the
full stack: such a call carries no browser headers (CSP, frame options) and still the security
ones."""

from __future__ import annotations

import io
import json
from typing import Any
from wsgiref.util import setup_testing_defaults

import pytest

pytestmark = pytest.mark.django_db(transaction=True)  # a request closes its connection at its end


def _call(path: str, token: str = "", scheme: str = "Lab") -> tuple[str, dict[str, str], bytes]:
    from server.wsgi import application

    environ: dict[str, Any] = {"PATH_INFO": path, "REQUEST_METHOD": "GET", "wsgi.input": io.BytesIO(b"")}
    setup_testing_defaults(environ)
    environ["HTTP_HOST"] = "localhost"
    if token:
        environ["HTTP_AUTHORIZATION"] = f"{scheme} {token}"
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


def test_an_api_call_with_a_token_skips_the_browser_middleware_and_is_answered(settings: Any) -> None:
    from server.accounts.services import create_user_with_token

    settings.ALLOWED_HOSTS = ["localhost"]
    _, key = create_user_with_token("route-user", "route-team")
    status, headers, body = _call("/api/models/", key, scheme="Token")
    assert status.startswith("200"), body
    assert json.loads(body)["count"] == 0
    assert headers.get("X-Content-Type-Options") == "nosniff"  # SecurityMiddleware
    assert "Content-Security-Policy" not in headers and "X-Frame-Options" not in headers
    assert "Set-Cookie" not in headers and "Cookie" not in headers.get("Vary", "")  # no session

    status, _, _ = _call("/api/models/", "not-a-key", scheme="Token")
    assert status.startswith("401")  # a bad token is refused as before

    status, headers, _ = _call("/api/models", key, scheme="Token")  # CommonMiddleware: the slash
    assert status.startswith("301") and headers["Location"].endswith("/api/models/")

    status, headers, _ = _call("/api/models/")  # no token: the whole stack (a browser's session)
    assert status.startswith(("401", "403")) and "X-Frame-Options" in headers
