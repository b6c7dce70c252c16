"""The device agent: what a lab machine runs so the server knows its devices and their health.

It finds the machine's devices, registers them under the worker's name, takes back the jobs an
earlier run of this worker left running, heart-beats every ``LATENCYLAB_HEARTBEAT_SECONDS``, and
on every beat sweeps the lab for devices whose worker went quiet (any live agent may sweep; the
sweep is a conditional update, so two agents sweeping at once do the work once) and sends again
the messages of its own devices' queued jobs that went missing (the database is the truth).
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from devicelab.backends.base import DeviceInfo
from workers.context import WorkerContext

log = logging.getLogger("latencylab.workers")


def default_worker_name(instance: str | None = None) -> str:
    """The host name, plus ``#<instance>`` for a second agent on the same host."""
    host = socket.gethostname()
    return f"{host}#{instance}" if instance else host


@dataclass(frozen=True)
class ServedDevice:
    """A device as the server knows it (``row``) and as its backend found it (``found``)."""

    pk: int
    row: DeviceInfo
    found: DeviceInfo


def as_instance(found: DeviceInfo, instance: str | None) -> DeviceInfo:
    """The device row an agent instance registers for a device it found.

    Two agents on one host (a host shared by two labs, or a test standing in for two machines)
    would otherwise register the same identity and fight over one row; with an instance name each
    gets its own row, with the same hardware, so the server sees them as equivalent devices.
    """
    if not instance:
        return found
    return replace(found, identity=f"{found.identity}#{instance}", name=f"{found.name} [{instance}]")


def discover_devices(kinds: Iterable[str] | None = None) -> list[DeviceInfo]:
    """The devices every backend finds on this machine, optionally only of some kinds."""
    from devicelab.backends.registry import discover_all

    return discover_all(tuple(kinds) if kinds else None)


class DeviceAgent:
    """Registers a worker's devices and keeps them alive on the server while the worker runs."""

    def __init__(self, worker_name: str, instance: str | None = None, kinds: Iterable[str] | None = None) -> None:
        self.worker_name = worker_name
        self.instance = instance
        self.kinds = tuple(kinds) if kinds else None
        # A fresh token for every run: jobs claimed under an older token are an earlier run's.
        self.token = uuid.uuid4().hex
        self.devices: list[ServedDevice] = []
        # found identity -> whether the device is there now (a phone can leave and come back)
        self.present: dict[str, bool] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def identities(self) -> list[str]:
        """The identities of the device rows this agent holds and that are there now."""
        with self._lock:
            return [d.row.identity for d in self.devices if self.present.get(d.found.identity, True)]

    def served(self) -> dict[str, bool]:
        """Found identity -> present, for every device this agent has served in this run."""
        with self._lock:
            return {d.found.identity: self.present.get(d.found.identity, True) for d in self.devices}

    def add_devices(self, found: list[DeviceInfo]) -> list[ServedDevice]:
        """Serve devices that appeared while the agent runs (a phone plugged in); returns those
        new to this run. A device served before that came back is heart-beaten again at once."""
        from server.devices.services import heartbeat, register_devices

        with self._lock:
            known = {d.found.identity: d for d in self.devices}
        new = [info for info in found if info.identity not in known]
        back = [known[info.identity] for info in found if info.identity in known]
        added: list[ServedDevice] = []
        if new:
            rows = [as_instance(info, self.instance) for info in new]
            registered = register_devices(self.worker_name, rows)
            added = [ServedDevice(dev.pk, row, info) for dev, row, info in zip(registered, rows, new, strict=True)]
        with self._lock:
            self.devices += added
            for d in [*added, *back]:
                self.present[d.found.identity] = True
        if back:
            heartbeat(self.worker_name, [d.row.identity for d in back])
        for d in added:
            log.info("worker %r now holds device #%s %s (%s)", self.worker_name, d.pk, d.row.name, d.row.identity)
        for d in back:
            log.info("device #%s %s is back", d.pk, d.row.name)
        return added

    def lose_devices(self, reasons: dict[str, str]) -> None:
        """Devices this agent serves went away (found identity -> why): they stop heart-beating
        and go offline now, all at once, with their reasons (running jobs are retried, queued
        jobs move to an equivalent device that is still there, or wait)."""
        from server.profiling.services import take_devices_offline

        with self._lock:
            for identity in reasons:
                self.present[identity] = False
            rows = {d.pk: reasons[d.found.identity] for d in self.devices if d.found.identity in reasons}
        take_devices_offline(rows)

    def context(self) -> WorkerContext:
        """What the device processes need to know about this run."""
        return WorkerContext(self.worker_name, self.token, {d.pk: d.found for d in self.devices})

    def start(self, found: list[DeviceInfo] | None = None) -> WorkerContext:
        """Register the devices (found now unless given) and re-queue jobs an earlier run left running."""
        from server.devices.services import register_devices
        from server.profiling.services import requeue_orphaned_jobs, resend_lost_jobs

        found = discover_devices(self.kinds) if found is None else found
        rows = [as_instance(info, self.instance) for info in found]
        registered = register_devices(self.worker_name, rows)
        self.devices = [ServedDevice(dev.pk, row, info) for dev, row, info in zip(registered, rows, found, strict=True)]
        self.present = {d.found.identity: True for d in self.devices}
        for d in self.devices:
            log.info("worker %r holds device #%s %s (%s)", self.worker_name, d.pk, d.row.name, d.row.identity)
        requeued = requeue_orphaned_jobs(self.worker_name, self.token)
        if requeued:
            log.warning(
                "re-queued %d job(s) an earlier run of worker %r left running: %s",
                len(requeued),
                self.worker_name,
                ", ".join(f"#{j.pk}" for j in requeued),
            )
        # Messages an earlier run took and never finished wait in the broker's unacked set until
        # its visibility timeout (an hour or more): wake every queued job of these devices now.
        resend_lost_jobs([d.pk for d in self.devices], force=True, exclude=[j.pk for j in requeued])
        return self.context()

    def beat(self) -> None:
        """One heartbeat for this worker's devices, one sweep of the lab, and the reconciliation
        of this worker's queued jobs with the broker."""
        from server.devices.services import heartbeat
        from server.profiling.services import resend_lost_jobs, sweep_lab

        heartbeat(self.worker_name, self.identities)
        # The sweep's one owner: every live agent runs it on its beat; its writes are conditional
        # updates, so two agents sweeping in the same instant do the work once.
        for device in sweep_lab():
            log.warning("device #%s %s of worker %r went offline (no heartbeat)", device.pk, device.name, device.worker)
        # The database is the truth, messages are hints: a queued job of an idle device of this
        # worker whose message went missing is sent again (its device has one owner: this agent).
        resend_lost_jobs([d.pk for d in self.devices])

    def _beat_forever(self, interval: float) -> None:
        from django.db import close_old_connections

        while not self._stop.wait(interval):
            try:
                self.beat()
            except Exception:  # a database hiccup must not end the heartbeat: the next beat retries
                log.exception("heartbeat of worker %r failed", self.worker_name)
            finally:
                close_old_connections()

    def start_heartbeat(self, interval: float | None = None) -> None:
        """Heart-beat in a background thread every ``interval`` seconds (the setting by default)."""
        from django.conf import settings

        interval = float(interval or settings.LATENCYLAB_HEARTBEAT_SECONDS)
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat_forever, args=(interval,), name="heartbeat", daemon=True)
        self._thread.start()

    def stop_heartbeat(self) -> None:
        """Stop the heartbeat thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def running_jobs(self, device_pk: int) -> list[int]:
        """Ids of the jobs this run is measuring on one device."""
        from server.profiling.models import ProfilingJob

        return list(
            ProfilingJob.objects.running()
            .on_device(device_pk)
            .filter(claimed_by=self.token)
            .values_list("pk", flat=True)
        )

    def fail_running_jobs(self, device_pk: int, reason: str) -> list[int]:
        """Fail this run's running jobs on a device whose process died; returns their ids."""
        from server.profiling.services import fail_job

        return [pk for pk in self.running_jobs(device_pk) if fail_job(pk, self.token, reason)]

    def go_offline(self) -> None:
        """Take this worker's devices offline now, as if their heartbeats had stopped long ago.

        Withdrawing the heartbeat and sweeping sends the devices through the server's one path for
        lost devices: they go offline, a job left running goes back to the queue, and queued jobs
        move to an equivalent online device or wait for this worker to come back (bounded by their
        team's ``offline_wait_seconds``).
        """
        from server.devices.models import Device
        from server.profiling.services import mark_stale_devices_offline

        # Only rows still held by this worker: a device another worker took over stays online.
        rows = [d.row.identity for d in self.devices]
        Device.objects.of_worker(self.worker_name).filter(identity__in=rows).update(last_heartbeat=None)
        gone = mark_stale_devices_offline()
        log.info(
            "worker %r stopped; devices offline: %s", self.worker_name, ", ".join(f"#{d.pk}" for d in gone) or "none"
        )
