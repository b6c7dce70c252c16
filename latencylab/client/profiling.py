"""Profiling jobs: queue one, follow it, read its result."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import ClientError, InputError
from latencylab.client.handles import JobHandle
from latencylab.client.models import ModelsMixin

if TYPE_CHECKING:
    from devicelab.graph import Graph


class ProfilingMixin(ModelsMixin, DevicesMixin):
    """``Client``'s profiling calls."""

    def profile(
        self,
        model: int | str | os.PathLike[str] | bytes | Graph | dict[str, Any],
        device: int | str | dict[str, Any],
        settings: dict[str, Any] | None = None,
    ) -> JobHandle:
        """Queue a profiling job of ``model`` (an id, or anything ``upload`` takes) on ``device`` (id or
        name) with ``settings`` (runs, warmup_runs, threads, cores, backend, precision; for phones also
        delegate, cooldown_c and cooldown_max_s, and cores may name a core cluster such as "big")."""
        if isinstance(model, bool):
            raise InputError(f"a model is an id, a file path, bytes or a Graph, not {model!r}")
        model_id = model if isinstance(model, int) else self.upload(model)
        body = {"model": model_id, "device": self._device_id(device), "settings": dict(settings or {})}
        return JobHandle(self, self._request("POST", "jobs/", json=body))

    def job(self, job: int | JobHandle) -> JobHandle:
        """A handle on an existing job."""
        return JobHandle(self, self._request("GET", f"jobs/{int(job.id if isinstance(job, JobHandle) else job)}/"))

    def results(self, job: int | JobHandle) -> dict[str, Any]:
        """A finished job's result: ``e2e`` statistics (ms), ``cold`` start, ``samples_ms``, ``operators``
        (one row per operator: name, op_type, kernel, mean/median/std ms, fused_into), ``flags`` (hot,
        throttled), ``peak_memory_mb`` and the environment. Where the runtime reports aggregates only
        (a phone's), ``e2e`` has no median or p90 (None) and ``samples_ms`` is empty: use the mean."""
        handle = self.job(job)
        if handle.state != "succeeded" or handle.result is None:
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"job #{handle.id} is {handle.state}{reason}; it has no result", handle.data)
        return handle.result


__all__ = ["ProfilingMixin"]
