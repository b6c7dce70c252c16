"""Devices registered by workers. They are lab-wide: every team sees and uses all of them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import Q

from devicelab.backends.base import Capabilities

# Hardware keys that make two devices interchangeable for a job: same kind and the same values
# for these keys (a job measured on one would measure the same on the other). A worker's
# DeviceInfo.hardware should carry them; a device missing all of them is equivalent to none.
SIGNATURE_KEYS: dict[str, tuple[str, ...]] = {
    "cpu": ("cpu_model", "arch"),
    "opencl": ("gpu_name", "driver"),
    "android": ("model", "soc"),
}


def hardware_signature(kind: str, hardware: dict[str, Any]) -> str:
    """The string two devices of one kind share when their hardware is the same ('' if unknown)."""
    keys = SIGNATURE_KEYS.get(kind, ())
    values = [str(hardware.get(k, "")).strip() for k in keys]
    if not any(values):
        return ""
    return "|".join(f"{k}={v}" for k, v in zip(keys, values, strict=True))


class DeviceKind(models.TextChoices):
    """Which backend drives a device."""

    CPU = "cpu", "Host CPU"
    OPENCL = "opencl", "OpenCL"
    ANDROID = "android", "Android"
    # Known only from measurements imported from elsewhere (e.g. the qed phones): no worker
    # holds it and it runs no jobs, but predictors train on its measurements and serve it.
    IMPORTED = "imported", "Imported measurements"


class DeviceStatus(models.TextChoices):
    """Reachability: online and idle, online and running a job, or not heart-beating."""

    ONLINE = "online", "Online"
    BUSY = "busy", "Busy"
    OFFLINE = "offline", "Offline"


class DeviceQuerySet(models.QuerySet["Device"]):
    """Named queries on devices."""

    def online(self) -> DeviceQuerySet:
        """Devices that heart-beat: idle or busy."""
        return self.filter(status__in=[DeviceStatus.ONLINE, DeviceStatus.BUSY])

    def offline(self) -> DeviceQuerySet:
        """Devices marked offline."""
        return self.filter(status=DeviceStatus.OFFLINE)

    def said_gone(self) -> DeviceQuerySet:
        """Offline devices their machine said left it (unplugged, listed ``offline`` on adb, the
        worker stopping): ``take_devices_offline`` clears their last heartbeat, so a heartbeat that
        names them again does not bring them back; their registration does."""
        return self.offline().filter(last_heartbeat__isnull=True)

    def of_worker(self, worker_name: str) -> DeviceQuerySet:
        """Devices held by the named worker."""
        return self.filter(worker=worker_name)

    def stale(self, now: datetime, after_seconds: int) -> DeviceQuerySet:
        """Devices still marked reachable whose last heartbeat is older than ``after_seconds``."""
        cutoff = now - timedelta(seconds=after_seconds)
        return self.online().filter(Q(last_heartbeat__lt=cutoff) | Q(last_heartbeat__isnull=True))

    def equivalent_to(self, device: Device) -> DeviceQuerySet:
        """Other devices with the same kind and hardware signature (none when it is unknown)."""
        if not device.signature:
            return self.none()
        return self.filter(kind=device.kind, signature=device.signature).exclude(pk=device.pk)


class Device(models.Model):
    """A device a worker holds: a CPU, an OpenCL device or an Android phone.

    ``identity`` is stable across worker restarts, so a device keeps its row (and its queue,
    ``device.<pk>``) when its worker comes back. ``signature`` is derived from ``hardware`` and
    says which devices are interchangeable when one goes offline.
    """

    kind = models.CharField(max_length=16, choices=DeviceKind.choices)
    identity = models.CharField(max_length=255)
    name = models.CharField(max_length=200)
    hardware = models.JSONField(
        default=dict,
        blank=True,
        help_text="CPU model, core clusters and max frequencies, GPU name, driver, "
        "OpenCL version, wave size, where known.",
    )
    capabilities = models.JSONField(
        default=dict,
        blank=True,
        help_text="What the device can run, declared by its backend when it registers: precisions, "
        "thread range, pinnable cores, runtimes, model formats, bounds on runs (devicelab Capabilities).",
    )
    signature = models.CharField(max_length=512, blank=True, editable=False)
    status = models.CharField(max_length=16, choices=DeviceStatus.choices, default=DeviceStatus.ONLINE)
    worker = models.CharField(max_length=200, blank=True, help_text="Name of the worker that holds the device.")
    last_heartbeat = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Empty on an offline device when its machine said it left (see DeviceQuerySet.said_gone).",
    )
    offline_since = models.DateTimeField(null=True, blank=True)
    offline_reason = models.CharField(
        max_length=300,
        blank=True,
        help_text="Why the device went offline: no heartbeat, unplugged, adb 'offline', 'unauthorized'.",
    )
    registered_at = models.DateTimeField(auto_now_add=True)

    objects = DeviceQuerySet.as_manager()

    class Meta:
        ordering = ["kind", "name", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["identity"],
                name="device_identity_unique",
                violation_error_message="A device with this identity is already registered.",
            ),
            models.CheckConstraint(condition=Q(kind__in=DeviceKind.values), name="device_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=DeviceStatus.values), name="device_status_valid"),
        ]
        indexes = [
            # mark_stale_devices_offline: reachable devices whose heartbeat is older than a cutoff.
            models.Index(fields=["status", "last_heartbeat"], name="device_status_heartbeat_idx"),
            # equivalent_to: devices of one kind with the same hardware signature.
            models.Index(fields=["kind", "signature"], name="device_kind_signature_idx"),
            # requeue_orphaned_jobs: the devices of one worker.
            models.Index(fields=["worker"], name="device_worker_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, #{self.pk})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Keep ``signature`` in step with ``hardware``."""
        self.signature = hardware_signature(self.kind, self.hardware or {})
        if kwargs.get("update_fields") is not None and "hardware" in kwargs["update_fields"]:
            kwargs["update_fields"] = {*kwargs["update_fields"], "signature"}
        super().save(*args, **kwargs)

    @property
    def queue(self) -> str:
        """The Celery queue that carries this device's jobs; only its worker consumes it."""
        return f"device.{self.pk}"

    def declared_capabilities(self) -> Capabilities | None:
        """What the device's backend declared it can run; None for a device registered before
        devices declared capabilities (or imported), whose settings are checked on the worker."""
        return Capabilities.from_dict(self.capabilities) if self.capabilities else None

    @property
    def is_online(self) -> bool:
        """Whether the device heart-beats (idle or busy)."""
        return self.status != DeviceStatus.OFFLINE

    def equivalent_to(self, other: Device) -> bool:
        """Whether a job for this device could run on ``other`` with the same meaning."""
        return (
            bool(self.signature)
            and self.pk != other.pk
            and (self.kind, self.signature) == (other.kind, other.signature)
        )
