"""The lab machine's model files, fetched from the server by SHA-256 and kept on its disk by hash.

A file is fetched once per hash and checked as it arrives; a file that arrives with other bytes
(corrupted on the way) is fetched again once, and a second mismatch fails the job saying so. The
folder is kept under a size bound: the files used longest ago go first.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from devicelab.backends.base import BackendError
from devicelab.lab_protocol import ModelRef
from workers.server_api import ChecksumMismatch, LabServer

log = logging.getLogger("latencylab.workers")

# A model fetched with other bytes than its hash is fetched this many times before the job fails.
FETCH_ATTEMPTS = 2


class ModelCache:
    """Model files by hash in one folder, at most ``max_bytes`` of them."""

    def __init__(self, folder: Path, max_bytes: int) -> None:
        self.folder = folder
        self.max_bytes = max_bytes

    def path_of(self, ref: ModelRef) -> Path:
        """Where the file of ``ref`` is kept."""
        return self.folder / ref.sha256

    def fetch(self, ref: ModelRef, server: LabServer) -> bytes:
        """The file's bytes, from the cache or the server; ``BackendError`` when it keeps arriving
        corrupted (the job fails with that reason)."""
        path = self.path_of(ref)
        if path.is_file() and path.stat().st_size == ref.size:
            os.utime(path)  # used now: the last to be evicted
            return path.read_bytes()
        for attempt in range(1, FETCH_ATTEMPTS + 1):
            try:
                server.download(ref, path)
                break
            except ChecksumMismatch as exc:
                log.warning("model file %s: %s (attempt %d of %d)", ref.sha256[:12], exc, attempt, FETCH_ATTEMPTS)
                if attempt == FETCH_ATTEMPTS:
                    raise BackendError(
                        f"{exc}: the download was corrupted {FETCH_ATTEMPTS} times in a row; "
                        "check the network between this lab machine and the server"
                    ) from None
        self.evict(keep=path)
        return path.read_bytes()

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Remove the files used longest ago until the folder is within its bound; returns them."""
        files = [p for p in self.folder.glob("*") if p.is_file() and not p.name.startswith(".")]
        total = sum(p.stat().st_size for p in files)
        removed = []
        for p in sorted(files, key=lambda f: f.stat().st_mtime):
            if total <= self.max_bytes:
                break
            if p == keep:
                continue
            total -= p.stat().st_size
            p.unlink(missing_ok=True)
            removed.append(p)
        if removed:
            log.info(
                "model cache: removed %d file(s) used longest ago to stay within %d bytes", len(removed), self.max_bytes
            )
        return removed


__all__ = ["FETCH_ATTEMPTS", "ModelCache"]
