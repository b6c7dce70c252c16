"""ParallelFusion on the server: sweeps, their rows, plans and their comparisons."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import ClientError, InputError
from latencylab.client.handles import FusionHandle, JobHandle, job_id


class FusionMixin(DevicesMixin):
    """``Client``'s fusion calls."""

    def _networks(self, zoo: Iterable[str] | str | None, models: Iterable[int] | None) -> dict[str, Any]:
        """``zoo`` names and ``models`` ids as the request's keys (left out when not given)."""
        body: dict[str, Any] = {}
        if zoo is not None:
            if isinstance(zoo, str):
                raise InputError(f"zoo= takes a list of zoo names, not the string {zoo!r}; wrap it in [...]")
            body["zoo"] = list(zoo)
        if models is not None:
            ids = list(models)
            if not all(isinstance(m, int) and not isinstance(m, bool) for m in ids):
                raise InputError(f"models= takes model ids (integers), got {ids!r}; zoo names go in zoo=")
            body["models"] = ids
        return body

    def _wait_fusion(
        self,
        handle: FusionHandle,
        wait: bool,
        timeout: float | None,
        on_progress: Callable[[float], Any] | None,
    ) -> FusionHandle:
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def fusion_sweep(
        self,
        device: int | str | dict[str, Any],
        *,
        zoo: Iterable[str] | None = None,
        models: Iterable[int] | None = None,
        precision: str | None = None,
        spec: dict[str, Any] | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> FusionHandle:
        """Queue a fusion sweep on an OpenCL ``device`` (id or name) over zoo networks (names) and
        your team's models (ids); neither: the six networks of ParallelFusion's table 1. ``spec``
        holds the sweep's keys (sizes, kinds, representatives, instances, max_combinations,
        identical_counts, identical_per_model, warmup, runs, rounding, layouts, wave_size,
        time_budget_s, seed; the rest take their defaults).

        With ``wait=True`` this returns once the sweep succeeded (``handle.result`` is its summary)
        and raises ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        body: dict[str, Any] = {"device": self._device_id(device), **self._networks(zoo, models)}
        if precision is not None:
            body["precision"] = precision
        if spec is not None:
            body["spec"] = dict(spec)
        handle = FusionHandle(self, self._request("POST", "fusion/sweeps/", json=body))
        return self._wait_fusion(handle, wait, timeout, on_progress)

    def fusion_sweeps(self) -> list[dict[str, Any]]:
        """Your team's fusion sweeps, newest first (state, progress, device, settings)."""
        return self._list("fusion/sweeps/")

    def fusion_sweep_status(self, sweep: int | FusionHandle) -> FusionHandle:
        """A sweep as it is now: state, progress, and once it succeeded ``result`` (networks, wave
        size, spec, combinations, notes, timings, ``row_counts``)."""
        return FusionHandle(self, self._request("GET", f"fusion/sweeps/{job_id(sweep)}/"))

    def fusion_rows(
        self,
        sweep: int | FusionHandle,
        *,
        experiment: str | None = None,
        size: int | None = None,
        variant: str | None = None,
        kinds: Iterable[str] | str | None = None,
        contains: Iterable[str] | str | None = None,
        errors: bool | None = None,
        detail: bool = False,
    ) -> list[dict[str, Any]]:
        """A succeeded sweep's rows (every page), filtered: ``experiment`` (combination or
        identical), ``size``, ``variant`` (rounded or unrounded), the exact ``kinds`` (any order),
        rows that ``contains`` every given kind, with or without ``errors``. Each row: kinds,
        variant, layout, total_mflops, throughput (sequential / fused device span, paired over
        rounds), verdict ("above" / "below" 1 when its 95 % interval excludes 1, else "within
        noise"), busy_ratio (the kernels' own times), padding, the check; ``detail=True`` adds the
        whole row (raw samples, and the interval as ``data["ratio"]``) as ``data``."""
        handle = self.fusion_sweep_status(sweep)
        if handle.state != "succeeded":
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"sweep #{handle.id} is {handle.state}{reason}; it has no rows", handle.data)
        params: dict[str, Any] = {}
        for key, value in (("experiment", experiment), ("size", size), ("variant", variant)):
            if value is not None:
                params[key] = value
        for key, listed in (("kinds", kinds), ("contains", contains)):
            if listed is not None:
                params[key] = listed if isinstance(listed, str) else ",".join(listed)
        if errors is not None:
            params["errors"] = "true" if errors else "false"
        if detail:
            params["detail"] = "true"
        return self._list(f"fusion/sweeps/{handle.id}/rows/", params)

    def fusion_plan(
        self,
        device: int | str | dict[str, Any],
        *,
        zoo: Iterable[str] | None = None,
        models: Iterable[int] | None = None,
        precision: str | None = None,
        options: dict[str, Any] | None = None,
        sweep: int | JobHandle | bool | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> FusionHandle:
        """Queue a fusion plan on an OpenCL ``device``: the networks run together (neither ``zoo``
        nor ``models``: two MobileNet-V2, figure 11), planned from sweep ``sweep``'s measurements
        (an id or handle; None: the team's newest on the device; False: none, the latency model
        alone) and compared
        end to end with sequential and fuse-all runs. ``options``: max_group, warmup, runs,
        round_to_wave. ``wait=True`` returns once it succeeded (``handle.result``: the comparison)."""
        body: dict[str, Any] = {"device": self._device_id(device), **self._networks(zoo, models)}
        if precision is not None:
            body["precision"] = precision
        if options is not None:
            body["options"] = dict(options)
        if sweep is not None:
            body["sweep"] = False if sweep is False else job_id(sweep)  # True: refused by _job_id
        handle = FusionHandle(self, self._request("POST", "fusion/plans/", json=body))
        return self._wait_fusion(handle, wait, timeout, on_progress)

    def fusion_plans(self) -> list[dict[str, Any]]:
        """Your team's fusion plans, newest first."""
        return self._list("fusion/plans/")

    def fusion_plan_status(self, plan: int | FusionHandle) -> FusionHandle:
        """A plan as it is now: state, progress, and once it succeeded ``result``."""
        return FusionHandle(self, self._request("GET", f"fusion/plans/{job_id(plan)}/"))

    def fusion_plan_result(self, plan: int | FusionHandle) -> dict[str, Any]:
        """A succeeded plan's comparison: networks, sequential_ms, plan_ms, fuse_all_ms, plan_ratio,
        fuse_all_ratio (sequential / strategy, paired over rounds: > 1 wins), correct, and the whole
        ``data``, whose ``ratios[strategy]`` hold ``ratio`` and ``busy_ratio`` with their intervals
        (``low``, ``high``, ``verdict``): read those, not the quotient of two medians."""
        handle = self.fusion_plan_status(plan)
        if handle.state != "succeeded" or handle.result is None:
            reason = f": {handle.failure_reason}" if handle.failure_reason else ""
            raise ClientError(None, f"plan #{handle.id} is {handle.state}{reason}; it has no result", handle.data)
        return handle.result


__all__ = ["FusionMixin"]
