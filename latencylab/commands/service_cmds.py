"""The service commands: ``user add``, ``worker``, ``trainer``, ``up``, ``demo`` and ``manage``."""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from latencylab.commands.demo_showcase import HOST_CELLS
from latencylab.commands.output import fail, print_table
from latencylab.commands.server_host import server_host_only

DEMO_MODELS = ("mobilenet_v2", "squeezenet_1_1", "resnet18", "mobilenet_v3_small")
DEMO_SETTINGS = {"threads": 1, "warmup_runs": 3, "runs": 20}


def add_parsers(sub: Any) -> None:
    """Register the service commands."""
    user = sub.add_parser("user", help="API users and tokens")
    usub = user.add_subparsers(dest="user_command", required=True, metavar="SUBCOMMAND")
    add = usub.add_parser("add", help="create a user in a team and print an API token")
    add.add_argument("name")
    add.add_argument("--team", required=True)
    add.add_argument(
        "--password",
        action="store_true",
        help="also set a password for the web dashboard (from LATENCYLAB_PASSWORD, else prompted)",
    )
    add.set_defaults(func=add_user)

    from workers.run import add_arguments as add_worker_arguments

    worker = sub.add_parser("worker", help="run a Celery worker and the device agent for this machine")
    add_worker_arguments(worker)
    worker.set_defaults(func=run_worker)

    from server.trainer import add_arguments as add_trainer_arguments

    trainer = sub.add_parser("trainer", help="run the Celery process that trains latency predictors")
    add_trainer_arguments(trainer)
    trainer.set_defaults(func=run_trainer)

    for name, helptext in (
        ("up", "web server, one worker and the trainer in the foreground"),
        ("demo", "like up, plus demo and admin log-ins, profiles of zoo models, the qed phones, a phone predictor"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--host", default=os.environ.get("LATENCYLAB_HOST", "127.0.0.1"))
        p.add_argument("--port", type=int, default=int(os.environ.get("LATENCYLAB_PORT", "8000")))
        p.set_defaults(func=up if name == "up" else demo)
    demo_parser = sub.choices["demo"]
    demo_parser.add_argument("--models", default=",".join(DEMO_MODELS), help="comma-separated zoo models")
    demo_parser.add_argument("--runs", type=int, default=DEMO_SETTINGS["runs"], help="measured runs per model")
    demo_parser.add_argument(
        "--cells",
        type=int,
        default=HOST_CELLS,
        help="NB-201 cells profiled on this CPU to train its predictor for the README's NAS loop (0: none)",
    )
    demo_parser.add_argument("--exit", action="store_true", help="stop once the demo results are in")

    manage = sub.add_parser("manage", help="a Django management command (migrate, createsuperuser, ...)")
    manage.add_argument("args", nargs=argparse.REMAINDER)
    manage.set_defaults(func=run_manage)


def setup_django() -> None:
    """Configure Django from the environment (embedded defaults when unset)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    import django

    django.setup()


def migrate() -> None:
    """Bring the database schema up to date."""
    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)


def _read_password() -> str | None:
    """The dashboard password: LATENCYLAB_PASSWORD, else typed twice at a terminal; None if neither."""
    password = os.environ.get("LATENCYLAB_PASSWORD")
    if password:
        return password
    if not sys.stdin.isatty():
        return None
    import getpass

    first = getpass.getpass("password: ")
    return first if getpass.getpass("again: ") == first else ""


def add_user(args: argparse.Namespace) -> int:
    """``latencylab user add NAME --team TEAM [--password]``."""
    if (refused := server_host_only("user add")) is not None:
        return refused
    setup_django()
    from django.contrib.auth.password_validation import validate_password
    from django.core.exceptions import ValidationError

    from server.accounts.services import create_user_with_token

    password = None
    if args.password:
        password = _read_password()
        if password is None:
            return fail("--password: set LATENCYLAB_PASSWORD or run in a terminal to type it")
        if not password:
            return fail("--password: the two passwords differ")
        try:
            validate_password(password)
        except ValidationError as exc:
            return fail("--password: " + " ".join(exc.messages))
    migrate()
    try:
        user, token = create_user_with_token(args.name, args.team)
    except ValidationError as exc:
        return fail("; ".join(exc.messages))
    print(f"user {user.username} in team {args.team}")
    print(f"token: {token}")
    if password is not None:
        user.set_password(password)
        user.save(update_fields=["password"])
        print("password set: log in to the dashboard at /accounts/login/")
    return 0


def run_worker(args: argparse.Namespace) -> int:
    """``latencylab worker``: the device agent and a Celery worker for this machine's devices.

    A lab machine's command: it needs the server's URL, its lab token and the broker, never the
    server's database or settings (``workers.lab_settings``)."""
    from workers.run import run_from_args

    return run_from_args(args)


def run_trainer(args: argparse.Namespace) -> int:
    """``latencylab trainer``: the Celery process that trains predictors (queue ``predictors``)."""
    setup_django()
    from server.trainer import run_from_args

    migrate()
    return run_from_args(args)


def run_manage(args: argparse.Namespace) -> int:
    """``latencylab manage ...``: Django's manage.py."""
    if (refused := server_host_only("manage")) is not None:
        return refused
    setup_django()
    from django.core.management import execute_from_command_line

    execute_from_command_line(["latencylab manage", *args.args])
    return 0


def _die_with_parent() -> None:
    """In a child between fork and exec: a session of its own, so that a terminal's Ctrl-C
    reaches ``up`` alone, which stops the children in order (the worker first, while the web
    server can still take its devices offline); and SIGTERM when ``up`` dies, even by SIGKILL
    (Linux)."""
    from billiard.util import set_pdeathsig

    os.setsid()
    set_pdeathsig(signal.SIGTERM)


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL every process left in ``proc``'s session, ``proc`` included, and reap ``proc``.

    Each child leads a session of its own (``_die_with_parent``), so its process group id is its
    pid: gunicorn's workers are the master's children, and one that ignored SIGTERM (or was
    stopped) outlived a killed master, holding the port and answering nothing."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the session is empty: everything in it stopped in time
    proc.wait()


def _port_taken(host: str, port: int) -> str | None:
    """Why ``up`` cannot serve on ``host:port`` (another process listens there), or None.

    Checked before anything starts: gunicorn would otherwise retry "Connection in use" and exit,
    and be started again after every back-off, for ever."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As gunicorn binds: a connection of an earlier server in TIME_WAIT is no obstacle.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            return None
        except OSError as exc:
            reason = exc.strerror or str(exc)
    return f"port {port} on {host} is taken ({reason}){_port_holder(port)}; stop it or choose another with --port"


def _port_holder(port: int) -> str:
    """``: held by NAME (pid N, COMMAND)`` for the process listening on ``port``, if psutil can tell."""
    import psutil

    try:
        connections = psutil.net_connections(kind="inet")
    except psutil.Error:
        return ""
    for conn in connections:
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            try:
                process = psutil.Process(conn.pid)
                command = " ".join(" ".join(process.cmdline()).split())[:120]
                return f": held by {process.name()} (pid {conn.pid}, {command})"
            except psutil.Error:
                return f": held by pid {conn.pid}"
    return ""


class Service:
    """The web server, one worker and the trainer as child processes, stopped together.

    SIGINT and SIGTERM are handled explicitly (a shell starts background jobs with SIGINT
    ignored, so Python's KeyboardInterrupt cannot be relied on): either stops the children, then
    ``up`` exits. A child that dies on its own is started again after a back-off, so one crashed
    worker does not take the web server down; a child of a killed ``up`` gets SIGTERM from the
    kernel (parent-death signal), so nothing is left running.
    """

    RESTART_DELAY_SECONDS = (1.0, 30.0)

    def __init__(self, host: str, port: int, worker_loglevel: str = "INFO") -> None:
        self.host, self.port = host, port
        self.worker_loglevel = worker_loglevel
        self.commands: dict[str, list[str]] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.stopping = threading.Event()
        self._restart_at: dict[str, float] = {}
        self._delay: dict[str, float] = {}

    def install_signal_handlers(self) -> None:
        """SIGINT and SIGTERM ask for a stop (a second one is the same request)."""

        def handle(signum: int, frame: Any) -> None:
            self.stopping.set()

        signal.signal(signal.SIGINT, handle)
        signal.signal(signal.SIGTERM, handle)

    def start(self) -> None:
        """Start gunicorn, a worker and the trainer; they inherit this process's environment."""
        self.install_signal_handlers()
        web = [
            sys.executable,
            "-m",
            "gunicorn",
            "server.wsgi:application",
            "--bind",
            f"{self.host}:{self.port}",
            # gthread workers: one slow request holds a thread, not a process (server/gunicorn_conf.py).
            "--config",
            "python:server.gunicorn_conf",
            "--access-logfile",
            "-",
            "--log-level",
            "warning",
        ]
        # The worker's grace for a running job is shorter than stop()'s SIGKILL deadline.
        worker = [
            sys.executable,
            "-m",
            "latencylab.cli",
            "worker",
            "--shutdown-grace",
            "15",
            "--loglevel",
            self.worker_loglevel,
        ]
        # Predictors train in their own process, never in a device's (it would disturb measurements).
        trainer = [sys.executable, "-m", "latencylab.cli", "trainer", "--loglevel", self.worker_loglevel]
        self.commands = {"web": web, "worker": worker, "trainer": trainer}
        for name in self.commands:
            self._spawn(name)

    def _spawn(self, name: str) -> None:
        from server.env import reported_defaults

        # The children read the same embedded defaults (and var/secret_key) as this process,
        # which has said so once already.
        env = dict(os.environ, DJANGO_SETTINGS_MODULE="server.settings", **reported_defaults())
        if name == "worker":
            env = self.lab_worker_env(env)
        self.procs[name] = subprocess.Popen(self.commands[name], env=env, preexec_fn=_die_with_parent)
        self._restart_at.pop(name, None)

    def lab_worker_env(self, env: dict[str, str]) -> dict[str, str]:
        """The local worker's environment: a lab machine's (the server's URL, a lab token made for
        it, the broker), without the server's database or secret: it speaks the lab protocol like
        a machine in another building."""
        from django.conf import settings

        from server.labs.local import local_lab_token
        from workers.agent import default_worker_name

        lab = {k: v for k, v in env.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        lab["LATENCYLAB_SERVER_URL"] = f"http://{host}:{self.port}"
        lab["LATENCYLAB_LAB_TOKEN"] = local_lab_token(default_worker_name())
        lab["CELERY_BROKER_URL"] = str(settings.CELERY_BROKER_URL)
        if str(settings.CELERY_BROKER_URL).startswith("filesystem:"):
            lab["LATENCYLAB_BROKER_DIR"] = str(settings.BROKER_DIR)
        lab.setdefault("LATENCYLAB_LAB_DIR", str(settings.VAR_DIR / "lab"))
        return lab

    def alive(self) -> bool:
        """Whether every child runs now."""
        return all(p.poll() is None for p in self.procs.values())

    def supervise(self) -> None:
        """Start again, after a growing back-off, any child that died on its own."""
        now = time.monotonic()
        for name, proc in self.procs.items():
            if name in self._restart_at:
                if now >= self._restart_at[name]:
                    print(f"up: starting the {name} again", file=sys.stderr, flush=True)
                    self._spawn(name)
                continue
            code = proc.poll()
            if code is None:
                continue
            delay = self._delay.get(name, self.RESTART_DELAY_SECONDS[0])
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            print(f"up: the {name} {how}; starting it again in {delay:.0f} s", file=sys.stderr, flush=True)
            self._restart_at[name] = now + delay
            self._delay[name] = min(delay * 2, self.RESTART_DELAY_SECONDS[1])

    # Seconds a child has to stop after its SIGTERM (the worker's own grace for a job is 15 s).
    # gunicorn's graceful_timeout is longer (server/gunicorn_conf.py): a worker that ignores its
    # master's SIGTERM is killed here, with the master's whole session.
    STOP_GRACE_SECONDS = 20.0

    def stop(self) -> None:
        """SIGTERM the worker and wait for it (it finishes its job and takes its devices offline
        through the web server), then the web server and the trainer; once each child has exited
        or 20 s have passed since its SIGTERM, SIGKILL whatever is left of its session (gunicorn's
        workers, a device process). Devices the worker left online (it was dead, killed, or
        the web server did not answer its last call) go offline here, so none is shown online
        once ``up`` has stopped."""
        for group in (["worker"], [name for name in self.procs if name != "worker"]):
            procs = [self.procs[name] for name in group if name in self.procs]
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + self.STOP_GRACE_SECONDS
            for p in procs:
                try:
                    p.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
            for p in procs:
                _kill_session(p)
            if group == ["worker"] and "worker" in self.procs:
                self._take_worker_devices_offline()

    def _take_worker_devices_offline(self) -> None:
        from server.labs.local import take_local_devices_offline
        from workers.agent import default_worker_name

        name = default_worker_name()
        left = take_local_devices_offline(name, f"worker {name!r} stopped with latencylab up")
        if left:
            print(
                f"up: the worker left device(s) {', '.join(f'#{pk}' for pk in left)} online; taken offline",
                file=sys.stderr,
                flush=True,
            )

    def wait(self) -> int:
        """Keep the children running until SIGINT or SIGTERM; then stop them all."""
        try:
            while not self.stopping.wait(0.5):
                self.supervise()
            return 0
        finally:
            self.stop()


# A probe's answer may queue behind a busy server's requests (a demo's uploads and predictions):
# a slow answer is still an answer. The deadline, not one probe, decides that the server is down.
HEALTH_PROBE_TIMEOUT_SECONDS = 30.0


def _health_answers(url: str, timeout: float) -> bool:
    """Whether the web server at ``url`` answers: 200, or any error but 503 (the database is not
    reachable yet) from a server that answers all the same (a proxy's 4xx, an older server)."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (our own server)
            response.read()
        return True
    except urllib.error.HTTPError as exc:
        return exc.code != 503
    except OSError:
        return False


def _probe_into(url: str, timeout: float, answers: list[bool], done: threading.Event) -> None:
    """``_health_answers`` in a thread: its answer appended to ``answers``, then ``done`` set."""
    try:
        answers.append(_health_answers(url, timeout))
    finally:
        done.set()


def _wait_for_http(host: str, port: int, timeout: float = 120, service: Service | None = None) -> None:
    """Until the web server answers its health check (``/api/health/``: a few bytes, one
    ``SELECT 1``); ``RuntimeError`` after ``timeout`` seconds, ``Interrupted`` on a stop request.

    Each probe runs in a thread of its own, so that a stop asked for during a slow probe is
    heeded at once rather than after the probe's generous timeout."""
    url = f"http://{host}:{port}/api/health/"
    deadline = time.monotonic() + timeout
    while True:
        probe_timeout = max(1.0, min(HEALTH_PROBE_TIMEOUT_SECONDS, deadline - time.monotonic()))
        answers: list[bool] = []
        done = threading.Event()
        threading.Thread(
            target=_probe_into, args=(url, probe_timeout, answers, done), name="up-health-probe", daemon=True
        ).start()
        while not done.wait(0.1):
            if service is not None:
                if service.stopping.is_set():
                    raise Interrupted("interrupted")
                service.supervise()
        if answers and answers[0]:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the web server did not answer on {host}:{port} within {timeout:.0f} s")
        _pause(service)


def _pause(service: Service | None) -> None:
    """Half a second of a wait loop; ``Interrupted`` when a stop was asked for meanwhile."""
    if service is None:
        time.sleep(0.5)
        return
    if service.stopping.wait(0.5):
        raise Interrupted("interrupted")
    service.supervise()


class Interrupted(RuntimeError):
    """SIGINT or SIGTERM arrived while ``up`` or ``demo`` was starting."""


def _get_json(url: str, token: str) -> Any:
    import json
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Token {token}"})
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (our own server)
        return json.load(response)


def up(args: argparse.Namespace) -> int:
    """``latencylab up``: migrate, then serve the web app and run one worker and the trainer in the foreground."""
    if (taken := _port_taken(args.host, args.port)) is not None:
        return fail(taken, 1)
    setup_django()
    migrate()
    service = Service(args.host, args.port)
    service.start()
    try:
        _wait_for_http(args.host, args.port, service=service)
    except Interrupted:
        service.stop()
        return 0
    except RuntimeError as exc:
        service.stop()
        return fail(str(exc), 1)
    print(f"LatencyLab is up at http://{args.host}:{args.port}/ (API docs: /api/docs/). Ctrl-C stops it.", flush=True)
    return service.wait()


def _wait_for_cpu_device(service: Service, timeout: float = 120) -> Any:
    from server.devices.models import Device

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        device = Device.objects.online().filter(kind="cpu").order_by("pk").first()
        if device is not None:
            return device
        _pause(service)
    raise RuntimeError("no host CPU device registered within the time limit; see the worker's log above")


def _run_demo_jobs(args: argparse.Namespace, token_user: Any, team: Any, device: Any) -> list[Any]:
    from devicelab.graph import zoo
    from latencylab.commands.demo_showcase import submit_jobs

    graphs = [zoo.build(m.strip()) for m in args.models.split(",") if m.strip()]
    return submit_jobs(team, token_user, device, graphs, dict(DEMO_SETTINGS, runs=args.runs))


def _wait_for_jobs(jobs: list[Any], service: Service, timeout: float = 1800, title: str = "") -> list[Any]:
    """Wait for the jobs to end, printing their states when they change: each job's, or with a
    ``title`` one count per state (a training set's many jobs)."""
    from collections import Counter

    from server.profiling.models import ProfilingJob

    deadline = time.monotonic() + timeout
    ids = [j.pk for j in jobs]
    last = ""
    while True:
        rows = list(ProfilingJob.objects.filter(pk__in=ids).select_related("model").order_by("pk"))
        if title:
            counts = Counter(j.state for j in rows)
            line = f"{title}: " + ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        else:
            line = "  ".join(f"{j.title}: {j.state} {int(j.progress * 100)}%" for j in rows)
        if line != last:
            print(line, flush=True)
            last = line
        if all(j.state in ("succeeded", "failed", "cancelled") for j in rows):
            return rows
        if time.monotonic() > deadline:
            raise RuntimeError("the demo jobs did not finish in time")
        _pause(service)


def demo(args: argparse.Namespace) -> int:
    """``latencylab demo``: ``up`` plus a demo user and an admin, real profiles of a few zoo models on
    this CPU, the qed phones as dataset devices and a predictor for one of them training in the
    background (``demo_showcase``)."""
    if (taken := _port_taken(args.host, args.port)) is not None:
        return fail(taken, 1)
    setup_django()
    from django.utils import timezone

    from latencylab.commands import demo_showcase as showcase
    from server.accounts.models import Team
    from server.accounts.services import create_user_with_token

    started = timezone.now()
    migrate()
    user, token = create_user_with_token("demo", "demo")
    # A fresh dashboard password each run, printed with the URL (the demo is a local playground).
    password = secrets.token_urlsafe(9)
    user.set_password(password)
    user.save(update_fields=["password"])
    team = Team.objects.get(name="demo")
    admin_name, admin_password = showcase.ensure_admin()
    service = Service(args.host, args.port, worker_loglevel="WARNING")
    service.start()
    try:
        print(showcase.import_qed_phones(), flush=True)  # while the web server and worker start
        _wait_for_http(args.host, args.port, service=service)
        device = _wait_for_cpu_device(service)
        print(showcase.opencl_line(device, lambda: _pause(service)), flush=True)
        print(f"profiling {args.models} on {device.name} ...", flush=True)
        jobs = _run_demo_jobs(args, user, team, device)
        # Queued behind the zoo models: the host CPU predictor's training set (README's NAS loop).
        graphs = showcase.host_training_graphs(max(args.cells, 0))
        cells = showcase.submit_jobs(team, user, device, graphs, showcase.HOST_CELL_SETTINGS)
        jobs = _wait_for_jobs(jobs, service)
        if cells:
            _wait_for_jobs(cells, service, title=f"{len(cells)} NB-201 cells for the host CPU's predictor")
    except RuntimeError as exc:  # Interrupted too
        service.stop()
        return fail(str(exc) or "interrupted", 1)
    rows = []
    for job in jobs:
        result = getattr(job, "result", None)
        if job.state == "succeeded" and result is not None:
            rows.append(
                (
                    job.pk,
                    job.model.name,
                    f"{result.e2e_median:.2f}",
                    f"{result.e2e_p90:.2f}",
                    f"{result.e2e_mean:.2f}",
                    f"{result.e2e_cv * 100:.1f}%",
                    f"{result.load_ms:.0f}",
                    job.state,
                )
            )
        else:
            rows.append((job.pk, job.model.name, "-", "-", "-", "-", "-", f"{job.state}: {job.failure_reason}"))
    print()
    print_table(["job", "model", "median ms", "p90 ms", "mean ms", "CV", "load ms", "state"], rows)
    base = f"http://{args.host}:{args.port}"
    print(f"\nLatencyLab is up at {base}/  (API docs: {base}/api/docs/)")
    print(f"Dashboard log-in: user 'demo', password {password}")
    print(f"Admin log-in at {base}/admin/: user '{admin_name}', password {admin_password}")
    print(f"API token for user 'demo' (team 'demo'): {token}")
    print(f"  curl -H 'Authorization: Token {token}' {base}/api/jobs/{jobs[0].pk}/")
    try:
        detail = _get_json(f"{base}/api/jobs/{jobs[0].pk}/", token)
        result = detail.get("result") or {}
        print(
            f"API check: job {detail['id']} ({detail['state']}) returns {len(result.get('operators', []))} "
            "per-operator timings"
        )
    except (OSError, ValueError, KeyError) as exc:
        print(f"API check failed: {exc}")
    # Queued only now, so the training does not share the CPU with the demo's measurements; the
    # host CPU's first, as the README's NAS loop waits for it.
    if args.cells > 0:
        print(showcase.queue_host_predictor(base, team, device, started, send=not args.exit), flush=True)
    predictor_line = showcase.queue_phone_predictor(base, started, send=not args.exit)
    if predictor_line:
        print(predictor_line, flush=True)
    print(f"The README's NAS loop runs against this demo with: export LATENCYLAB_URL={base} LATENCYLAB_TOKEN={token}")
    if args.exit:
        service.stop()
        return 0 if all(j.state == "succeeded" for j in jobs) else 1
    print("Ctrl-C stops it.", flush=True)
    return service.wait()
