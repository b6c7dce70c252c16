"""Following the phones on the lab machine's adb server while the worker runs.

Every ``LATENCYLAB_ADB_POLL_SECONDS`` the agent's supervising loop asks the tracker for the adb
device list. A phone that appears ready (``device``) and is not served yet is described and
registered, and a Celery process is started for it; a served phone that vanished (unplugged, or
listed ``offline`` or ``unauthorized``) stops heart-beating and goes offline at once with that
reason, so its running job is retried and its queued jobs move to an equivalent phone (same
model and SoC) or wait; a dead hub (every phone gone at once) does the same for each. A phone
that comes back heart-beats again and takes its jobs back.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from devicelab.backends.base import DeviceInfo, DeviceLost

log = logging.getLogger("latencylab.workers")

POLL_ENV = "LATENCYLAB_ADB_POLL_SECONDS"
DEFAULT_POLL_SECONDS = 2.0


def reason_for(state: str) -> str:
    """Why a phone in this adb state cannot be used, in words a lab admin can act on."""
    from devicelab.backends.android.adb import state_reason

    return state_reason(state)


def poll_seconds() -> float:
    """How often the adb device list is read."""
    try:
        return max(0.2, float(os.environ.get(POLL_ENV, DEFAULT_POLL_SECONDS)))
    except ValueError:
        return DEFAULT_POLL_SECONDS


@dataclass
class PhoneChanges:
    """What one poll found: phones to register and serve, and served phones that went away."""

    appeared: list[DeviceInfo]
    vanished: dict[str, str]  # identity -> reason
    # phones listed but not ready that this run never served (``unauthorized`` when the worker
    # starts): listed, offline with their reason, until they are ready
    waiting: dict[str, tuple[DeviceInfo, str]] = field(default_factory=dict)  # identity -> (row, reason)


class PhoneTracker:
    """Compares the adb device list with the phones the agent serves."""

    def __init__(self, describe: Callable[[str], DeviceInfo] | None = None) -> None:
        from devicelab.backends.android import adb, backend

        self._adb = adb
        self._describe = describe or backend.describe_serial
        self._identity = backend.identity_of
        self._waiting = backend.waiting_info
        self.client = adb.client(timeout=10)
        self.last_poll = 0.0
        self.interval = poll_seconds()
        self.unreachable = False
        self.failed_describe: dict[str, float] = {}  # serial -> when describing it last failed

    def due(self) -> bool:
        """Whether a poll is due."""
        return time.monotonic() - self.last_poll >= self.interval

    def poll(self, served: dict[str, bool]) -> PhoneChanges:
        """Compare the adb list with ``served`` (identity -> currently present)."""
        self.last_poll = time.monotonic()
        try:
            listed = {a.serial: a.state for a in self._adb.attached(self.client)}
        except DeviceLost as e:
            if not self.unreachable:
                log.error("%s; every phone of this worker goes offline until it answers", e)
            self.unreachable = True
            return PhoneChanges(
                [], {i: f"the adb server cannot be reached ({e})" for i, here in served.items() if here}
            )
        if self.unreachable:
            log.info("the adb server answers again")
        self.unreachable = False
        by_identity = {self._identity(s): s for s in listed}
        vanished = {}
        for identity, here in served.items():
            serial = by_identity.get(identity)
            state = listed.get(serial, "absent") if serial is not None else "absent"
            if here and state != "device":
                vanished[identity] = reason_for(state)
        appeared = []
        waiting = {}
        for serial, state in listed.items():
            identity = self._identity(serial)
            if state != "device" and identity not in served:
                waiting[identity] = (self._waiting(serial, state), reason_for(state))
            if state != "device" or served.get(identity):
                continue
            if time.monotonic() - self.failed_describe.get(serial, -1e9) < 10 * self.interval:
                continue  # it failed to answer just now: give it a moment (booting, authorizing)
            try:
                appeared.append(self._describe(serial))
                self.failed_describe.pop(serial, None)
            except DeviceLost as e:
                self.failed_describe[serial] = time.monotonic()
                log.warning("phone %s is listed but could not be described yet: %s", serial, e)
        return PhoneChanges(appeared, vanished, waiting)


def adb_reachable() -> bool:
    """Whether the configured adb server answers (a worker without one does not track phones)."""
    try:
        from devicelab.backends.android import adb
    except ImportError:
        return False
    try:
        adb.attached(adb.client(timeout=5))
    except (DeviceLost, ValueError):
        return False
    return True


__all__ = ["PhoneChanges", "PhoneTracker", "adb_reachable", "poll_seconds", "reason_for"]
