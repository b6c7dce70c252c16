"""WSGI entry point (``gunicorn server.wsgi``).

Each web worker loads it when it starts, a worker started again after one was killed included:
that is when the upload temporary files a killed worker left behind are removed.

Requests of the lab protocol (``/api/lab/``: lab machines posting JSON with a lab token, one call
per claim, progress report and result) go through a handler of their own that runs only the
middleware such a call needs (``LAB_MIDDLEWARE``: HTTPS redirects and security headers). Sessions,
CSRF, the log-in lockout, messages and the browser headers serve people in browsers; skipping
them takes about half a millisecond off every lab call. API calls that carry an API token
(``Authorization: Token ...``: scripts, NAS loops, the client library; a browser never sends one)
go through a handler of the same kind with ``TOKEN_MIDDLEWARE``, which adds Django's common
middleware (the redirect of a path without its trailing slash).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from django.core.handlers.wsgi import WSGIHandler
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

LAB_PREFIX = "/api/lab/"
LAB_MIDDLEWARE = ["django.middleware.security.SecurityMiddleware"]
API_PREFIX = "/api/"
TOKEN_SCHEME = "token "  # server.accounts.authentication.ApiTokenAuthentication's keyword
TOKEN_MIDDLEWARE = [*LAB_MIDDLEWARE, "django.middleware.common.CommonMiddleware"]


class LeanHandler(WSGIHandler):
    """Django's WSGI handler with ``middleware`` instead of ``settings.MIDDLEWARE``."""

    def __init__(self, middleware: list[str]) -> None:
        self.middleware = middleware
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        from django.conf import settings

        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = self.middleware
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everything


class RoutedApplication:
    """Sends lab protocol calls to ``lab``, API calls with an API token to ``token``, everything
    else to ``site``."""

    def __init__(
        self,
        site: Callable[..., Iterable[bytes]],
        lab: Callable[..., Iterable[bytes]],
        token: Callable[..., Iterable[bytes]],
    ) -> None:
        self.site, self.lab, self.token = site, lab, token

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith(LAB_PREFIX):
            return self.lab(environ, start_response)
        if path.startswith(API_PREFIX) and environ.get("HTTP_AUTHORIZATION", "")[:6].lower() == TOKEN_SCHEME:
            return self.token(environ, start_response)
        return self.site(environ, start_response)


application = RoutedApplication(get_wsgi_application(), LeanHandler(LAB_MIDDLEWARE), LeanHandler(TOKEN_MIDDLEWARE))

from server.networks.tempfiles import remove_stale_upload_files  # noqa: E402 - needs Django set up

remove_stale_upload_files()
