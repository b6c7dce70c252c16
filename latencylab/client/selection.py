"""Model selection: CNNSelect's choice for one request, and simulations against other policies."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import InputError, JobFailed, WaitTimeout


class SelectionMixin(DevicesMixin):
    """``Client``'s selection calls."""

    def select(
        self,
        device: int | str | dict[str, Any],
        models: Iterable[int],
        sla_ms: float,
        input_ms: float | None = None,
        network_profile: str | None = None,
        input_bytes: int | None = None,
        threshold_ms: float | None = None,
        seed: int | None = None,
        policy: str | None = None,
        output_bytes: int | None = None,
    ) -> dict[str, Any]:
        """CNNSelect's choice for one request served on ``device`` (id or name) among your team's
        ``models`` (ids), T_input given as ``input_ms`` or estimated from ``network_profile`` (a
        preset: campus_wifi, lte, cellular_hotspot, prototype_wifi; or one of your team's) for an
        input of ``input_bytes`` (the server's default: 330 KB). The answer: ``chosen`` (model id
        and name), ``probabilities`` per candidate name, ``base`` (m*), ``exploration`` (M_E),
        ``t_budget``, ``t_lower``, ``t_upper``, ``t_explore``, ``fallback``, ``utilities``, ``why``
        and the ``candidates`` with their accuracy and latency profile and where each came from.
        ``threshold_ms`` defaults to the server's (20 ms, as simulations); ``policy`` is ``"lab"``
        (the server's default: never a dominated model) or ``"paper"`` (section 5 as printed);
        ``output_bytes`` (the answer's size, 1 KB) prices the lab policy's round trip; ``warnings``
        names latency profiles flagged noisy."""
        body: dict[str, Any] = {
            "device": self._device_id(device),
            "models": _model_ids(models),
            "sla_ms": sla_ms,
        }
        for key, value in (
            ("input_ms", input_ms),
            ("network_profile", network_profile),
            ("input_bytes", input_bytes),
            ("output_bytes", output_bytes),
            ("threshold_ms", threshold_ms),
            ("seed", seed),
            ("policy", policy),
        ):
            if value is not None:
                body[key] = value
        return dict(self._request("POST", "select/", json=body))

    def select_table(
        self,
        device: int | str | dict[str, Any],
        models: Iterable[int],
        sla_targets_ms: Iterable[float],
        network_profile: str,
        *,
        on_device: int | str | dict[str, Any] | None = None,
        load_per_request: bool = False,
        **options: Any,
    ) -> dict[str, Any]:
        """Per candidate and SLA target, the chance of meeting the SLA, the expected accuracy and
        the accuracy within the SLA, served on ``device`` over ``network_profile`` and, with
        ``on_device`` (a phone or CPU the models were profiled on), run there (its cold start per
        request with ``load_per_request``); then the selection policy's and greedy's. ``options``:
        ``input_bytes``, ``output_bytes``, ``threshold_ms``, ``policy``, ``requests``, ``seed``.
        The answer's ``rows`` hold ``option``, ``kind`` (remote, on_device, policy), ``sla_ms``,
        ``p_meet``, ``expected_accuracy`` and ``accuracy_within_sla``; ``warnings`` the noisy profiles."""
        if isinstance(sla_targets_ms, str):
            raise InputError(f"sla_targets_ms= takes a list, not the string {sla_targets_ms!r}")
        known = {"input_bytes", "output_bytes", "threshold_ms", "policy", "requests", "seed"}
        unknown = sorted(set(options) - known)
        if unknown:
            raise InputError(f"unknown option(s) {unknown}; the options are {sorted(known)}")
        body: dict[str, Any] = {
            "device": self._device_id(device),
            "models": _model_ids(models),
            "sla_targets_ms": [float(t) for t in sla_targets_ms],
            "network_profile": network_profile,
            "load_per_request": load_per_request,
            **{k: v for k, v in options.items() if v is not None},
        }
        if on_device is not None:
            body["on_device"] = self._device_id(on_device)
        return dict(self._request("POST", "select/table/", json=body))

    def simulate_selection(self, **spec: Any) -> dict[str, Any]:
        """Queue a simulation of CNNSelect against greedy, fastest and an oracle (seed 002, section
        5.2); the queued simulation with its frozen ``spec``. ``scenario="paper"`` runs table 5's
        models; ``device=`` (id or name) with ``models=[ids]`` runs your models with their profiles
        on the device. Optional: ``sla_targets_ms``, ``profiles`` (network profile names),
        ``requests`` (per point, default 10,000), ``seed``, ``threshold_ms``, ``policies``,
        ``input_bytes``, ``title``. The trainer runs it: ``wait_for_selection_simulation(id)``."""
        body = dict(spec)
        if body.get("device") is not None:
            body["device"] = self._device_id(body["device"])
        if body.get("models") is not None:
            body["models"] = _model_ids(body["models"])
        for key in ("sla_targets_ms", "profiles", "policies"):
            if isinstance(body.get(key), str):
                raise InputError(f"{key}= takes a list, not the string {body[key]!r}; wrap it in [...]")
            if body.get(key) is not None:
                body[key] = list(body[key])
        return dict(self._request("POST", "selection/simulations/", json=body))

    def selection_simulations(self) -> list[dict[str, Any]]:
        """Your team's simulations, newest first (state, progress, title, times; no spec or result)."""
        return self._list("selection/simulations/")

    def selection_simulation(self, simulation: int | dict[str, Any]) -> dict[str, Any]:
        """A simulation as it is now: state, ``spec``, and once it succeeded ``result`` (``points``:
        per policy, SLA target and network profile, the attainment, effective accuracy, end-to-end
        statistics and model usage)."""
        return dict(self._request("GET", f"selection/simulations/{_simulation_id(simulation)}/"))

    def wait_for_selection_simulation(
        self, simulation: int | dict[str, Any], timeout: float | None = None, poll: float = 0.5
    ) -> dict[str, Any]:
        """Poll until the simulation finished; the succeeded simulation (with its ``result``).
        Raises ``JobFailed`` with the server's failure reason when it failed, ``WaitTimeout``
        after ``timeout`` seconds (it keeps running on the server: wait again)."""
        pk = _simulation_id(simulation)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            data = self.selection_simulation(pk)
            if data["state"] == "succeeded":
                return data
            if data["state"] == "failed":
                raise JobFailed(f"simulation #{pk} failed: {data.get('failure_reason') or 'no reason given'}", data)
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"simulation #{pk} is still {data['state']} after {timeout:g} s; it keeps running on the "
                    "server (wait again)",
                    data,
                )
            time.sleep(poll if deadline is None else max(0.0, min(poll, deadline - time.monotonic())))


def _model_ids(models: Iterable[int]) -> list[int]:
    """Candidate models as the API takes them: a list of ids."""
    if isinstance(models, str | bytes | dict):
        raise InputError(f"models= takes a list of model ids, not {models!r}")
    ids = list(models)
    if not all(isinstance(m, int) and not isinstance(m, bool) for m in ids):
        raise InputError(f"models= takes model ids (integers), got {ids!r}")
    return ids


def _simulation_id(simulation: int | dict[str, Any]) -> int:
    """The id of a simulation given as an id or as the server's answer."""
    if isinstance(simulation, dict):
        simulation = simulation.get("id")  # type: ignore[assignment]
    if isinstance(simulation, bool) or not isinstance(simulation, int):
        raise InputError(f"a simulation is an id (an integer) or the server's answer, not {simulation!r}")
    return simulation


__all__ = ["SelectionMixin"]
