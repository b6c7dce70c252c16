"""Remote runs: a model served by a lab machine and measured from a client under network profiles."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import InputError
from latencylab.client.handles import RemoteHandle, job_id
from latencylab.client.models import ModelsMixin

if TYPE_CHECKING:
    from devicelab.graph import Graph


class RemoteMixin(ModelsMixin, DevicesMixin):
    """``Client``'s remote-run calls."""

    def remote_run(
        self,
        model: int | str | os.PathLike[str] | bytes | Graph | dict[str, Any],
        device: int | str | dict[str, Any],
        profiles: Iterable[str],
        *,
        requests: int | None = None,
        warmup: int | None = None,
        payload: str | None = None,
        seed: int | None = None,
        threads: int | None = None,
        cores: Iterable[int] | None = None,
        wait: bool = False,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> RemoteHandle:
        """Queue a remote run: ``model`` (an id, or anything ``upload`` takes; an image model) served
        by the CPU ``device`` (id or name) and measured from a client under each of ``profiles``
        (1 to 8: presets such as campus_wifi, lte, cellular_hotspot; your team's stored profiles;
        ``unshaped``). ``requests`` per profile (server default 20), ``warmup`` (3), ``payload``
        (jpeg, the default: the lab's phone photo; png; tensor: the photo preprocessed on the
        client), ``seed`` (0), the server's ``threads`` and ``cores``.

        With ``wait=True`` this returns once the run succeeded (``handle.result`` is what it
        measured) and raises ``JobFailed`` / ``WaitTimeout`` like ``JobHandle.wait``."""
        if isinstance(profiles, str | bytes):
            raise InputError(f"profiles= takes a list of profile names, not the string {profiles!r}; wrap it in [...]")
        if isinstance(model, bool):
            raise InputError(f"a model is an id, a file path, bytes or a Graph, not {model!r}")
        model_id = model if isinstance(model, int) else self.upload(model)
        body: dict[str, Any] = {"model": model_id, "device": self._device_id(device), "profiles": list(profiles)}
        for key, value in (
            ("requests", requests),
            ("warmup", warmup),
            ("payload", payload),
            ("seed", seed),
            ("threads", threads),
        ):
            if value is not None:
                body[key] = value
        if cores is not None:
            body["cores"] = list(cores)
        handle = RemoteHandle(self, self._request("POST", "remote/runs/", json=body))
        if wait:
            handle.wait(timeout=timeout, on_progress=on_progress)
        return handle

    def remote_runs(self) -> list[dict[str, Any]]:
        """Your team's remote runs, newest first (state, progress, model, device, settings)."""
        return self._list("remote/runs/")

    def remote_run_status(self, run: int | RemoteHandle) -> RemoteHandle:
        """A run as it is now: state, progress, and once it succeeded ``result`` (model_name, payload,
        payload_bytes, load_ms, ``profiles`` in the order asked, ``data`` with every request)."""
        return RemoteHandle(self, self._request("GET", f"remote/runs/{job_id(run)}/"))

    def wait_for_remote_run(
        self,
        run: int | RemoteHandle,
        timeout: float | None = None,
        on_progress: Callable[[float], Any] | None = None,
    ) -> dict[str, Any]:
        """Poll until the run finished; its result. Raises ``JobFailed`` with the server's failure
        reason, ``WaitTimeout`` after ``timeout`` seconds (it keeps running on the server)."""
        return self.remote_run_status(run).wait(timeout=timeout, on_progress=on_progress)


__all__ = ["RemoteMixin"]
