"""Network profiles: the presets and your team's, stored or recorded from real transfers to the
server's network probe."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from latencylab.client.errors import ClientError, InputError
from latencylab.client.http import HttpClient


def _probe_bytes(nbytes: int) -> bytes:
    """``nbytes`` that no compression on the way can shrink."""
    return os.urandom(nbytes)


class NetworkProfilesMixin(HttpClient):
    """``Client``'s network-profile calls."""

    def network_profiles(self) -> list[dict[str, Any]]:
        """Every network profile a selection can name: the paper's presets, then your team's,
        each with its latency, throughput, spread, source and mean transfer of 330 KB."""
        return list(self._request("GET", "network-profiles/")["results"])

    def store_network_profile(self, name: str, **fields: Any) -> dict[str, Any]:
        """Store a profile for your team: ``transfers=[[bytes, seconds], ...]`` (recorded) or
        ``latency_ms``, ``throughput_mbps``, ``cv`` (custom); ``source`` says where it came from."""
        return dict(self._request("POST", "network-profiles/", json={"name": name, **fields}))

    def probe_transfer(self, direction: str, nbytes: int) -> float:
        """Seconds one transfer of ``nbytes`` to (``"upload"``) or from (``"download"``) the
        server's network probe took, from the first byte sent to the last received."""
        from latencylab.network_recording import DOWNLOAD, UPLOAD

        if direction == UPLOAD:
            body = _probe_bytes(nbytes)
            t0 = time.perf_counter()
            resp = self._send("POST", "network-probe/", data=body, headers={"Content-Type": "application/octet-stream"})
            seconds = time.perf_counter() - t0
            got = resp.json().get("bytes")
        elif direction == DOWNLOAD:
            t0 = time.perf_counter()
            resp = self._send("GET", "network-probe/", params={"bytes": nbytes})
            seconds = time.perf_counter() - t0
            got = len(resp.content)
        else:
            raise InputError(f"a probe transfer is an upload or a download, not {direction!r}")
        if got != nbytes:
            raise ClientError(None, f"the network probe's {direction} of {nbytes} bytes moved {got}: cut short")
        return seconds

    def record_network_profile(
        self,
        name: str,
        sizes: Sequence[int] | None = None,
        rounds: int | None = None,
        *,
        seed: int = 0,
        save: bool = True,
        progress: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Time real uploads and downloads between this machine and the server
        (``latencylab.network_recording``) and, with ``save``, store them as your team's recorded
        profile ``name``. The answer: ``transfers`` (direction, bytes, seconds), ``upload_mbps``
        and ``download_mbps`` (each direction's own line), and ``profile`` (the stored one, with
        the fitted latency, throughput and spread) or None."""
        from latencylab import network_recording as rec

        plan = tuple(sizes) if sizes is not None else rec.DEFAULT_SIZES
        count = rounds if rounds is not None else rec.DEFAULT_ROUNDS
        try:
            rec.check_plan(plan, count)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if save:  # a name the server would refuse is refused before any transfer is timed
            taken = {p["name"]: p["stored_kind"] for p in self.network_profiles()}
            if name in taken:
                what = "a built-in preset" if taken[name] == "preset" else "your team's already"
                raise InputError(f"network profile {name!r} is {what}; pick another name")
        timed = rec.record(self.probe_transfer, plan, count, seed=seed, progress=progress)
        when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        stored = None
        if save:
            source = rec.describe(timed, self.url, socket.gethostname(), when)
            stored = self.store_network_profile(name, transfers=[[t.nbytes, t.seconds] for t in timed], source=source)
        return {
            "name": name,
            "transfers": [{"direction": t.direction, "bytes": t.nbytes, "seconds": t.seconds} for t in timed],
            "upload_mbps": rec.throughput_mbps(timed, rec.UPLOAD),
            "download_mbps": rec.throughput_mbps(timed, rec.DOWNLOAD),
            "profile": stored,
        }


__all__ = ["NetworkProfilesMixin"]
