"""The backend's progress callback: reports to the server at a bounded rate and stops the run
once the job was cancelled or taken over."""

from __future__ import annotations

import logging
import time

from devicelab.lab_protocol import Progress
from workers.failures import JobStopped
from workers.server_api import LabServer, ServerUnreachable, TokenRevoked

log = logging.getLogger("latencylab.workers")

# A progress report is one HTTP call; this bounds their rate, and so how late a cancel is seen.
PROGRESS_INTERVAL_SECONDS = 0.5


class ProgressReporter:
    """The backend's progress callback: reports to the server and stops the run when told."""

    def __init__(self, server: LabServer, job_id: int, token: str) -> None:
        self.server = server
        self.job_id = job_id
        self.token = token
        self.last = 0.0
        self.stopped = False

    def __call__(self, fraction: float, message: str) -> None:
        now = time.monotonic()
        if fraction < 1.0 and now - self.last < PROGRESS_INTERVAL_SECONDS:
            return
        self.last = now
        try:
            go_on = self.server.progress(self.job_id, Progress(self.token, min(max(fraction, 0.0), 1.0), message[:200]))
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
