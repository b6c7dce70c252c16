"""SIGTERM stops a worker cleanly: every process of it exits, it reports status 0, and its device
goes offline as it leaves, not only when a sweep notices its silence."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.waiting import wait_for


@pytest.mark.django_db(transaction=True)
def test_sigterm_stops_the_worker_and_takes_its_device_offline(start_worker: Any) -> None:
    from server.devices.models import Device

    worker = start_worker()
    device = worker.device()
    # The agent, the device's Celery process and its pool processes (one measures, one waits warm).
    wait_for(lambda: len(worker.group_pids()) >= 3, 30, "the device's Celery worker to start its pool")

    asked = time.monotonic()
    assert worker.stop() == 0
    assert worker.group_pids() == []
    assert time.monotonic() - asked < 30
    # No other agent runs and this process does not sweep: the worker took the device offline
    # itself, on its way out.
    device = Device.objects.get(pk=device.pk)
    assert device.status == "offline" and device.offline_since is not None
