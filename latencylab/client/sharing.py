"""Sharing sweeps: R tenants on one OpenCL device under each strategy, and their rows; online
scheduling runs: one arrival trace replayed under each policy."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import ClientError, InputError
from latencylab.client.handles import JobHandle, SharingHandle, job_id

_SHAPE = re.compile(r"^\s*([0-9]+)\s*x\s*([0-9]+)\s*x\s*([0-9]+)\s*$")


def _sharing_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """A sharing spec as the API takes it: shapes given as ``"MxNxK"`` become ``[m, n, k]``."""
    if not isinstance(spec, dict):
        raise InputError(f"spec= takes a dict of SharingSpec keys, not {spec!r}")
    out = dict(spec)
    shapes = out.get("shapes")
    if isinstance(shapes, str):
        raise InputError(f"spec['shapes'] takes a list of shapes, not the string {shapes!r}; wrap it in [...]")
    if isinstance(shapes, list | tuple):
        normalized: list[Any] = []
        for shape in shapes:
            if isinstance(shape, str):
                match = _SHAPE.match(shape)
                if match is None:
                    raise InputError(f"a shape is MxNxK (256x128x1152) or [m, n, k], not {shape!r}")
                normalized.append([int(v) for v in match.groups()])
            else:
                normalized.append(list(shape) if isinstance(shape, tuple) else shape)
        out["shapes"] = normalized
    return out


class OnlineHandle(JobHandle):
    """An online-scheduling run on the server (a job of kind ``online_schedule``): ``wait()``
    returns its result (t1_ms, target_ms, window_ms, offered_per_s, ``comparison`` per policy);
    ``cancel()`` cancels the job."""

    resource = "sharing/online"


class SharingMixin(DevicesMixin):
    """``Client``'s sharing calls."""

    def sharing_sweep(
        self,
        device: int | str | dict[str, Any],
        *,
        spec: dict[str, Any] | None = None,
        time_budget_s: float | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> SharingHandle:
        """Queue a sharing sweep on an OpenCL ``device`` (id or name): R tenants sharing it
        exclusively, time-only, space-only and space-time. ``spec`` holds ``SharingSpec``'s keys
        (shapes as ``[m, n, k]`` or ``"256x128x1152"``, networks, tenants, strategies, warmup, runs,
        seed, memory_cap_bytes, ceiling; the rest take their defaults: the paper's three shapes, R
        from 1 to 120, every strategy but CLBlast's). ``time_budget_s``: stop measuring after this
        long and keep what was measured (default and most: the server's task limit less 300 s).

        With ``wait=True`` this returns once the sweep succeeded (``handle.result`` is its summary)
        and raises ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        body: dict[str, Any] = {"device": self._device_id(device)}
        if spec is not None:
            body["spec"] = _sharing_spec(spec)
        if time_budget_s is not None:
            body["time_budget_s"] = time_budget_s
        handle = SharingHandle(self, self._request("POST", "sharing/sweeps/", json=body))
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def sharing_sweeps(self) -> list[dict[str, Any]]:
        """Your team's sharing sweeps, newest first (state, progress, device, settings)."""
        return self._list("sharing/sweeps/")

    def sharing_sweep_status(self, sweep: int | SharingHandle) -> SharingHandle:
        """A sweep as it is now: state, progress, and once it succeeded ``result`` (device, spec,
        workloads, ceiling, table1, largest_tenants, notes, complete, not_measured, elapsed_s,
        ``row_counts``)."""
        return SharingHandle(self, self._request("GET", f"sharing/sweeps/{job_id(sweep)}/"))

    def sharing_rows(
        self,
        sweep: int | SharingHandle,
        *,
        workload: str | None = None,
        strategy: str | None = None,
        tenants: int | None = None,
        status: str | None = None,
        detail: bool = False,
    ) -> list[dict[str, Any]]:
        """A succeeded sweep's rows (every page) in the order they were measured, filtered by
        ``workload`` (``"256x128x1152"`` or a network's name), ``strategy``, ``tenants`` (R) and
        ``status`` (ok, memory_bound, unsupported, error). Each row: throughput_gflops,
        throughput_per_s, latency_p50_ms, latency_p99_ms, straggler_gap_ms and its ratio,
        memory_bytes, correct, error; ``detail=True`` adds the whole row (samples) as ``data``."""
        handle = self.sharing_sweep_status(sweep)
        if handle.state != "succeeded":
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"sweep #{handle.id} is {handle.state}{reason}; it has no rows", handle.data)
        params: dict[str, Any] = {}
        for key, value in (("workload", workload), ("strategy", strategy), ("tenants", tenants), ("status", status)):
            if value is not None:
                params[key] = value
        if detail:
            params["detail"] = "true"
        return self._list(f"sharing/sweeps/{handle.id}/rows/", params)

    def online_run(
        self,
        device: int | str | dict[str, Any],
        *,
        spec: dict[str, Any] | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> OnlineHandle:
        """Queue an online-scheduling run on an OpenCL ``device``: one seeded trace of R tenants
        replayed under every policy. ``spec`` holds ``OnlineSpec``'s keys (workload, tenants, load,
        duration_s, target_factor, window_factor, policies, seed). ``wait=True`` returns once it
        succeeded (``handle.result``), raising ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        body: dict[str, Any] = {"device": self._device_id(device)}
        if spec is not None:
            if not isinstance(spec, dict):
                raise InputError(f"spec= takes a dict of OnlineSpec keys, not {spec!r}")
            body["spec"] = dict(spec)
        handle = OnlineHandle(self, self._request("POST", "sharing/online/", json=body))
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def online_run_status(self, run: int | OnlineHandle) -> OnlineHandle:
        """A run as it is now: state, progress, and once it succeeded ``result``."""
        return OnlineHandle(self, self._request("GET", f"sharing/online/{job_id(run)}/"))


__all__ = ["OnlineHandle", "SharingMixin"]
