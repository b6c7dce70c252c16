"""Following the phones never touches the host's own devices: with phones listed by an adb server,
and with the adb server gone, the agent's CPU stays online and heart-beating; only the phones come
and go. The polls are the worker's own (``workers.run._follow_phones``); the device list comes from
our adb double over TCP, read by real adbutils."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devicelab.backends.base import Capabilities, DeviceInfo
from tests.adb_double.phones import Phone
from tests.adb_double.server import AdbDouble, running_adb_double
from tests.workers.conftest import fake_cpu
from workers.phone_tracker import PhoneTracker
from workers.run import DeviceProcess, _follow_phones


def describe(serial: str) -> DeviceInfo:
    """A phone as the android backend describes it."""
    return DeviceInfo(
        "android",
        f"android:{serial}",
        f"Google Pixel 7 ({serial})",
        {"serial": serial, "model": "Pixel 7", "soc": "GS201"},
        Capabilities(precisions=("fp32",), max_threads=8, formats=("tflite",), delegates=("cpu",)),
    )


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch) -> Iterator[AdbDouble]:
    with running_adb_double(Phone("PHONE-A")) as d:
        monkeypatch.setenv("LATENCYLAB_ADB_SERVER", d.address)
        yield d


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Device processes the polls start (not really started here): their device ids."""
    pks: list[int] = []
    monkeypatch.setattr(DeviceProcess, "start", lambda self: pks.append(self.device.pk))
    return pks


def _status(pk: int) -> tuple[str, str]:
    from server.devices.models import Device

    row = Device.objects.get(pk=pk)
    return row.status, row.offline_reason


def test_the_cpu_stays_online_while_phones_come_and_the_adb_server_goes(
    make_agent: Callable[..., Any], double: AdbDouble, started: list[int]
) -> None:
    agent = make_agent("farm-with-cpu")
    agent.start([fake_cpu(1)])
    cpu_pk = agent.devices[0].pk
    tracker = PhoneTracker(describe=describe)
    processes: list[Any] = []

    _follow_phones(agent, tracker, processes, "INFO")  # the phone is listed: served
    phone_pk = next(d.pk for d in agent.devices if d.found.kind == "android")
    assert started == [phone_pk]
    assert _status(cpu_pk) == ("online", "") and _status(phone_pk)[0] == "online"

    double.unplug("PHONE-A")
    _follow_phones(agent, tracker, processes, "INFO")
    assert _status(phone_pk)[0] == "offline" and _status(cpu_pk) == ("online", "")

    double.stop()  # the adb server stops answering: every phone goes, the CPU stays
    _follow_phones(agent, tracker, processes, "INFO")
    assert tracker.unreachable
    assert _status(cpu_pk) == ("online", "")
    assert agent.identities == ["cpu:machine-1"]  # the CPU alone still heart-beats
    agent.beat()
    assert _status(cpu_pk) == ("online", "")


def test_an_unreachable_adb_server_at_the_first_poll_leaves_the_cpu_alone(
    make_agent: Callable[..., Any], double: AdbDouble, started: list[int]
) -> None:
    agent = make_agent("farm-adb-down")
    agent.start([fake_cpu(2)])
    tracker = PhoneTracker(describe=describe)
    double.stop()

    _follow_phones(agent, tracker, [], "INFO")

    assert tracker.unreachable and started == []
    assert _status(agent.devices[0].pk) == ("online", "")
    assert agent.served() == {"cpu:machine-2": True}
