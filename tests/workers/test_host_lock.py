"""Devices that measure on the host's own processors (the host CPU and an OpenCL CPU device such as
PoCL) never measure at the same time: one waits for the other, or gives up as ``DeviceBusy``; a
phone is never held up. The stored result records whether the lock was held."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.base import DeviceInfo
from workers.device_lock import LOCK_DIR_ENV, DeviceBusy, host_lock
from workers.tasks import run_profiling_job

CPU = DeviceInfo("cpu", "cpu:host-1", "Host CPU")
POCL = DeviceInfo("opencl", "opencl:pocl-cpu", "PoCL CPU", {"device_type": "cpu"})
GPU = DeviceInfo("opencl", "opencl:gpu", "A GPU", {"device_type": "gpu"})
PHONE = DeviceInfo("android", "android:PHONE-A", "Pixel 7", {"serial": "PHONE-A"})


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """This test's host, alone: other test processes on the machine measure under other locks."""
    monkeypatch.setenv(LOCK_DIR_ENV, str(tmp_path / "locks"))


class Holder:
    """A measurement holding the host lock in a thread of its own until released."""

    def __init__(self, info: DeviceInfo) -> None:
        self.held, self.release = threading.Event(), threading.Event()
        self.thread = threading.Thread(target=self._hold, args=(info,), daemon=True)
        self.thread.start()
        assert self.held.wait(10), "the holder never got the lock"

    def _hold(self, info: DeviceInfo) -> None:
        with host_lock(info) as record:
            assert record is not None and record["held"]
            self.held.set()
            self.release.wait(30)

    def stop(self) -> None:
        self.release.set()
        self.thread.join(10)


@pytest.fixture
def hold() -> Iterator[Callable[[DeviceInfo], Holder]]:
    holders: list[Holder] = []

    def make(info: DeviceInfo) -> Holder:
        holders.append(Holder(info))
        return holders[-1]

    yield make
    for h in holders:
        h.stop()


@pytest.mark.parametrize(("first", "second"), [(CPU, POCL), (POCL, CPU)])
def test_the_cpu_and_an_opencl_cpu_exclude_each_other(
    hold: Callable[[DeviceInfo], Holder], first: DeviceInfo, second: DeviceInfo
) -> None:
    holder = hold(first)
    with pytest.raises(DeviceBusy, match="the host's processors are measuring"), host_lock(second, wait_s=0.3):
        pass

    holder.stop()
    with host_lock(second, wait_s=0.3) as record:
        assert record is not None and record["held"] is True


def test_this_machines_pocl_device_waits_for_the_host_cpu(
    opencl_agent: Any, hold: Callable[[DeviceInfo], Holder]
) -> None:
    found = opencl_agent.devices[0].found  # as the OpenCL backend described it
    assert found.hardware["device_type"] == "cpu", "the test machine's OpenCL device is PoCL on its CPU"
    hold(CPU)
    with pytest.raises(DeviceBusy), host_lock(found, wait_s=0.3):
        pass


def test_a_waiting_measurement_starts_once_the_other_ends(hold: Callable[[DeviceInfo], Holder]) -> None:
    holder = hold(CPU)
    threading.Timer(0.5, holder.release.set).start()

    with host_lock(POCL, wait_s=10) as record:
        assert record is not None and record["held"] is True and record["waited_s"] >= 0.4


@pytest.mark.parametrize("other", [PHONE, GPU])
def test_a_device_with_processors_of_its_own_is_not_held_up(
    hold: Callable[[DeviceInfo], Holder], other: DeviceInfo
) -> None:
    hold(CPU)
    with host_lock(other, wait_s=0) as record:
        assert record is None


def test_a_cpu_job_records_that_it_held_the_host(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    job = make_job()
    assert run_profiling_job(job.pk) == "succeeded"
    job.refresh_from_db()
    lock = job.result.environment["host_lock"]
    assert lock["held"] is True and lock["waited_s"] >= 0


def test_the_lock_turned_off_is_recorded_as_not_held(
    as_device_process: Any, make_job: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import workers.tasks

    settings, server, cache, outbox = workers.tasks.lab()
    off = dataclasses.replace(settings, host_lock=False)  # LATENCYLAB_HOST_LOCK=false
    monkeypatch.setattr(workers.tasks, "lab", lambda: (off, server, cache, outbox))
    job = make_job()

    assert run_profiling_job(job.pk) == "succeeded"
    job.refresh_from_db()
    lock = job.result.environment["host_lock"]
    assert lock["held"] is False and "turned off" in lock["note"]
