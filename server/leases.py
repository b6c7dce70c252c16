"""Leases on rows of long work (a predictor's training, a selection simulation): the process doing
the work renews the row's lease from a thread of its own while it works (the work holds the main
thread for minutes without a word); when the process dies, the lease lapses, and the trainers'
sweeper queues the work again or fails it (``server.trainer``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import DatabaseError, connection

log = logging.getLogger(__name__)


class LeaseKeeper:
    """Calls ``renew`` every ``every`` seconds while the ``with`` block runs; stops early when
    ``renew`` answers False (the work is over, or was taken back)."""

    def __init__(self, renew: Callable[[], bool], every: float, what: str) -> None:
        self.renew, self.every, self.what = renew, every, what
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep, name=f"lease of {what}", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _keep(self) -> None:
        try:
            while not self._stop.wait(self.every):
                try:
                    if not self.renew():
                        return
                except DatabaseError:  # a dropped connection: the next renewal opens another
                    log.warning("%s: its lease was not renewed this time", self.what, exc_info=True)
                    connection.close()
        finally:
            connection.close()  # this thread's own connection


__all__ = ["LeaseKeeper"]
