"""Lab-machine actions: add one (its token shown once), revoke it, note its calls, list them.

Called alike by the admin, the staff API, ``latencylab lab ...`` on the server host and the lab
token authentication.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from server.devices.models import Device, DeviceStatus
from server.labs.models import NAME_MAX_LENGTH, NAME_PATTERN, LabMachine, machine_name_of_worker
from server.profiling.services import take_devices_offline

log = logging.getLogger(__name__)

# A lab machine calls every few seconds; noting each call would turn every read into a write.
CONTACT_RESOLUTION = timedelta(seconds=10)


def validate_machine_name(name: str) -> str:
    """``name`` stripped, or a ``ValidationError`` that says what a machine name may hold."""
    name = name.strip()
    if not name:
        raise ValidationError({"name": "the lab machine's name is empty"})
    if len(name) > NAME_MAX_LENGTH:
        raise ValidationError({"name": f"the lab machine's name is longer than {NAME_MAX_LENGTH} characters"})
    if not re.fullmatch(NAME_PATTERN, name):
        raise ValidationError(
            {"name": f"{name!r} is not a valid lab machine name: use letters, digits and . - _ only (its host name)"}
        )
    return name


@transaction.atomic
def add_lab_machine(name: str, by: Any = None) -> tuple[LabMachine, str]:
    """Create the identity of lab machine ``name`` and return it with its token, shown only now.

    A name in use by an active machine is refused (revoke it first). A revoked name is given a
    new token on its existing row, which stops being revoked: its devices, registered under the
    same worker name, are its own again, and the old token stays dead (its hash is replaced).
    """
    name = validate_machine_name(name)
    lab = LabMachine.objects.select_for_update().filter(name=name).first()
    if lab is not None and not lab.is_revoked:
        raise ValidationError(
            {
                "name": f"a lab machine named {name!r} already exists; to give it a new token, revoke the old "
                f"one first (latencylab lab revoke {name})"
            }
        )
    if lab is None:
        lab = LabMachine(name=name)
    key = lab.issue_key()
    lab.created_at, lab.created_by = timezone.now(), by
    lab.revoked_at, lab.revoked_reason = None, ""
    try:
        with transaction.atomic():
            lab.save()
    except IntegrityError:  # another request added the same name a moment ago
        raise ValidationError({"name": f"a lab machine named {name!r} already exists"}) from None
    log.info("lab machine %r added by %s", name, by or "the server host")
    return lab, key


def revoke_lab_machine(lab: LabMachine, reason: str = "", by: Any = None) -> list[int]:
    """Revoke ``lab``'s token and take its online devices offline now, saying why, so that their
    running jobs are retried and their queued jobs move to an equivalent device or wait, as for
    any lost device. Revoking a revoked machine keeps its first date and reason. Returns the ids
    of the devices taken offline."""
    now = timezone.now()
    with transaction.atomic():
        revoked = LabMachine.objects.active().filter(pk=lab.pk).update(revoked_at=now, revoked_reason=reason[:300])
        lab.refresh_from_db(fields=["revoked_at", "revoked_reason"])
        if revoked:
            log.warning(
                "lab machine %r revoked by %s%s", lab.name, by or "the server host", f": {reason}" if reason else ""
            )
        online = list(lab.devices().online().values_list("pk", flat=True))
        gone = take_devices_offline({pk: lab.offline_reason() for pk in online}, now=now) if online else []
    return gone


def record_contact(lab: LabMachine, address: str, now: datetime | None = None) -> bool:
    """Note that ``lab`` called from ``address``: at most one write per ``CONTACT_RESOLUTION``
    unless the address changed. Returns whether the row was written."""
    now = now or timezone.now()
    address = address[:255]
    if lab.last_seen_at is not None and now - lab.last_seen_at < CONTACT_RESOLUTION and lab.last_address == address:
        return False
    # Conditional, so that of a burst of calls in several processes only one writes.
    written = (
        LabMachine.objects.filter(pk=lab.pk)
        .filter(Q(last_seen_at__isnull=True) | Q(last_seen_at__lte=now - CONTACT_RESOLUTION) | ~Q(last_address=address))
        .update(last_seen_at=now, last_address=address)
    )
    lab.last_seen_at, lab.last_address = now, address
    return bool(written)


@dataclass(frozen=True)
class LabDevice:
    """A device of a lab machine, as the lists show it."""

    pk: int
    name: str
    kind: str
    status: str
    worker: str
    offline_reason: str


@dataclass(frozen=True)
class LabMachineRow:
    """A lab machine as the lists show it: when it was added and last called, and its devices."""

    machine: LabMachine
    created_by: str
    devices: list[LabDevice] = field(default_factory=list)

    @property
    def device_count(self) -> int:
        """How many devices its agents registered."""
        return len(self.devices)

    @property
    def online_count(self) -> int:
        """How many of them are reachable now."""
        return sum(d.status != DeviceStatus.OFFLINE for d in self.devices)


def devices_by_machine() -> dict[str, list[LabDevice]]:
    """Every worker-held device, under the lab machine name its worker names (one query)."""
    by_name: dict[str, list[LabDevice]] = {}
    rows = Device.objects.exclude(worker="").order_by("name", "pk")
    for pk, name, kind, status, worker, reason in rows.values_list(
        "pk", "name", "kind", "status", "worker", "offline_reason"
    ):
        by_name.setdefault(machine_name_of_worker(worker), []).append(
            LabDevice(pk=pk, name=name, kind=kind, status=status, worker=worker, offline_reason=reason)
        )
    return by_name


def lab_machine_rows() -> list[LabMachineRow]:
    """Every lab machine with who added it and its devices, by name (two queries)."""
    devices = devices_by_machine()
    return [
        LabMachineRow(
            machine=lab,
            created_by=lab.created_by.get_username() if lab.created_by else "",
            devices=devices.get(lab.name, []),
        )
        for lab in LabMachine.objects.select_related("created_by").order_by("name")
    ]
