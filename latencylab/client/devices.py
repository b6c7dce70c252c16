"""The lab's devices, found by id, name or identity."""

from __future__ import annotations

from typing import Any

from latencylab.client.errors import InputError
from latencylab.client.http import HttpClient


class DevicesMixin(HttpClient):
    """``Client``'s device calls."""

    def devices(self, kind: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        """The lab's devices: ``{"id", "kind", "name", "hardware", "capabilities", "status",
        "offline_reason", ...}``; ``kind="android"`` for the phones, ``status="online"`` for the reachable."""
        params = {k: v for k, v in (("kind", kind), ("status", status)) if v is not None}
        return self._list("devices/", params or None)

    def device(self, device: int | str | dict[str, Any]) -> dict[str, Any]:
        """One device by id, name or identity; an online one wins when several share a name."""
        if isinstance(device, dict):
            return device
        if isinstance(device, int) and not isinstance(device, bool):
            return dict(self._request("GET", f"devices/{device}/"))
        if not isinstance(device, str) or not device:
            raise InputError(f"a device is an id or a name, not {device!r}")
        devices = self.devices()
        for key in ("name", "identity"):
            matches = [d for d in devices if d.get(key) == device]
            online = [d for d in matches if d.get("status") == "online"]
            if len(matches) == 1:
                return matches[0]
            if len(online) == 1:
                return online[0]
            if matches:
                ids = ", ".join(f"#{d['id']} ({d.get('status')})" for d in matches)
                raise InputError(f"{len(matches)} devices are called {device!r}: {ids}; pass the id instead")
        if device.isdigit():
            return self.device(int(device))
        names = ", ".join(sorted({str(d.get("name")) for d in devices})) or "none"
        raise InputError(f"no device called {device!r}; the devices are: {names}")

    def _device_id(self, device: int | str | dict[str, Any]) -> int:
        if isinstance(device, int) and not isinstance(device, bool):
            return device
        return int(self.device(device)["id"])


__all__ = ["DevicesMixin"]
