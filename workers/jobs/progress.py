"""The backend's progress callback: reports to the server at a bounded rate and stops the run
once the job was cancelled or taken over."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from devicelab.lab_protocol import Progress
from workers.failures import JobStopped
from workers.server_api import LabServer, ServerUnreachable, TokenRevoked

log = logging.getLogger("latencylab.workers")

# A progress report is one HTTP call; this bounds their rate, and so how late a cancel is seen.
PROGRESS_INTERVAL_SECONDS = 0.5


class ProgressReporter:
    """The backend's progress callback: reports to the server and stops the run when told.

    While ``kept_alive()`` it also reports the last progress again whenever the backend said
    nothing for a quarter of the job's lease (a model load, a long measurement): a running job
    silent for its whole lease is taken for lost and queued again by the server's sweep.
    """

    def __init__(self, server: LabServer, job_id: int, token: str, lease_seconds: float = 0.0) -> None:
        self.server = server
        self.job_id = job_id
        self.token = token
        self.lease_seconds = lease_seconds
        self.last = 0.0
        self.last_report = (0.0, "")
        self.stopped = False
        # set when a keep-alive report learned that the run must stop: the backend's next
        # progress call raises JobStopped
        self.stop_told = ""
        self._lock = threading.Lock()

    def __call__(self, fraction: float, message: str) -> None:
        if self.stop_told:
            self.stopped = True
            raise JobStopped(self.stop_told)
        now = time.monotonic()
        if fraction < 1.0 and now - self.last < PROGRESS_INTERVAL_SECONDS:
            return
        self._report(min(max(fraction, 0.0), 1.0), message[:200])

    def _report(self, fraction: float, message: str) -> None:
        with self._lock:
            self.last = time.monotonic()
            self.last_report = (fraction, message)
            try:
                go_on = self.server.progress(self.job_id, Progress(self.token, fraction, message))
            except ServerUnreachable as exc:
                # The measurement goes on: its result waits on the disk if the server is still away.
                log.warning("job %s: progress not reported (%s)", self.job_id, exc)
                return
            except TokenRevoked as exc:
                self.stopped = True
                raise JobStopped(f"job {self.job_id}: the server refused this machine's lab token: {exc}") from None
        if not go_on:
            self.stopped = True
            raise JobStopped(f"job {self.job_id} was cancelled or is no longer this run's")

    @contextmanager
    def kept_alive(self) -> Iterator[ProgressReporter]:
        """Report again, in a thread, whenever nothing was reported for a quarter of the lease."""
        if self.lease_seconds <= 0:  # a server that gives no lease
            yield self
            return
        stop = threading.Event()
        every = self.lease_seconds / 4

        def keep() -> None:
            while not stop.wait(min(every, 1.0)):
                if time.monotonic() - self.last < every:
                    continue
                try:
                    self._report(*self.last_report)
                except JobStopped as exc:
                    self.stop_told = str(exc)
                    return

        thread = threading.Thread(target=keep, name=f"job-{self.job_id}-alive", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join(timeout=30)
