"""The lab machine of the server's own host: the worker ``latencylab up`` and ``demo`` start uses
the same lab protocol as any other, with a token made for it at each start."""

from __future__ import annotations

from django.db import transaction

from server.labs.models import LabMachine
from server.labs.services import add_lab_machine
from server.profiling.services import take_devices_offline


@transaction.atomic
def local_lab_token(name: str) -> str:
    """A fresh token for the lab machine ``name`` on the server's host (created if new; a revoked
    one is taken back into service: the local worker is the server's own). The token of its
    previous start stops working."""
    lab = LabMachine.objects.select_for_update().filter(name=name).first()
    if lab is None:
        return add_lab_machine(name)[1]
    key = lab.issue_key()
    lab.revoked_at = None
    lab.revoked_reason = ""
    lab.save(update_fields=["key_hash", "revoked_at", "revoked_reason"])
    return key


def take_local_devices_offline(name: str, reason: str) -> list[int]:
    """Devices of the local lab machine ``name`` still online once its worker has stopped (it was
    killed, died, or could not reach the web server on its way out) go offline now with
    ``reason``, as the worker's own stop does; returns their ids."""
    lab = LabMachine.objects.filter(name=name).first()
    if lab is None:
        return []
    still = list(lab.devices().online().values_list("pk", flat=True))
    return take_devices_offline(dict.fromkeys(still, reason))
