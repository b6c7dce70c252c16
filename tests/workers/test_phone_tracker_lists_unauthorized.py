"""A phone listed ``unauthorized`` when the worker starts (its USB debugging prompt not accepted
yet) is listed, offline with that reason, until the prompt is accepted; then it is described and
served like any phone (issue 34 item 6, as the README says)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.adb_double.phones import UNAUTHORIZED, Phone
from tests.adb_double.server import AdbDouble, running_adb_double
from tests.workers.test_phone_tracker import describe
from workers.agent import DeviceAgent
from workers.phone_tracker import PhoneTracker, reason_for


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch) -> Iterator[AdbDouble]:
    with running_adb_double(Phone("PHONE-A"), Phone("LOCKED-1", state=UNAUTHORIZED)) as d:
        monkeypatch.setenv("LATENCYLAB_ADB_SERVER", d.address)
        yield d


def follow(agent: DeviceAgent, tracker: PhoneTracker) -> Any:
    """One poll as ``workers.run._follow_phones`` makes it."""
    changes = tracker.poll(agent.served("android"))
    if changes.vanished:
        agent.lose_devices(changes.vanished)
    agent.list_waiting(changes.waiting)
    return agent.add_devices(changes.appeared), changes


def test_an_unauthorized_phone_is_listed_with_its_reason_until_the_prompt_is_accepted(
    make_agent: Callable[..., Any], double: AdbDouble
) -> None:
    from server.devices.models import Device

    agent = make_agent("farm-u")
    agent.start([])
    tracker = PhoneTracker(describe=describe)
    added, changes = follow(agent, tracker)
    assert [d.found.identity for d in added] == ["android:PHONE-A"]
    assert list(changes.waiting) == ["android:LOCKED-1"]

    locked = Device.objects.get(identity="android:LOCKED-1")
    assert locked.status == "offline" and locked.offline_reason == reason_for("unauthorized")
    assert "USB debugging" in locked.offline_reason and locked.worker == agent.worker_name
    assert "not ready" in locked.hardware["runtime"] and locked.capabilities["refuses"]
    since = locked.offline_since

    agent.beat()  # not heart-beaten: it stays offline
    follow(agent, tracker)  # listed again with the same reason: not announced again
    locked.refresh_from_db()
    assert locked.status == "offline" and locked.offline_since == since

    next(p for p in double.phones() if p.serial == "LOCKED-1").state = "device"  # the prompt accepted
    added, changes = follow(agent, tracker)
    assert [d.found.identity for d in added] == ["android:LOCKED-1"] and not changes.waiting
    locked.refresh_from_db()
    assert locked.status == "online" and locked.hardware["model"] == "Pixel 7"
    assert not locked.capabilities.get("refuses") and agent.waiting == {}
