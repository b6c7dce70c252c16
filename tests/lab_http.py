"""The lab API in this test process: a ``requests`` transport that hands each request to Django's
own WSGI handling (``django.test.Client``: routing, authentication, views, the test's database
transaction), so in-process tests of the lab side run the real server code without a socket.
End-to-end tests use real HTTP to a real server process instead."""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

TEST_SERVER_URL = "http://testserver"


class DjangoTestAdapter(BaseAdapter):
    """Sends a ``requests`` request through ``django.test.Client``."""

    def __init__(self) -> None:
        super().__init__()
        from django.test import Client

        self.client = Client()
        # a hook for fault tests: called with the prepared request before it is sent
        self.before: Any = None

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        """Answer ``request`` from the Django app."""
        if self.before is not None:
            self.before(request)
        url = urlsplit(request.url or "")
        path = url.path + (f"?{url.query}" if url.query else "")
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("content-length", "content-type")}
        body = request.body or b""
        answer = self.client.generic(
            request.method or "GET",
            path,
            data=body.encode() if isinstance(body, str) else body,
            content_type=request.headers.get("Content-Type", "application/octet-stream"),
            headers=headers,
        )
        if threading.current_thread() is not threading.main_thread():
            # a lab machine's thread (a job's keep-alive): its Django connection ends with the call,
            # or it would outlive the thread and hold the test database open
            from django.db import connection

            connection.close()
        resp = requests.Response()
        resp.status_code = answer.status_code
        resp.reason = answer.reason_phrase
        resp.headers = CaseInsensitiveDict(dict(answer.headers.items()))
        resp._content = b"".join(answer.streaming_content) if answer.streaming else answer.content  # type: ignore[attr-defined]
        resp._content_consumed = True  # type: ignore[attr-defined]
        resp.url = request.url or ""
        resp.request = request
        resp.encoding = "utf-8"
        return resp

    def close(self) -> None:
        """Nothing to close."""


def in_process_session() -> tuple[requests.Session, DjangoTestAdapter]:
    """A session whose requests to ``TEST_SERVER_URL`` go to this process's Django app."""
    session = requests.Session()
    adapter = DjangoTestAdapter()
    session.mount(TEST_SERVER_URL, adapter)
    return session, adapter
