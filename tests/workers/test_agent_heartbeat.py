"""The agent's heartbeat keeps its devices fresh and, on every beat, sweeps the lab: devices of
workers that went quiet go offline (any live agent may sweep; a repeated sweep changes nothing)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.waiting import wait_for
from tests.workers.conftest import fake_cpu
from workers.agent import DeviceAgent


def test_beat_refreshes_own_devices_and_sweeps_silent_ones(db: None, settings: object) -> None:
    from server.devices.models import Device

    live, quiet = DeviceAgent("live"), DeviceAgent("quiet")
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


def test_device_marked_offline_comes_back_with_its_next_heartbeat(db: None) -> None:
    from server.devices.models import Device

    agent = DeviceAgent("flaky")
    agent.start([fake_cpu(3)])
    Device.objects.filter(worker="flaky").update(status="offline", offline_since=timezone.now())
    agent.beat()
    assert Device.objects.get(worker="flaky").status == "online"


@pytest.mark.django_db(transaction=True)
def test_heartbeat_thread_beats_until_stopped() -> None:
    from server.devices.models import Device

    agent = DeviceAgent("threaded")
    agent.start([fake_cpu(4)])
    first = Device.objects.get(worker="threaded").last_heartbeat
    agent.start_heartbeat(interval=0.1)
    try:
        wait_for(lambda: Device.objects.get(worker="threaded").last_heartbeat > first, 10, "a heartbeat")
    finally:
        agent.stop_heartbeat()
    assert agent._thread is None
    last = Device.objects.get(worker="threaded").last_heartbeat
    import time

    time.sleep(0.3)
    assert Device.objects.get(worker="threaded").last_heartbeat == last
