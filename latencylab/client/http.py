"""The client's core: one server URL, an API token, a kept-alive session, and the requests that
turn a non-2xx answer into ``ClientError`` with the server's message."""

from __future__ import annotations

import os
import re
from typing import Any, Self

import requests

from latencylab.client.errors import ClientError, InputError

URL_ENV = "LATENCYLAB_URL"
TOKEN_ENV = "LATENCYLAB_TOKEN"


def _detail(resp: requests.Response) -> tuple[str, Any]:
    """The server's message in an error answer, as one line, and the decoded body."""
    try:
        body = resp.json()
    except ValueError:
        text = " ".join(resp.text.split())[:300]
        return text or resp.reason or "no message", resp.text
    if isinstance(body, dict):
        if isinstance(body.get("detail"), str):
            return body["detail"], body
        parts = []
        for key, value in body.items():
            msgs = value if isinstance(value, list) else [value]
            text = "; ".join(str(m) for m in msgs)
            parts.append(text if key == "non_field_errors" else f"{key}: {text}")
        return "; ".join(parts) or "no message", body
    if isinstance(body, list):
        return "; ".join(str(m) for m in body) or "no message", body
    return str(body), body


def _connection_reason(exc: Exception) -> str:
    """The useful end of a requests/urllib3 connection error ("[Errno 111] Connection refused")."""
    text = str(exc)
    found = re.search(r"\[Errno -?\d+\][^'\")]*", text)
    if found:
        return found.group(0).strip()
    if "Name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    return type(exc).__name__


class HttpClient:
    """One LatencyLab server and an API token (``Authorization: Token <key>``): the transport
    every domain of ``Client`` sends through."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 60.0) -> None:
        url = url or os.environ.get(URL_ENV)
        token = token or os.environ.get(TOKEN_ENV)
        if not url:
            raise InputError(f"no server URL: pass url= or set {URL_ENV}")
        if not token:
            raise InputError(f"no API token: pass token= or set {TOKEN_ENV} (latencylab user add prints one)")
        self.url = url.rstrip("/")
        if not re.match(r"^https?://", self.url):
            raise InputError(f"the server URL must start with http:// or https://, got {url!r}")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Token {token}", "Accept": "application/json"})

    def __repr__(self) -> str:
        return f"<Client {self.url}>"

    def close(self) -> None:
        """Close the kept-alive connections to the server."""
        self.session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport -------------------------------------------------------------------------------

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        """Send one request to ``/api/<path>`` (or to an absolute URL); the decoded JSON answer."""
        resp = self._send(method, path, **kwargs)
        if not resp.content:
            return None
        try:
            return resp.json()
        except ValueError:
            raise ClientError(resp.status_code, f"{method} {resp.url} answered something that is not JSON") from None

    def _send(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Send one request to ``/api/<path>`` (or to an absolute URL); the answer, read whole,
        or ``ClientError`` with the server's reason."""
        url = path if path.startswith(("http://", "https://")) else f"{self.url}/api/{path.lstrip('/')}"
        kwargs.setdefault("timeout", self.timeout)
        try:
            resp = self.session.request(method, url, **kwargs)
        except requests.Timeout:
            raise ClientError(None, f"{method} {url}: no answer within {kwargs['timeout']} s") from None
        except requests.ConnectionError as exc:
            raise ClientError(None, f"cannot connect to {url}: {_connection_reason(exc)}") from None
        if not 200 <= resp.status_code < 300:
            status, (detail, body) = resp.status_code, _detail(resp)
            # The raised error's traceback keeps this frame: without the response in it, the
            # connection's socket is really closed when the session is.
            resp.close()
            del resp
            raise ClientError(status, detail, body)
        return resp

    def _list(self, path: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``next``."""
        items: list[dict[str, Any]] = []
        page = self._request("GET", path, params={**(params or {}), "page_size": 500})
        while True:
            if isinstance(page, list):  # an unpaginated list
                return items + page
            items.extend(page["results"])
            if not page.get("next"):
                return items
            page = self._request("GET", page["next"])


__all__ = ["TOKEN_ENV", "URL_ENV", "HttpClient"]
