"""Upload temporary files that a killed web worker left behind.

Django spools an upload bigger than ``FILE_UPLOAD_MAX_MEMORY_SIZE`` to ``FILE_UPLOAD_TEMP_DIR``
(``var/tmp``) and deletes the file when the request ends, but a worker killed mid-request
(gunicorn's timeout, the OOM killer, ``kill -9``) never gets there: its file stays, up to
``LATENCYLAB_MAX_UPLOAD_BYTES`` each. The web process removes the stale ones when it starts
(``server/wsgi.py``); "stale" is older than any request can live, so a file that another worker
is still writing is never touched.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from django.conf import settings

log = logging.getLogger(__name__)

STALE_AFTER_SECONDS = 3600
# Django's TemporaryUploadedFile names: tempfile's random name with suffix ".upload" + extension.
_UPLOAD_MARK = ".upload"


def remove_stale_upload_files(max_age_seconds: float = STALE_AFTER_SECONDS, now: float | None = None) -> list[Path]:
    """Delete upload temporary files older than ``max_age_seconds`` in ``FILE_UPLOAD_TEMP_DIR``;
    returns the paths removed (other files in the folder are left alone)."""
    folder = getattr(settings, "FILE_UPLOAD_TEMP_DIR", None)
    if not folder:
        return []
    cutoff = (time.time() if now is None else now) - max_age_seconds
    removed: list[Path] = []
    freed = 0
    try:
        entries = list(Path(folder).iterdir())
    except FileNotFoundError:
        return []
    for path in entries:
        if _UPLOAD_MARK not in path.name:
            continue
        try:
            stat = path.stat()
            if not path.is_file() or stat.st_mtime >= cutoff:
                continue
            path.unlink()
        except FileNotFoundError:  # another worker starting at the same time removed it
            continue
        except OSError as exc:
            log.warning("could not remove the stale upload file %s: %s", path, exc)
            continue
        removed.append(path)
        freed += stat.st_size
    if removed:
        log.warning(
            "removed %d upload temporary file(s) (%d bytes) older than %.0f s, left by a killed web worker",
            len(removed),
            freed,
            max_age_seconds,
        )
    return removed
