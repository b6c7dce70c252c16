"""Device actions that workers call: registering what they found, and heart-beating."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from devicelab.backends.base import DeviceInfo
from server.devices.models import Device, DeviceKind, DeviceStatus


@transaction.atomic
def register_devices(worker_name: str, infos: Iterable[DeviceInfo]) -> list[Device]:
    """Create or update the rows of the devices a worker found; they come online, held by it.

    A device keeps its row (matched by ``identity``) across restarts and across workers, so a
    phone moved to another machine keeps its id and history.
    """
    now = timezone.now()
    devices = []
    for info in infos:
        if info.kind not in DeviceKind.values:
            raise ValueError(
                f"device {info.identity!r} has unknown kind {info.kind!r}; expected one of {DeviceKind.values}"
            )
        device, _ = Device.objects.select_for_update().update_or_create(
            identity=info.identity,
            defaults={
                "kind": info.kind,
                "name": info.name,
                "hardware": dict(info.hardware),
                "capabilities": info.capabilities.as_dict() if info.capabilities is not None else {},
                "worker": worker_name,
                "status": DeviceStatus.ONLINE,
                "last_heartbeat": now,
                "offline_since": None,
                "offline_reason": "",
            },
        )
        devices.append(device)
    return devices


def heartbeat(worker_name: str, device_identities: Iterable[str], now: datetime | None = None) -> tuple[int, list[str]]:
    """Record that a worker still holds these devices; returns how many rows it refreshed, and
    the identities of the named devices that stay offline because the machine said they left it.

    Devices that went offline for want of a heartbeat come back online. A device its machine said
    was gone (``Device.said_gone``) does not: the heartbeat's list may predate the unplug that a
    run found, and only the device's registration brings it back. The lab-wide sweep of stale
    devices runs elsewhere (``server.profiling.services.sweep_lab``).
    """
    now = now or timezone.now()
    named = Device.objects.of_worker(worker_name).filter(identity__in=list(device_identities))
    # Conditional updates: a device said gone in the meantime is left as it is.
    alive = named.exclude(status=DeviceStatus.OFFLINE, last_heartbeat__isnull=True)
    refreshed = alive.update(last_heartbeat=now)
    alive.filter(status=DeviceStatus.OFFLINE).update(status=DeviceStatus.ONLINE, offline_since=None, offline_reason="")
    return refreshed, sorted(named.said_gone().values_list("identity", flat=True))
