"""The backend's progress callback: reports to the job row at a bounded rate and stops the run
once the job was cancelled or taken over."""

from __future__ import annotations

import time

from workers.failures import JobStopped

# A progress report is one UPDATE; this bounds their rate, and so how late a cancel is seen.
PROGRESS_INTERVAL_SECONDS = 0.5


class ProgressReporter:
    """The backend's progress callback: reports to the job row and stops the run when told."""

    def __init__(self, job_id: int, token: str) -> None:
        self.job_id = job_id
        self.token = token
        self.last = 0.0
        self.stopped = False

    def __call__(self, fraction: float, message: str) -> None:
        from server.profiling.services import report_progress

        now = time.monotonic()
        if fraction < 1.0 and now - self.last < PROGRESS_INTERVAL_SECONDS:
            return
        self.last = now
        if not report_progress(self.job_id, self.token, fraction, message):
            self.stopped = True
            raise JobStopped(f"job {self.job_id} was cancelled or is no longer this run's")
