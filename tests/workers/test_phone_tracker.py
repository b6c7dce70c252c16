"""The agent follows the adb device list: phones that appear are served, phones that leave go
offline at once with the reason, a dead hub takes every phone, and a phone that comes back is
served again. The device list comes from our adb double over TCP, read by real adbutils."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devicelab.backends.base import Capabilities, DeviceInfo
from tests.adb_double.phones import OFFLINE, UNAUTHORIZED, Phone
from tests.adb_double.server import AdbDouble, running_adb_double
from tests.workers.test_agent_go_offline import _job
from workers.agent import DeviceAgent
from workers.phone_tracker import PhoneTracker, reason_for


def describe(serial: str) -> DeviceInfo:
    """A phone as the android backend describes it (model and SoC make phones equivalent)."""
    return DeviceInfo(
        "android",
        f"android:{serial}",
        f"Google Pixel 7 ({serial})",
        {"serial": serial, "model": "Pixel 7", "soc": "GS201"},
        Capabilities(precisions=("fp32", "fp16"), max_threads=8, formats=("tflite",), delegates=("cpu", "xnnpack")),
    )


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch) -> Iterator[AdbDouble]:
    with running_adb_double(Phone("PHONE-A"), Phone("PHONE-B")) as d:
        monkeypatch.setenv("LATENCYLAB_ADB_SERVER", d.address)
        yield d


def follow(agent: DeviceAgent, tracker: PhoneTracker) -> Any:
    """One poll as the worker's supervising loop makes it (``workers.run._follow_phones``): the
    tracker is asked about the agent's phones only."""
    changes = tracker.poll(agent.served("android"))
    if changes.vanished:
        agent.lose_devices(changes.vanished)
    return agent.add_devices(changes.appeared), changes


def test_phones_appear_leave_with_a_reason_and_come_back(
    make_agent: Callable[..., Any], double: AdbDouble, team: Any
) -> None:
    from server.devices.models import Device

    agent = make_agent("farm-1")
    agent.start([])
    tracker = PhoneTracker(describe=describe)
    added, _ = follow(agent, tracker)
    assert sorted(d.found.identity for d in added) == ["android:PHONE-A", "android:PHONE-B"]
    rows = {d.found.identity: d.pk for d in agent.devices}
    job = _job(team, rows["android:PHONE-A"])

    double.unplug("PHONE-A")
    double.phones()[0].state = UNAUTHORIZED  # PHONE-B: the debugging prompt was revoked
    _, changes = follow(agent, tracker)
    assert changes.vanished == {
        "android:PHONE-A": reason_for("absent"),
        "android:PHONE-B": reason_for("unauthorized"),
    }
    a, b = Device.objects.get(pk=rows["android:PHONE-A"]), Device.objects.get(pk=rows["android:PHONE-B"])
    assert a.status == b.status == "offline"
    assert "unplugged" in a.offline_reason and "USB debugging" in b.offline_reason
    assert agent.identities == []  # neither heart-beats
    job.refresh_from_db()
    # both left in one poll: the job does not move to the other leaving phone, it waits
    assert job.state == "queued" and job.device_id == a.pk

    # a third phone of the same model is plugged in: served, and the waiting job moves to it
    double.plug(Phone("PHONE-C"))
    added, _ = follow(agent, tracker)
    assert [d.found.identity for d in added] == ["android:PHONE-C"]
    agent.beat()  # the server sweeps the lab when a heartbeat arrives
    job.refresh_from_db()
    assert job.device_id == agent.devices[-1].pk and "went offline" in job.moved_from

    # PHONE-A comes back: it is not new to this run, it heart-beats again
    double.plug(Phone("PHONE-A"))
    added, _ = follow(agent, tracker)
    assert added == []
    a.refresh_from_db()
    assert a.status == "online" and a.offline_reason == ""
    assert "android:PHONE-A" in agent.identities


def test_a_dead_hub_takes_every_phone_and_an_offline_phone_is_named(
    make_agent: Callable[..., Any], double: AdbDouble
) -> None:
    from server.devices.models import Device

    agent = make_agent("farm-2")
    agent.start([])
    tracker = PhoneTracker(describe=describe)
    follow(agent, tracker)
    double.phones()[1].state = OFFLINE
    _, changes = follow(agent, tracker)
    assert list(changes.vanished.values()) == [reason_for("offline")]
    double.unplug_all()
    _, changes = follow(agent, tracker)
    assert len(changes.vanished) == 1  # the other one; the offline one was already gone
    assert Device.objects.filter(worker="farm-2", status="offline").count() == 2


def test_an_adb_server_that_stops_answering_takes_every_phone_offline(
    make_agent: Callable[..., Any], double: AdbDouble
) -> None:
    from server.devices.models import Device

    agent = make_agent("farm-3")
    agent.start([])
    tracker = PhoneTracker(describe=describe)
    follow(agent, tracker)
    double.stop()
    _, changes = follow(agent, tracker)
    assert len(changes.vanished) == 2
    reasons = set(Device.objects.filter(worker="farm-3").values_list("offline_reason", flat=True))
    assert len(reasons) == 1 and "adb server" in reasons.pop()
