"""The device agent: what a lab machine runs so the server knows its devices and their health.

It finds the machine's devices and registers them with the server under the machine's name (the
server re-queues what an earlier run of the machine left running), then heart-beats every
``heartbeat_seconds`` the server asked for. On each beat the server sweeps the lab for devices
whose machine went quiet and sends again the messages of this machine's queued jobs that went
missing (the database is the truth). Everything goes through the lab API (``workers.server_api``):
the agent holds a server URL and a lab token, nothing else of the server's.

A revoked token ends the run: the server's message is logged and the worker stops.
"""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from devicelab.backends.base import DeviceInfo
from devicelab.lab_protocol import DevicesGone, Ending, Heartbeat, Registered, Registration
from workers.context import WorkerContext
from workers.outbox import Outbox
from workers.server_api import LabServer, ServerUnreachable, TokenRevoked

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
    queue: str = ""  # the Celery queue its jobs arrive on


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
    """Registers a machine's devices with the server and keeps them alive while the worker runs."""

    def __init__(
        self,
        server: LabServer,
        worker_name: str,
        instance: str | None = None,
        kinds: Iterable[str] | None = None,
        outbox: Outbox | None = None,
        time_limit_cap: int | None = None,
    ) -> None:
        self.server = server
        self.worker_name = worker_name
        self.instance = instance
        self.kinds = tuple(kinds) if kinds else None
        self.outbox = outbox
        self.time_limit_cap = time_limit_cap
        # A fresh token for every run: jobs claimed under an older token are an earlier run's.
        self.token = uuid.uuid4().hex
        self.devices: list[ServedDevice] = []
        # found identity -> whether the device is there now (a phone can leave and come back)
        self.present: dict[str, bool] = {}
        self.waiting: dict[str, str] = {}  # found identity -> why, of the phones listed but not ready
        self.heartbeat_seconds = 10.0
        self.task_time_limit = 3600
        # Set when the server refused the token: the worker stops.
        self.revoked = threading.Event()
        self.revoked_message = ""
        self._lock = threading.Lock()
        # row identities of devices whose measuring process is down, waiting to be restarted
        self.restarting: set[str] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def identities(self) -> list[str]:
        """The identities of the device rows this agent holds and that are there now."""
        with self._lock:
            return [d.row.identity for d in self.devices if self.present.get(d.found.identity, True)]

    def served(self, kind: str | None = None) -> dict[str, bool]:
        """Found identity -> present, for every device (of ``kind``) this agent has served in this run."""
        with self._lock:
            return {
                d.found.identity: self.present.get(d.found.identity, True)
                for d in self.devices
                if kind is None or d.found.kind == kind
            }

    def _register(self, found: list[DeviceInfo], start: bool) -> tuple[Registered, list[ServedDevice]]:
        rows = [as_instance(info, self.instance) for info in found]
        answer = self.server.register(Registration(self.worker_name, self.token, rows, start=start))
        by_identity = {d.identity: d for d in answer.devices}
        served = [
            ServedDevice(by_identity[row.identity].pk, row, info, by_identity[row.identity].queue)
            for row, info in zip(rows, found, strict=True)
        ]
        self.heartbeat_seconds = float(answer.heartbeat_seconds)
        cap = self.time_limit_cap
        self.task_time_limit = min(answer.task_time_limit, cap) if cap else answer.task_time_limit
        return answer, served

    def add_devices(self, found: list[DeviceInfo]) -> list[ServedDevice]:
        """Serve devices that appeared while the agent runs (a phone plugged in); returns those
        new to this run. A device served before that came back is heart-beaten again at once."""
        with self._lock:
            known = {d.found.identity: d for d in self.devices}
        new = [info for info in found if info.identity not in known]
        back = [known[info.identity] for info in found if info.identity in known]
        added: list[ServedDevice] = []
        if new:
            _, added = self._register(new, start=False)
        with self._lock:
            self.devices += added
            for d in [*added, *back]:
                self.present[d.found.identity] = True
        if back:
            # Registered anew (a device its machine said was gone comes back only so), then
            # heart-beaten, which sends the messages of its waiting jobs.
            self._register([d.found for d in back], start=False)
            self.server.heartbeat(Heartbeat(self.worker_name, self.token, [d.row.identity for d in back]))
        for d in added:
            log.info("worker %r now holds device #%s %s (%s)", self.worker_name, d.pk, d.row.name, d.row.identity)
        for d in back:
            log.info("device #%s %s is back", d.pk, d.row.name)
        return added

    def list_waiting(self, waiting: dict[str, tuple[DeviceInfo, str]]) -> None:
        """Phones listed but not ready, never served in this run (found identity -> its row and
        why): registered and taken offline at once with their reason, so that the dashboard lists
        them (an ``unauthorized`` phone until its prompt is accepted); a phone is announced again
        only when its reason changes. Not served: no process, no heartbeat, until it is ready."""
        with self._lock:
            fresh = {i: w for i, w in waiting.items() if self.waiting.get(i) != w[1]}
            for identity in list(self.waiting):
                if identity not in waiting:
                    del self.waiting[identity]
        if not fresh:
            return
        _, rows = self._register([info for info, _ in fresh.values()], start=False)
        self.server.devices_gone(
            DevicesGone(self.worker_name, self.token, {str(d.pk): fresh[d.found.identity][1] for d in rows})
        )
        with self._lock:
            for identity, (_, reason) in fresh.items():
                self.waiting[identity] = reason
        for d in rows:
            log.warning("phone %s is listed but not ready: %s", d.row.name, fresh[d.found.identity][1])

    def lose_devices(self, reasons: dict[str, str]) -> None:
        """Devices this agent serves went away (found identity -> why): they stop heart-beating
        and go offline now, all at once, with their reasons (running jobs are retried, queued
        jobs move to an equivalent device that is still there, or wait)."""
        with self._lock:
            for identity in reasons:
                self.present[identity] = False
            rows = {str(d.pk): reasons[d.found.identity] for d in self.devices if d.found.identity in reasons}
        self.server.devices_gone(DevicesGone(self.worker_name, self.token, rows))

    def context(self) -> WorkerContext:
        """What the device processes need to know about this run."""
        return WorkerContext(
            self.worker_name, self.token, {d.pk: d.found for d in self.devices}, task_time_limit=self.task_time_limit
        )

    def start(self, found: list[DeviceInfo] | None = None) -> WorkerContext:
        """Post the results an earlier run left waiting, then register the devices (found now
        unless given); the server re-queues what an earlier run left running."""
        if self.outbox is not None:
            # Before registering: the registration re-queues the earlier run's jobs, and their
            # results would then be refused.
            left = self.outbox.round(self.server)
            if left:
                log.warning("%d result(s) of an earlier run still wait for the server", left)
        found = discover_devices(self.kinds) if found is None else found
        answer, self.devices = self._register(found, start=True)
        self.present = {d.found.identity: True for d in self.devices}
        for d in self.devices:
            log.info("worker %r holds device #%s %s (%s)", self.worker_name, d.pk, d.row.name, d.row.identity)
        if answer.requeued:
            log.warning(
                "re-queued %d job(s) an earlier run of worker %r left running: %s",
                len(answer.requeued),
                self.worker_name,
                ", ".join(f"#{pk}" for pk in answer.requeued),
            )
        return self.context()

    def beat(self) -> None:
        """One heartbeat for this worker's devices (the server sweeps the lab and sends again the
        messages of this machine's queued jobs that went missing), and a round of posting the
        results waiting on the disk when one is due."""
        with self._lock:
            restarting = sorted(self.restarting)
        answer = self.server.heartbeat(Heartbeat(self.worker_name, self.token, self.identities, restarting))
        if answer.gone:
            self._held_gone(set(answer.gone))
        if self.outbox is not None and self.outbox.due():
            self.outbox.round(self.server)

    def _held_gone(self, identities: set[str]) -> None:
        """The server holds these devices offline because this machine said they left it (a run
        found its phone unplugged) while this agent still counts them as there. A phone is looked
        for again on the adb list at the tracker's next poll, and registered anew if it is ready
        (a glitch the poll never saw must not leave it offline for good); a device of another kind
        cannot be unplugged, and is registered anew now."""
        with self._lock:
            held = [
                d for d in self.devices if d.row.identity in identities and self.present.get(d.found.identity, True)
            ]
            for d in held:
                if d.found.kind == "android":
                    self.present[d.found.identity] = False
        if held:
            log.warning(
                "the server holds device(s) %s offline as gone; looking for them again",
                ", ".join(f"#{d.pk} {d.row.name}" for d in held),
            )
        others = [d.found for d in held if d.found.kind != "android"]
        if others:
            self.add_devices(others)

    def _beat_forever(self, interval: float) -> None:
        missed = 0
        while not self._stop.wait(interval):
            try:
                self.beat()
                if missed:
                    log.info("the server answers again after %d missed heartbeat(s)", missed)
                missed = 0
            except TokenRevoked as exc:
                self.revoked_message = str(exc)
                log.error("the server refused this machine's lab token: %s; stopping", exc)
                self.revoked.set()
                return
            except ServerUnreachable as exc:
                # Said when it starts, then once a minute: a long outage must not flood the log.
                missed += 1
                if missed == 1 or missed % max(1, int(60 / interval)) == 0:
                    log.warning(
                        "heartbeat of worker %r: the server does not answer (%s); %d beat(s) missed",
                        self.worker_name,
                        exc,
                        missed,
                    )
                continue
            except Exception:  # a hiccup must not end the heartbeat: the next beat retries
                log.exception("heartbeat of worker %r failed", self.worker_name)

    def start_heartbeat(self, interval: float | None = None) -> None:
        """Heart-beat in a background thread every ``interval`` seconds (the server's by default)."""
        interval = float(interval or self.heartbeat_seconds)
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat_forever, args=(interval,), name="heartbeat", daemon=True)
        self._thread.start()

    def stop_heartbeat(self) -> None:
        """Stop the heartbeat thread and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def process_down(self, identity: str, down: bool) -> None:
        """Note that a device's measuring process is down (waiting out its restart back-off) or up
        again; heartbeats say so, and the server sends no lost message of its again meanwhile."""
        with self._lock:
            if down:
                self.restarting.add(identity)
            else:
                self.restarting.discard(identity)

    def fail_running_jobs(self, device_pk: int, reason: str) -> list[int]:
        """End this run's running jobs on a device whose process died (the server retries a job
        after the first death of its measuring process, fails it after a second); their ids."""
        return self.server.fail_running(device_pk, Ending(self.token, reason)).jobs

    def go_offline(self) -> None:
        """Take this worker's devices offline now: a job still running goes back to the queue,
        and queued jobs move to an equivalent online device or wait for this worker to come back
        (bounded by their team's ``offline_wait_seconds``)."""
        reason = f"worker {self.worker_name!r} stopped"
        rows = {str(d.pk): reason for d in self.devices}
        if not rows:
            return
        gone = self.server.devices_gone(DevicesGone(self.worker_name, self.token, rows)).jobs
        log.info(
            "worker %r stopped; devices offline: %s", self.worker_name, ", ".join(f"#{pk}" for pk in gone) or "none"
        )
