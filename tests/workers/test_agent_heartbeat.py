"""The agent's heartbeat keeps its devices fresh; on every heartbeat it receives, the server sweeps
the lab: devices of workers that went quiet go offline (a repeated sweep changes nothing)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.waiting import wait_for
from tests.workers.conftest import fake_cpu


def test_beat_refreshes_own_devices_and_the_server_sweeps_silent_ones(
    make_agent: Callable[..., Any], settings: Any
) -> None:
    from server.devices.models import Device

    live, quiet = make_agent("live"), make_agent("quiet")
    live.start([fake_cpu(1)])
    quiet.start([fake_cpu(2)])
    long_ago = timezone.now() - timedelta(seconds=settings.LATENCYLAB_OFFLINE_AFTER_SECONDS + 5)
    Device.objects.filter(worker__in=["live", "quiet"]).update(last_heartbeat=long_ago)

    live.beat()

    mine, theirs = Device.objects.get(worker="live"), Device.objects.get(worker="quiet")
    assert mine.status == "online" and mine.last_heartbeat > long_ago
    assert theirs.status == "offline" and theirs.offline_since is not None
    since = theirs.offline_since
    live.beat()  # idempotent: the second sweep finds nothing new
    assert Device.objects.get(worker="quiet").offline_since == since


def test_device_marked_offline_comes_back_with_its_next_heartbeat(make_agent: Callable[..., Any]) -> None:
    from server.devices.models import Device

    agent = make_agent("flaky")
    agent.start([fake_cpu(3)])
    Device.objects.filter(worker="flaky").update(status="offline", offline_since=timezone.now())
    agent.beat()
    assert Device.objects.get(worker="flaky").status == "online"


def test_a_device_said_gone_is_looked_for_again_not_revived_by_the_heartbeat(make_agent: Callable[..., Any]) -> None:
    # A run found the phone unplugged and said so; the agent's view predates it. Its heartbeat
    # does not bring the phone back: the answer names it, and the agent hands it to the adb
    # tracker (present no more: registered anew when the adb list shows it ready). A device
    # that cannot be unplugged is registered anew at once.
    from devicelab.backends.base import DeviceInfo
    from server.devices.models import Device
    from server.profiling.services import take_devices_offline

    phone = DeviceInfo("android", "android:GLITCH-1", "Pixel 7", {"model": "Pixel 7", "soc": "gs201"})
    agent = make_agent("glitchy")
    agent.start([phone, fake_cpu(5)])
    rows = {d.identity: d.pk for d in Device.objects.filter(worker="glitchy")}
    take_devices_offline(dict.fromkeys(rows.values(), "phone GLITCH-1 is not ready: unplugged"))

    agent.beat()

    assert agent.served("android") == {"android:GLITCH-1": False}
    assert Device.objects.get(identity="android:GLITCH-1").status == "offline"
    assert Device.objects.get(identity=fake_cpu(5).identity).status == "online"
    assert agent.identities == [fake_cpu(5).identity]
    # the tracker finds it ready again: registered anew, online
    agent.add_devices([phone])
    assert Device.objects.get(identity="android:GLITCH-1").status == "online"
    assert agent.served("android") == {"android:GLITCH-1": True}


@pytest.mark.django_db(transaction=True)
def test_heartbeat_thread_beats_until_stopped(make_agent: Callable[..., Any]) -> None:
    from server.devices.models import Device

    agent = make_agent("threaded")
    agent.start([fake_cpu(4)])
    first = Device.objects.get(worker="threaded").last_heartbeat
    beat = agent.beat

    def beat_and_hang_up() -> None:
        # The in-process server answers in the heartbeat's thread, on a connection of that
        # thread's: closed after each beat, as a real server's request end would.
        from django.db import connection

        try:
            beat()
        finally:
            connection.close()

    agent.beat = beat_and_hang_up
    agent.start_heartbeat(interval=0.1)
    try:
        wait_for(lambda: Device.objects.get(worker="threaded").last_heartbeat > first, 10, "a heartbeat")
    finally:
        agent.stop_heartbeat()
    assert agent._thread is None
    last = Device.objects.get(worker="threaded").last_heartbeat
    time.sleep(0.3)
    assert Device.objects.get(worker="threaded").last_heartbeat == last


def test_a_device_whose_process_is_down_is_named_restarting_in_the_heartbeats(
    make_agent: Callable[..., Any],
) -> None:
    import orjson

    agent = make_agent("restarts")
    agent.start([fake_cpu(3)])
    identity = agent.identities[0]
    beats: list[dict[str, Any]] = []

    def record(request: Any) -> None:
        if request.url.endswith("/api/lab/heartbeat"):
            beats.append(orjson.loads(request.body))

    agent.machine.adapter.before = record
    agent.process_down(identity, True)
    agent.beat()
    agent.process_down(identity, False)
    agent.beat()
    assert [b["restarting"] for b in beats] == [[identity], []]
    assert all(b["identities"] == [identity] for b in beats)
