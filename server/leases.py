"""Leases on rows of long work (a predictor's training, a selection simulation, a model's parse):
the process doing the work renews the row's lease from a thread of its own while it works (the
work holds the main thread for minutes without a word); when the process dies, the lease lapses,
and the trainers' sweeper queues the work again or fails it (``sweep_lapsed``, run by
``server.trainer``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection
from django.db.models import Q, QuerySet

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


def lease_lapsed(working: QuerySet[Any], now: datetime) -> QuerySet[Any]:
    """The rows of ``working`` whose lease ran out, or which hold none (rows claimed before
    leases) and started longer ago than the task time limit."""
    limit = timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT)
    return working.filter(Q(lease_until__lt=now) | Q(lease_until__isnull=True, started_at__lt=now - limit))


def sweep_lapsed(
    lapsed: QuerySet[Any],
    *,
    held_by: str,
    attempts: str,
    max_attempts: int,
    lost: str,
    requeued: Callable[[str], dict[str, Any]],
    failed: Callable[[str], dict[str, Any]],
    dispatch: Callable[[int], object],
    on_failed: Callable[[int], object] | None = None,
) -> list[int]:
    """Rows of ``lapsed`` (work whose lease ran out: its process was killed, ran out of memory or
    restarted) go back to the queue with the fields ``requeued(why)`` gives and their work is sent
    again, or, once ``max_attempts`` attempts were made, fail with the fields ``failed(why)``
    gives. ``attempts``: the field counting them; ``held_by``: the field naming the attempt, whose
    value must be unchanged for the conditional update to apply (so two sweepers do the work once,
    and a renewal in the meantime keeps the row). ``lost``: what stopped, in words ("the trainer
    stopped while training"). ``on_failed``: called with the id of each row failed. Returns the
    ids swept."""
    swept = []
    for row in lapsed.only("pk", attempts, held_by):
        held = lapsed.filter(pk=row.pk, **{held_by: getattr(row, held_by)})
        made = getattr(row, attempts)
        why = f"attempt {made} lost: {lost} (killed, out of memory or restarted)"
        if made >= max_attempts:
            done = held.update(
                **failed(f"{why}; it was attempted {made} times (limit {max_attempts}), so it is not retried")
            )
            if done and on_failed is not None:
                on_failed(row.pk)
        else:
            done = held.update(**requeued(f"{why}; queued again"))
            if done:
                dispatch(row.pk)
        if done:
            swept.append(row.pk)
    if swept:
        log.warning("%s %s: lost, queued again or failed", lapsed.model._meta.verbose_name_plural, swept)
    return swept


__all__ = ["LeaseKeeper", "lease_lapsed", "sweep_lapsed"]
