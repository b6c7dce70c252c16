"""A machine-wide lock per physical device, held while a job measures it.

One Celery process per device already runs one job at a time; the lock also covers what that
cannot see: two agents started on one machine for the same device, or two device rows (agent
instances) backed by the same CPU. Two measurements on one device at once would each disturb
the other, so the second waits (the task retries it as ``DeviceBusy``).

``host_lock`` is the same on a wider scale: devices that measure on the host's own processors
(the host CPU and an OpenCL CPU device such as PoCL) never measure at the same time, since each
would time the other's load; a phone, with processors of its own, is never held up by it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devicelab.backends.base import DeviceInfo
from devicelab.measure.environment import HostLockRecord

# Where the lock files live: one folder per machine. LATENCYLAB_LOCK_DIR moves it (the test suite
# gives each of its parallel processes its own, as if each were a machine of its own).
LOCK_DIR_ENV = "LATENCYLAB_LOCK_DIR"


def lock_dir() -> Path:
    """The folder of this machine's device lock files."""
    return Path(os.environ.get(LOCK_DIR_ENV) or Path(tempfile.gettempdir()) / "latencylab-device-locks")


class DeviceBusy(RuntimeError):
    """Another process is measuring this device right now (transient: retried with backoff)."""


def lock_path(identity: str) -> Path:
    """The lock file of the device with this (discovered) identity."""
    digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
    return lock_dir() / f"{digest}.lock"


@contextmanager
def device_lock(identity: str) -> Iterator[None]:
    """Hold the device exclusively, or raise ``DeviceBusy`` at once if someone else holds it.

    flock, not a lock file's existence: the kernel drops the lock when its holder dies, even by
    SIGKILL, so a killed worker never leaves a device locked.
    """
    path = lock_path(identity)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise DeviceBusy(f"device {identity!r} is being measured by another process (lock {path})") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


# -- one measurement at a time on the host's processors ----------------------------------------

HOST_LOCK_IDENTITY = "host-processors"
HOST_LOCK_POLL_SECONDS = 0.25


def shares_host_processors(info: DeviceInfo) -> bool:
    """Whether a device measures on this host's own processors: the host CPU, and an OpenCL
    device that is a CPU (PoCL on this machine's cores). A phone, or a GPU, has its own."""
    if info.kind == "cpu":
        return True
    return info.kind == "opencl" and str(info.hardware.get("device_type", "")).lower() == "cpu"


@contextmanager
def host_lock(info: DeviceInfo, enabled: bool = True, wait_s: float = 0.0) -> Iterator[HostLockRecord | None]:
    """Hold the host's processors for one measurement when ``info`` measures on them (yields what
    the result's environment records of it), waiting up to ``wait_s`` for another device's
    measurement to end; ``DeviceBusy`` if it does not end in time. Yields None when the device
    has processors of its own, or the lock is turned off (``LATENCYLAB_HOST_LOCK``)."""
    if not shares_host_processors(info):
        yield None
        return
    if not enabled:
        yield HostLockRecord(held=False, waited_s=0.0, note="turned off (LATENCYLAB_HOST_LOCK=false)")
        return
    path = lock_path(HOST_LOCK_IDENTITY)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    started = time.monotonic()
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() - started >= wait_s:
                    holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
                    raise DeviceBusy(
                        f"the host's processors are measuring another device's job ({holder or 'another process'}) "
                        f"for more than {wait_s:.0f} s (lock {path})"
                    ) from None
                time.sleep(HOST_LOCK_POLL_SECONDS)
        waited = time.monotonic() - started
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}, device {info.identity}\n".encode(), 0)
        try:
            yield HostLockRecord(
                held=True,
                waited_s=round(waited, 3),
                note="no other device of this host measured at the same time (the host CPU and OpenCL CPU devices)",
            )
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
