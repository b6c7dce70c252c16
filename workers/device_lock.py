"""A machine-wide lock per physical device, held while a job measures it.

One Celery process per device already runs one job at a time; the lock also covers what that
cannot see: two agents started on one machine for the same device, or two device rows (agent
instances) backed by the same CPU. Two measurements on one device at once would each disturb
the other, so the second waits (the task retries it as ``DeviceBusy``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
