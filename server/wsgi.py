"""WSGI entry point (``gunicorn server.wsgi``).

Each web worker loads it when it starts, a worker started again after one was killed included:
that is when the upload temporary files a killed worker left behind are removed.
"""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

application = get_wsgi_application()

from server.networks.tempfiles import remove_stale_upload_files  # noqa: E402 - needs Django set up

remove_stale_upload_files()
