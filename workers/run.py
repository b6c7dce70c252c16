"""``latencylab worker`` / ``python -m workers.run``: the agent plus one Celery process per device.

Design: one job per device at a time
------------------------------------
The agent (this process) registers the machine's devices and then starts, for each device, one
Celery worker process (``workers.device_process``) that consumes only that device's queue
(``device.<pk>``) with a prefork pool of one process and a prefetch multiplier of one. A device's
queue therefore has one consumer holding at most one message, so its jobs run one after another,
while different devices of the machine measure in parallel. Around the measurement the task also
takes a machine-wide lock on the physical device (``workers.device_lock``), which covers what
the queue layout cannot see (two agents started for the same device by mistake; two agent
instances on one host); a job that finds the device locked is retried with backoff.

Prefork with one child rather than the solo pool: Celery enforces time limits only by killing a
pool process, and a device runtime that crashes on a model then takes down that child, not the
consumer. Each device process has its own pool, so one slow device never holds up another.

What it needs
-------------
A server URL and a lab token (``--server``/``--token``, or ``LATENCYLAB_SERVER_URL`` and
``LATENCYLAB_LAB_TOKEN``) and the broker (``CELERY_BROKER_URL``): no database, no shared folder,
no Django (``workers.lab_settings``). Jobs, model files and results go through the lab API.

Worker runs and lost jobs
-------------------------
Each start of this command is a new run with a fresh token (uuid); claims carry it. At start
the server re-queues jobs that an earlier run of the same worker left running, so a worker killed
with SIGKILL and started again finishes its job exactly once (the claim is a conditional
update: a redelivered message for a job already taken is a no-op). The device processes die
with the agent (parent-death signal), so a killed agent leaves nothing behind.

Shutdown
--------
On SIGTERM or SIGINT the agent asks each device process for a warm shutdown (stop taking
messages, finish the job in hand), waits up to ``shutdown_grace`` seconds, kills what is left,
stops heart-beating and takes its devices offline: a job still unfinished goes back to the queue
and, like the queued jobs, moves to an equivalent online device or fails saying why. A second
signal skips the wait.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType

from workers.agent import DeviceAgent, ServedDevice
from workers.context import WorkerContext
from workers.lab_settings import SERVER_URL_ENV, TOKEN_ENV, LabConfigError, LabSettings
from workers.outbox import Outbox
from workers.phone_tracker import PhoneTracker
from workers.server_api import LabServer, Refused, ServerUnreachable, TokenRevoked

log = logging.getLogger("latencylab.workers")

DEFAULT_SHUTDOWN_GRACE_SECONDS = 30.0
SUPERVISE_INTERVAL_SECONDS = 0.5
# A device process that dies is restarted after this delay, doubled on each quick death.
RESTART_DELAY_SECONDS = (1.0, 60.0)


class DeviceProcess:
    """The Celery worker process of one device, restarted if it dies while the agent runs."""

    def __init__(self, device: ServedDevice, context: WorkerContext, loglevel: str) -> None:
        self.device = device
        self.queue = device.queue
        self.context = context
        self.loglevel = loglevel
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.restart_delay = RESTART_DELAY_SECONDS[0]
        self.restart_at: float | None = None

    def node_name(self) -> str:
        """The Celery node name: unique per device and worker on this host."""
        safe = re.sub(r"[^A-Za-z0-9_.-]", "-", self.context.name)
        return f"{self.queue}.{safe}@{socket.gethostname()}"

    def start(self) -> None:
        """Start the device's Celery worker."""
        # It serves its own device only. With every device of the worker in its context, a message
        # left in its queue for a job since moved to another of them (a phone unplugged) would run
        # that job here, and the other device's process, finding it running under this run's token,
        # would take it for an attempt whose process died and fail it.
        own = WorkerContext(
            self.context.name,
            self.context.token,
            {self.device.pk: self.device.found},
            task_time_limit=self.context.task_time_limit,
        )
        env = {**os.environ, **own.to_env()}
        cmd = [
            sys.executable,
            "-m",
            "workers.device_process",
            "--queue",
            self.queue,
            "--node-name",
            self.node_name(),
            "--agent-pid",
            str(os.getpid()),
            "--loglevel",
            self.loglevel,
        ]
        self.proc = subprocess.Popen(cmd, env=env)
        self.started_at = time.monotonic()
        self.restart_at = None
        log.info("device #%s: Celery worker pid %s consumes queue %r", self.device.pk, self.proc.pid, self.queue)

    def exited(self) -> int | None:
        """The exit code if the process has ended, else None."""
        return None if self.proc is None else self.proc.poll()

    def signal(self, signum: int) -> None:
        """Send a signal if the process still runs."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.send_signal(signum)
            except ProcessLookupError:
                pass

    def schedule_restart(self) -> None:
        """Plan a restart after a back-off that grows while the process keeps dying quickly."""
        if time.monotonic() - self.started_at > RESTART_DELAY_SECONDS[1]:
            self.restart_delay = RESTART_DELAY_SECONDS[0]
        self.restart_at = time.monotonic() + self.restart_delay
        self.restart_delay = min(self.restart_delay * 2, RESTART_DELAY_SECONDS[1])


class _Signals:
    """SIGTERM/SIGINT handling: the first asks for a clean stop, the second for a quick one."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.hurry = threading.Event()

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The signal handler."""
        if self.stop.is_set():
            self.hurry.set()
        self.stop.set()

    def install(self) -> None:
        """Handle SIGTERM and SIGINT in this (the main) thread."""
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)


def _describe_exit(code: int) -> str:
    """A process exit status in words."""
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with status {code}"


def _follow_phones(agent: DeviceAgent, tracker: PhoneTracker, processes: list[DeviceProcess], loglevel: str) -> None:
    """One poll of the adb device list: serve phones that appeared, take away those that left.
    Phones only: the host's CPU and OpenCL devices never change state because of adb."""
    changes = tracker.poll(agent.served("android"))
    if changes.vanished:
        agent.lose_devices(changes.vanished)
    agent.list_waiting(changes.waiting)
    if changes.appeared:
        for d in agent.add_devices(changes.appeared):
            p = DeviceProcess(d, agent.context(), loglevel)
            p.start()
            processes.append(p)


def _supervise(
    agent: DeviceAgent,
    processes: list[DeviceProcess],
    signals: _Signals,
    tracker: PhoneTracker | None = None,
    loglevel: str = "INFO",
) -> None:
    """Keep every device process running (and, with a tracker, follow the phones) until a stop
    is asked for, or the server refuses the lab token."""
    while not signals.stop.wait(SUPERVISE_INTERVAL_SECONDS):
        if agent.revoked.is_set():
            signals.stop.set()
            break
        if tracker is not None and tracker.due():
            try:
                _follow_phones(agent, tracker, processes, loglevel)
            except ServerUnreachable as exc:
                log.warning("following the phones: the server does not answer (%s)", exc)
            except Exception:  # an adb or server hiccup must not stop the worker: the next poll retries
                log.exception("following the phones on the adb server failed")
        for p in processes:
            if p.restart_at is not None:
                if time.monotonic() >= p.restart_at:
                    p.start()
                    agent.process_down(p.device.row.identity, False)
                continue
            code = p.exited()
            if code is None:
                continue
            agent.process_down(p.device.row.identity, True)
            why = f"the Celery process of device #{p.device.pk} {_describe_exit(code)} while measuring the job"
            try:
                failed = agent.fail_running_jobs(p.device.pk, why)
            except (ServerUnreachable, TokenRevoked) as exc:
                log.warning("could not tell the server that device #%s's process died: %s", p.device.pk, exc)
                failed = []
            log.error(
                "%s; jobs retried or failed: %s; restarting",
                why.replace(" while measuring the job", ""),
                failed or "none",
            )
            p.schedule_restart()


def _stop_processes(processes: list[DeviceProcess], grace: float, signals: _Signals) -> None:
    """Warm shutdown for every device process, then SIGKILL after ``grace`` seconds."""
    for p in processes:
        p.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(p.exited() is None for p in processes):
        if time.monotonic() >= deadline or signals.hurry.is_set():
            for p in processes:
                if p.exited() is None:
                    log.warning("device #%s: Celery worker still busy after %.0f s; killing it", p.device.pk, grace)
                p.signal(signal.SIGKILL)
            for p in processes:
                if p.proc is not None:
                    p.proc.wait()
            return
        time.sleep(0.1)


def _phone_tracker(kinds: Sequence[str] | None) -> PhoneTracker | None:
    """A tracker of the adb server's phones when this worker serves phones and an adb server is
    configured or answers; None otherwise."""
    if kinds and "android" not in kinds:
        return None
    from workers.phone_tracker import PhoneTracker, adb_reachable

    if not os.environ.get("LATENCYLAB_ADB_SERVER") and not adb_reachable():
        return None
    try:
        return PhoneTracker()
    except ImportError as e:  # adbutils missing: no phones here
        log.info("not following phones: %s", e)
        return None


# While the server does not answer at start, the worker asks again after these pauses (growing).
START_RETRY_SECONDS = (1.0, 30.0)


def _wait_for_server(server: LabServer, signals: _Signals) -> str | None:
    """The lab machine's name once the server answers (a lab machine may boot before its server);
    None when a stop was asked for meanwhile. ``TokenRevoked`` when the server refuses the token."""
    pause = START_RETRY_SECONDS[0]
    while True:
        try:
            return server.hello().machine
        except ServerUnreachable as e:
            log.warning("the server does not answer yet (%s); asking again in %.0f s", e, pause)
        if signals.stop.wait(pause):
            return None
        pause = min(pause * 2, START_RETRY_SECONDS[1])


def run_worker(
    name: str | None = None,
    instance: str | None = None,
    kinds: Sequence[str] | None = None,
    shutdown_grace: float = DEFAULT_SHUTDOWN_GRACE_SECONDS,
    loglevel: str = "INFO",
    server_url: str | None = None,
    token: str | None = None,
) -> int:
    """Run the agent and one Celery worker per device until SIGTERM/SIGINT (or the server refuses
    the lab token); returns the exit status."""
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=loglevel.upper(), format="[%(asctime)s: %(levelname)s/%(processName)s] %(name)s: %(message)s"
        )
    env = dict(os.environ)
    if server_url:
        env[SERVER_URL_ENV] = server_url
    if token:
        env[TOKEN_ENV] = token
    try:
        settings = LabSettings.from_env(env)
    except LabConfigError as e:
        log.error("%s", e)
        return 2
    # The device processes read the same settings from the environment they inherit.
    os.environ.update({SERVER_URL_ENV: settings.server_url, TOKEN_ENV: settings.token})
    server = LabServer(settings.server_url, settings.token)
    signals = _Signals()
    signals.install()
    try:
        machine = _wait_for_server(server, signals)
    except TokenRevoked as e:
        log.error("the server refused this machine's lab token: %s", e)
        return 3
    if machine is None:
        return 0
    base = name or machine
    worker_name = f"{base}#{instance}" if instance else base
    agent = DeviceAgent(
        server,
        worker_name,
        instance=instance,
        kinds=kinds,
        outbox=Outbox(settings.outbox_dir),
        time_limit_cap=settings.time_limit_cap,
    )
    try:
        context = agent.start()
    except TokenRevoked as e:
        log.error("the server refused this machine's lab token: %s", e)
        return 3
    except Refused as e:
        log.error("%s", e)
        return 2
    except ServerUnreachable as e:
        log.error("the server at %s stopped answering while the devices registered: %s", settings.server_url, e)
        return 4
    tracker = _phone_tracker(kinds)
    if not agent.devices and tracker is None:
        log.error(
            "worker %r found no devices%s; nothing to serve",
            agent.worker_name,
            f" of kinds {list(kinds)}" if kinds else "",
        )
        return 1
    agent.start_heartbeat()
    processes = [DeviceProcess(d, context, loglevel) for d in agent.devices]
    try:
        for p in processes:
            p.start()
        log.info(
            "worker %r (run %s) serves %d device(s) for %s%s",
            agent.worker_name,
            agent.token[:8],
            len(processes),
            settings.server_url,
            " and follows the phones on the adb server" if tracker is not None else "",
        )
        _supervise(agent, processes, signals, tracker, loglevel)
        log.info("worker %r stopping", agent.worker_name)
    finally:
        _stop_processes(processes, shutdown_grace, signals)
        agent.stop_heartbeat()
        if agent.revoked.is_set():
            log.error("worker %r stopped: %s", agent.worker_name, agent.revoked_message)
        else:
            try:
                agent.go_offline()
            except (ServerUnreachable, TokenRevoked) as e:
                log.warning(
                    "could not take the devices offline on the server (%s): they go when their heartbeats stop", e
                )
    return 5 if agent.revoked.is_set() else 0


def build_parser() -> argparse.ArgumentParser:
    """Arguments of ``python -m workers.run`` (``latencylab worker`` takes the same)."""
    parser = argparse.ArgumentParser(
        prog="python -m workers.run",
        description="Serve this machine's devices: register them, heart-beat, and run their profiling jobs.",
    )
    add_arguments(parser)
    return parser


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the worker's options to a parser (shared with the ``latencylab worker`` command)."""
    parser.add_argument("--server", dest="server_url", help=f"the LatencyLab server's URL (default: ${SERVER_URL_ENV})")
    parser.add_argument("--token", help=f"this machine's lab token (default: ${TOKEN_ENV}; latencylab lab add NAME)")
    parser.add_argument(
        "--name",
        help="the lab machine's name, which its devices are registered under (default: the name the server "
        "gave the token: latencylab lab add NAME)",
    )
    parser.add_argument(
        "--instance",
        help="run as a separate instance on this host: its device rows get "
        "'#<instance>' identities, equivalent to the host's other instances",
    )
    parser.add_argument("--kinds", help="comma-separated device kinds to serve (default: every kind found)")
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=DEFAULT_SHUTDOWN_GRACE_SECONDS,
        help="seconds a running job may take to finish on SIGTERM (default: %(default)s)",
    )
    parser.add_argument("--loglevel", default="INFO", help="Celery log level (default: %(default)s)")


def run_from_args(args: argparse.Namespace) -> int:
    """Run the worker with parsed arguments."""
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()] if args.kinds else None
    return run_worker(
        name=args.name,
        instance=args.instance,
        kinds=kinds,
        shutdown_grace=args.shutdown_grace,
        loglevel=args.loglevel,
        server_url=args.server_url,
        token=args.token,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m workers.run``."""
    return run_from_args(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
