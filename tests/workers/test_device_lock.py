"""The device lock admits one holder per physical device across processes, and the kernel frees it
when its holder dies, even by SIGKILL."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.waiting import wait_for
from workers.device_lock import DeviceBusy, device_lock, lock_path

HOLD = """
import sys, time
from workers.device_lock import device_lock
with device_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_lock_is_exclusive_across_processes_and_freed_when_the_holder_is_killed() -> None:
    identity = f"cpu:test-{uuid.uuid4().hex}"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, identity],
        stdout=subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(DeviceBusy, match=identity), device_lock(identity):
            pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)

        def free() -> bool:
            try:
                with device_lock(identity):
                    return True
            except DeviceBusy:
                return False

        wait_for(free, 5, "the lock to be released")
    finally:
        holder.kill()
        holder.wait()
        lock_path(identity).unlink(missing_ok=True)


def test_different_devices_do_not_block_each_other() -> None:
    a, b = f"cpu:test-{uuid.uuid4().hex}", f"cpu:test-{uuid.uuid4().hex}"
    with device_lock(a), device_lock(b):
        assert lock_path(a) != lock_path(b)
    for identity in (a, b):
        lock_path(identity).unlink(missing_ok=True)
