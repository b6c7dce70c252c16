"""Handles on the server's jobs (profiling, fusion, sharing, remote runs): ``refresh()``,
``wait()`` for the result, ``cancel()``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from latencylab.client.errors import InputError, JobFailed, WaitTimeout

if TYPE_CHECKING:
    from latencylab.client.http import HttpClient

FINISHED = ("succeeded", "failed", "cancelled")


class JobHandle:
    """A profiling job on the server: ``refresh()`` it, ``wait()`` for its result, or ``cancel()`` it."""

    resource = "jobs"  # where refresh() reads it: /api/<resource>/<id>/

    def __init__(self, client: HttpClient, data: dict[str, Any]) -> None:
        self.client = client
        self.data = data

    def __repr__(self) -> str:
        return f"<JobHandle #{self.id} {self.state} {self.progress:.0%}>"

    @property
    def id(self) -> int:
        """The job's id."""
        return int(self.data["id"])

    @property
    def state(self) -> str:
        """queued, running, succeeded, failed or cancelled (as of the last refresh)."""
        return str(self.data["state"])

    @property
    def progress(self) -> float:
        """Fraction done, 0..1 (as of the last refresh)."""
        return float(self.data.get("progress") or 0.0)

    @property
    def progress_message(self) -> str:
        """What the worker is doing ("warm-up 3/5", ...)."""
        return str(self.data.get("progress_message") or "")

    @property
    def failure_reason(self) -> str:
        """Why the job failed ("" unless it did)."""
        return str(self.data.get("failure_reason") or "")

    @property
    def finished(self) -> bool:
        """Whether the job reached a final state."""
        return self.state in FINISHED

    @property
    def result(self) -> dict[str, Any] | None:
        """The result once the job succeeded, else None."""
        result = self.data.get("result")
        return result if isinstance(result, dict) else None

    def refresh(self) -> JobHandle:
        """Read the job's current state from the server."""
        self.data = self.client._request("GET", f"{self.resource}/{self.id}/")
        return self

    def cancel(self) -> JobHandle:
        """Cancel the job if it is still queued or running (409 from the server when it already finished)."""
        self.client._request("POST", f"jobs/{self.id}/cancel/")
        return self.refresh()

    def wait(
        self,
        timeout: float | None = None,
        poll: float = 0.5,
        on_progress: Callable[[float], Any] | None = None,
    ) -> dict[str, Any]:
        """Poll until the job finished; return its result (end-to-end stats, per-operator rows).

        ``on_progress(fraction)`` is called each time the job's progress grew, and with 1.0 at the end.
        Raises ``JobFailed`` (with the server's failure reason) when the job failed or was cancelled,
        and ``WaitTimeout`` after ``timeout`` seconds (the job keeps running on the server).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        reported = -1.0
        while True:
            if on_progress is not None and self.progress > reported and self.state != "queued":
                reported = self.progress
                on_progress(reported)
            if self.state == "succeeded":
                if self.result is None:  # a list entry, or a body from before the result was stored
                    self.refresh()
                if on_progress is not None and reported < 1.0:
                    on_progress(1.0)
                assert self.result is not None, f"job #{self.id} succeeded without a result"
                return self.result
            if self.state == "failed":
                raise JobFailed(f"job #{self.id} failed: {self.failure_reason or 'no reason given'}", self.data)
            if self.state == "cancelled":
                raise JobFailed(f"job #{self.id} was cancelled", self.data)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"job #{self.id} is still {self.state} ({self.progress:.0%}) after {timeout:g} s; it keeps "
                    "running on the server (wait again, or cancel it)",
                    self.data,
                )
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))
            self.refresh()


class FusionHandle(JobHandle):
    """A fusion sweep or plan on the server (a job of kind ``fusion_sweep`` / ``fusion_plan``):
    ``wait()`` returns a sweep's result summary (with ``row_counts``) or a plan's comparison;
    ``cancel()`` cancels the job."""

    def __init__(self, client: HttpClient, data: dict[str, Any]) -> None:
        super().__init__(client, data)
        self.resource = "fusion/plans" if data.get("kind") == "fusion_plan" else "fusion/sweeps"

    @property
    def kind(self) -> str:
        """fusion_sweep or fusion_plan."""
        return str(self.data.get("kind") or "")


class SharingHandle(JobHandle):
    """A sharing sweep on the server (a job of kind ``sharing_sweep``): ``wait()`` returns its
    result summary (workloads, ceiling, table 1, the largest R, notes, ``complete``,
    ``not_measured``, ``row_counts``); ``cancel()`` cancels the job."""

    resource = "sharing/sweeps"


class RemoteHandle(JobHandle):
    """A remote run on the server (a job of kind ``remote_scenario``): ``wait()`` returns what it
    measured (``profiles``: per network profile the upload, server, compute, download and
    end-to-end medians and p90 in ms, the server's stages, the network's share; ``data``: every
    request); ``cancel()`` cancels the job."""

    resource = "remote/runs"


def job_id(job: int | JobHandle) -> int:
    """The id of a job given as an id or a handle."""
    if isinstance(job, JobHandle):
        return job.id
    if isinstance(job, bool) or not isinstance(job, int):
        raise InputError(f"a job is an id (an integer) or a handle, not {job!r}")
    return job


__all__ = ["FINISHED", "FusionHandle", "JobHandle", "RemoteHandle", "SharingHandle", "job_id"]
