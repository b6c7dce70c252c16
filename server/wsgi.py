"""WSGI entry point (``gunicorn server.wsgi``).

Each web worker loads it when it starts, a worker started again after one was killed included:
that is when the upload temporary files a killed worker left behind are removed.

Requests of the lab protocol (``/api/lab/``: lab machines posting JSON with a lab token, one call
per claim, progress report and result) go through a handler of their own that runs only the
middleware such a call needs (``LAB_MIDDLEWARE``: HTTPS redirects and security headers). Sessions,
CSRF, the log-in lockout, messages and the browser headers serve people in browsers; skipping
them takes about half a millisecond off every lab call.
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


class LabHandler(WSGIHandler):
    """Django's WSGI handler with ``LAB_MIDDLEWARE`` instead of ``settings.MIDDLEWARE``."""

    def load_middleware(self, is_async: bool = False) -> None:
        from django.conf import settings

        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = LAB_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everything


class RoutedApplication:
    """Sends lab protocol calls to ``lab``, everything else to ``site``."""

    def __init__(self, site: Callable[..., Iterable[bytes]], lab: Callable[..., Iterable[bytes]]) -> None:
        self.site, self.lab = site, lab

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").startswith(LAB_PREFIX):
            return self.lab(environ, start_response)
        return self.site(environ, start_response)


application = RoutedApplication(get_wsgi_application(), LabHandler())

from server.networks.tempfiles import remove_stale_upload_files  # noqa: E402 - needs Django set up

remove_stale_upload_files()
