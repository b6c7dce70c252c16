"""Dropping a message whose job is not this device's to run any more, before it costs a process.

A device process runs each job in a fresh pool process (``--max-tasks-per-child 1``), so every
message it hands to the pool costs a process start, seconds on a loaded machine. Copies of a
message are normal (a resend of a message that seemed lost, a re-queue's, a redelivery), and
most find the job taken, moved or ended. The consumer asks first, in its own process: is the
job's result already waiting in this machine's outbox (the message is a copy), and would the
server's claim take it (``Claim.peek``, one request)? A message the answer rules out is
acknowledged and dropped there, in milliseconds; any other answer, or no answer, lets the pool
process claim as always (the claim is the authority: the peek only saves work).
"""

from __future__ import annotations

import logging
import os

from celery.worker.request import Request
from celery.worker.state import task_ready

from devicelab.lab_protocol import Claim
from workers.context import WorkerContext
from workers.lab_settings import LabSettings
from workers.outbox import Outbox
from workers.server_api import LabServer, Refused, ServerUnreachable, TokenRevoked

log = logging.getLogger("latencylab.workers")

# The peek runs on the consumer's event loop: an unanswered one must not hold it long.
PEEK_TIMEOUT_S = 3.0
# Claim answers that mean the job is not this device's to run now.
_NOT_TO_RUN = frozenset({"missing", "elsewhere", "not-queued"})


class _Peeker:
    """The consumer process's own session with the server (never the pool processes': they are
    forked from this process and must not share its connection)."""

    def __init__(self) -> None:
        settings = LabSettings.from_env()
        self.server = LabServer(settings.server_url, settings.token, timeout=PEEK_TIMEOUT_S)
        self.outbox = Outbox(settings.outbox_dir)
        self.pid = os.getpid()

    def why_not_run(self, job_id: int) -> str | None:
        """Why the message of ``job_id`` is not worth a process, or None when it is (or the
        server gave no usable answer)."""
        if self.outbox.holds(job_id):
            return "its result waits in the outbox"
        ctx = WorkerContext.from_env()
        if len(ctx.devices) != 1:
            return None
        (device_pk,) = ctx.devices
        try:
            answer = self.server.claim(job_id, Claim(ctx.token, device_pk, peek=True))
        except Refused as exc:
            return str(exc) if exc.status == 403 else None
        except (ServerUnreachable, TokenRevoked, ValueError, KeyError, TypeError):
            return None  # the pool process's claim decides, with its retries
        return answer.message or answer.outcome if answer.outcome in _NOT_TO_RUN else None


_peeker: _Peeker | None = None


def _the_peeker() -> _Peeker:
    global _peeker
    if _peeker is None or _peeker.pid != os.getpid():
        _peeker = _Peeker()
    return _peeker


class PeekingRequest(Request):  # type: ignore[misc]  # Celery ships no types
    """A task request that is dropped in the consumer when its job is not this device's to run.

    Celery asks ``revoked()`` of every request before it hands it to the pool; a request that
    answers True is skipped with its slot released. Here a stale one is also acknowledged and
    marked done, as a revoked one is, without a revocation of its id (a later message of the same
    job, a re-queue's, must still run).
    """

    _dropped = False

    def revoked(self) -> bool:
        if super().revoked():
            return True
        if self._dropped:
            return True
        try:
            job_id = int(self.args[0]) if self.args else int(self.kwargs["job_id"])
            why = _the_peeker().why_not_run(job_id)
        except Exception:  # noqa: BLE001 - the peek only saves work; the pool process decides
            log.debug("peek failed", exc_info=True)
            return False
        if why is None:
            return False
        log.info("job %s: message dropped before a process was spent on it (%s)", job_id, why)
        self._dropped = True
        task_ready(self)
        self.acknowledge()
        return True


__all__ = ["PEEK_TIMEOUT_S", "PeekingRequest"]
