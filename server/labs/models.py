"""Lab machines: the computers (with phones or GPUs) that join the server with a lab token."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import connections, models
from django.db.models import Q
from django.utils import timezone

from server.accounts.models import hash_token_key, new_token_key
from server.devices.models import Device, DeviceQuerySet

# What a lab token starts with, so that a person (and a log) can tell it from a user's API token.
LAB_TOKEN_PREFIX = "ll_lab_"
NAME_MAX_LENGTH = 200  # as Device.worker, which holds the name
NAME_PATTERN = r"^[A-Za-z0-9._-]+$"
# A machine may run several agent instances; their devices carry the worker "NAME#instance".
INSTANCE_SEPARATOR = "#"

valid_name = RegexValidator(
    NAME_PATTERN,
    "A lab machine's name is a worker name such as its host name: letters, digits and . - _ only.",
)


class LabMachineQuerySet(models.QuerySet["LabMachine"]):
    """Named queries on lab machines."""

    def active(self) -> LabMachineQuerySet:
        """Machines whose token has not been revoked."""
        return self.filter(revoked_at__isnull=True)

    def revoked(self) -> LabMachineQuerySet:
        """Machines whose token was revoked."""
        return self.filter(revoked_at__isnull=False)

    def holding_key(self, key: str) -> LabMachine | None:
        """The machine (active or revoked) whose token is ``key``, or None; read with plain SQL:
        every lab call authenticates so, and building the ORM's query took longer than the
        database's answer (0.6 ms against 0.25)."""
        db = connections[self.db]
        quote = db.ops.quote_name
        columns = ", ".join(quote(f.column) for f in self.model._meta.concrete_fields)
        sql = f"SELECT {columns} FROM {quote(self.model._meta.db_table)} WHERE {quote('key_hash')} = %s"
        return next(iter(self.raw(sql, [hash_token_key(key)])), None)


class LabMachine(models.Model):
    """A lab machine's identity: its worker name and its lab token, stored only as a SHA-256.

    ``Authorization: Lab <token>`` presents the token (``server/labs/authentication.py``). A
    revoked machine keeps its row, so that its next call is told why it was refused.
    """

    name = models.CharField(
        max_length=NAME_MAX_LENGTH,
        unique=True,
        validators=[valid_name],
        help_text="The worker name its devices carry (its host name, say): letters, digits and . - _ only.",
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now, help_text="When its current token was issued.")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="lab_machines_added",
        help_text="Who issued its current token (empty: the command line on the server host).",
    )
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=300, blank=True)
    last_seen_at = models.DateTimeField(null=True, blank=True, help_text="Its last call, to within ~10 s.")
    last_address = models.CharField(
        max_length=255, blank=True, help_text="The address of its last call, as the API's throttles see it."
    )

    objects = LabMachineQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(name__regex=NAME_PATTERN),
                name="labmachine_name_valid",
                violation_error_message="A lab machine's name uses letters, digits and . - _ only.",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_revoked(self) -> bool:
        """Whether its token was revoked."""
        return self.revoked_at is not None

    def issue_key(self) -> str:
        """Give the machine a new token (unsaved): the plain key is returned once, only its hash kept."""
        key = new_token_key(LAB_TOKEN_PREFIX)
        self.key_hash = hash_token_key(key)
        return key

    def owns_worker(self, worker_name: str) -> bool:
        """Whether a device's ``worker`` is this machine's: its name, or ``NAME#instance``."""
        return worker_name == self.name or worker_name.startswith(self.name + INSTANCE_SEPARATOR)

    def held_by(self, field: str = "worker") -> Q:
        """Rows whose ``field`` (a worker name) is this machine's: ``NAME`` or ``NAME#instance``."""
        return Q(**{field: self.name}) | Q(**{f"{field}__startswith": self.name + INSTANCE_SEPARATOR})

    def devices(self) -> DeviceQuerySet:
        """The devices its agents registered (worker ``NAME`` or ``NAME#instance``)."""
        return Device.objects.filter(self.held_by())

    def offline_reason(self) -> str:
        """Why its devices went offline when its token was revoked."""
        return f"the lab token of machine '{self.name}' was revoked"

    def revocation_message(self) -> str:
        """What a call with its revoked token is told (the worker logs it and stops)."""
        assert self.revoked_at is not None
        when = self.revoked_at.isoformat(timespec="seconds")
        reason = f": {self.revoked_reason}" if self.revoked_reason else ""
        return (
            f"the lab token of machine '{self.name}' was revoked on {when}{reason}; "
            f"ask the server's admin for a new one (latencylab lab add {self.name})"
        )


def machine_name_of_worker(worker_name: str) -> str:
    """The lab machine name a device's ``worker`` names (``NAME#instance`` -> ``NAME``)."""
    return worker_name.split(INSTANCE_SEPARATOR, 1)[0]
