"""Reliability under faults: every job and predictor finishes exactly once, whatever breaks.

For each fault of the list it starts a small real lab on PostgreSQL and a Redis of its own: the
web server (gunicorn), the trainer (``python -m server.trainer``) and a lab worker for the host
CPU (``python -m workers.run``, reaching the server by HTTP with a lab token, and the broker),
with short clocks (heartbeat 1 s, offline after 4 s, resend after 3 s, job and training leases
10 s). It submits ``--jobs`` profiling jobs (a small residual net, ~1-3 s of measuring each)
and a predictor training or two through the REST API, breaks something while they run, and waits
(at most ``--timeout`` s) for every job and predictor to reach a final state::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/faults.py
    .venv/bin/python benchmarks/faults.py --rows broker-restart,db-terminate --jobs 8

The faults (``--rows``, default all):

* ``device-kill``: SIGKILL to the device's Celery process while a job measures (the agent lives on).
* ``worker-kill``: SIGKILL to the whole worker (agent, device and pool processes) while a job
  measures; the same lab machine's worker is started again at once.
* ``trainer-kill``: SIGKILL to the trainer (and its pool process) mid-training; a new trainer is
  started at once.
* ``broker-restart``: Redis (no persistence) stopped and started while a job measures, with jobs
  and a predictor queued: every message it held is gone.
* ``broker-down``: Redis stopped while a job measures; the remaining jobs and the predictors are
  submitted while it is down (the API must accept them); started again 5 s later.
* ``db-terminate``: ``pg_terminate_backend`` on every connection to the benchmark's database,
  twice 2 s apart, while a job measures and a predictor trains.
* ``graceful-stop``: SIGTERM to the worker while a job measures; started again once it exited.

Per row, for jobs: submitted; exactly once (succeeded with one stored result and measured to the
end once: no "result dropped" of a second measurement in the worker's log); lost (failed,
cancelled, gone, or refused at submission); stuck (not final at the deadline); duplicated (more
than one stored result, or measured to the end twice). For predictors: submitted, ready, lost
(failed), stuck. **Recovery** is the time from the fault's end (the kill, the broker back, the
last termination, the SIGTERM) until the lab has taken back what the fault interrupted (each job
or training it cut short is queued again) and claims jobs again (the first job claimed after
the fault), whichever comes last. It includes the rest of a job the fault let run (the queued
jobs wait behind it; a graceful stop waits for it), a worker's restart, and a training lease
running out, not the time an interrupted job then waits in its queue. **Done** is the time from
the fault's end to the last job or predictor final.

Works in a throw-away database ``<name>_faults_bench`` (dropped at the end) with its own Redis
on a free port (the Redis at 6379 is never touched) and writes ``faults.json`` to
``$LATENCYLAB_VAR_DIR/benchmarks/`` (default ``var/benchmarks/``), with the processes' logs in
``faults/`` beside it. Exits 1 when a row lost, left stuck or duplicated anything.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._processes import (  # noqa: E402
    LabWorker,
    OwnRedis,
    Trainer,
    kill_group,
    lab_environment,
    tail,
    wait_until,
)
from benchmarks.queue_delay import _postgres, _start_web  # noqa: E402

if TYPE_CHECKING:
    from latencylab.client import Client

OUT_DIR = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks"
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/latencylab"
JOBS = 6
TIMEOUT_SECONDS = 180.0
SHUTDOWN_GRACE_SECONDS = 5.0
# The lab's clocks, short so that recovery takes seconds (the e2e tests' values, with leases of 10 s).
CLOCKS = {
    "LATENCYLAB_HEARTBEAT_SECONDS": "1",
    "LATENCYLAB_OFFLINE_AFTER_SECONDS": "4",
    "LATENCYLAB_RESEND_AFTER_SECONDS": "3",
    "LATENCYLAB_JOB_LEASE_SECONDS": "10",
    "LATENCYLAB_TRAINING_LEASE_SECONDS": "10",
}
# About 50 ms a run here: 20 timed and 20 profiled runs measure for ~2 s, so faults land mid-job.
JOB_SETTINGS = {"runs": 20, "warmup_runs": 2, "breakdown": False}
# The qed phone whose predictors are trained (rf: ~10 s, lasso: ~3 s of training here).
PHONE = "mi8se"
FINAL_JOB_STATES = ("succeeded", "failed", "cancelled")
FINAL_PREDICTOR_STATES = ("ready", "failed")
# The worker's line for a measurement that ran to its end after its job was taken from it.
DROPPED = re.compile(r"job (\d+) finished but is no longer this run's")


@dataclass
class Shared:
    """What every row uses: the broker, the server's environment, a team member's API token, the
    uploaded model, the qed phone and the lab machine (one machine, a new worker run per row)."""

    redis: OwnRedis
    server_env: dict[str, str]
    logs: Path
    api_token: str = ""
    model_id: int = 0
    phone_id: int = 0
    machine: str = ""
    lab_token: str = ""


@dataclass
class Lab:
    """One row's running lab: its processes, its API client and what it submitted."""

    key: str
    shared: Shared
    prefix: str
    web: subprocess.Popen[bytes]
    url: str
    trainer: Trainer
    worker: LabWorker
    api: Client
    device_id: int
    job_ids: list[int] = field(default_factory=list)
    predictor_ids: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # submissions the API did not accept


@dataclass
class Window:
    """When a fault hit (epoch seconds): from ``start`` to ``end``, when the benchmark stopped
    inflicting it. ``hit``: what was running or training at its start, (kind, pk) -> attempts;
    ``pending``: whether jobs / predictors were unfinished; ``notes`` say what exactly it did."""

    start: float
    end: float
    hit: dict[tuple[str, int], int] = field(default_factory=dict)
    pending: dict[str, bool] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class Row:
    """One fault's outcome: the table's numbers and what explains them."""

    fault: str
    jobs_submitted: int = 0
    jobs_once: int = 0
    jobs_lost: int = 0
    jobs_stuck: int = 0
    jobs_duplicated: int = 0
    jobs_retried: int = 0  # finished after more than one attempt
    predictors_submitted: int = 0
    predictors_ready: int = 0
    predictors_lost: int = 0
    predictors_stuck: int = 0
    predictors_retried: int = 0
    recovery_s: float | None = None
    done_s: float | None = None
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each lost, stuck or duplicated item, why
    error: str = ""
    worker_log_tail: str = ""  # of a row that was not healthy

    @property
    def healthy(self) -> bool:
        """Nothing lost, stuck or duplicated, and the row ran to its end."""
        bad = self.jobs_lost + self.jobs_stuck + self.jobs_duplicated + self.predictors_lost + self.predictors_stuck
        return not self.error and bad == 0


# -- the server side -------------------------------------------------------------------------------


def server_environment(database_url: str, broker_url: str, var_dir: Path) -> dict[str, str]:
    """The environment of the server's processes (web, trainer, this one) for the whole run."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "server.settings",
        "DATABASE_URL": database_url,
        "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
        "CELERY_BROKER_URL": broker_url,
        "LATENCYLAB_VAR_DIR": str(var_dir),
        # The NB201 table takes minutes of CPU for each ready predictor; nothing here reads it.
        "LATENCYLAB_PREDICT_NB201_TABLE": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        **CLOCKS,
    }


def bench_database(url: str) -> str:
    """The throw-away database's URL beside the one ``url`` names."""
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit(f"faults.py runs on PostgreSQL; DATABASE_URL is {url!r}")
    base, _, name = url.rpartition("/")
    return f"{base}/{name.split('?')[0]}_faults_bench"


def prepare(shared: Shared) -> None:
    """Migrate, make the team member and its token, the lab machine, the model and the qed phones."""
    from django.core.management import call_command

    from devicelab.graph import graph_to_json
    from server.accounts.services import create_user_with_token
    from server.labs.services import add_lab_machine
    from server.networks.services import upload_model
    from server.predictors.qed_import import import_qed
    from tests.e2e.helpers import long_graph

    call_command("migrate", verbosity=0)
    user, shared.api_token = create_user_with_token("faults-bench", "faults-bench")
    team = user.memberships.get().team
    model, _ = upload_model(team, user, graph_to_json(long_graph("faults-bench")).encode(), "faults-bench.json")
    shared.model_id = model.pk
    shared.machine = f"faults-{uuid.uuid4().hex[:6]}"
    shared.lab_token = add_lab_machine(shared.machine)[1]
    shared.phone_id = next(d.device.pk for d in import_qed().devices if d.device.name == PHONE)


# -- one row's lab -------------------------------------------------------------------------------


def start_lab(key: str, shared: Shared) -> Lab:
    """Start the web server, the trainer and the worker on a queue prefix of the row's own (so no
    message of an earlier row reaches it); return once the worker's device is online."""
    from django.conf import settings

    from latencylab.client import Client

    prefix = f"faults-{key}-{uuid.uuid4().hex[:8]}."
    os.environ.update(shared.server_env, LATENCYLAB_QUEUE_PREFIX=prefix)
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    env = dict(os.environ)
    web, url = _start_web(shared.logs / f"{key}-web.log")
    trainer = Trainer(env, shared.logs / f"{key}-trainer.log").start()
    lab_env = lab_environment(env, url, shared.lab_token, shared.logs / f"lab-{key}")
    worker = LabWorker(shared.machine, lab_env, shared.logs / f"{key}-worker.log", SHUTDOWN_GRACE_SECONDS).start()
    device = wait_for_device(worker)
    api = Client(url, shared.api_token)
    return Lab(key, shared, prefix, web, url, trainer, worker, api, device)


def wait_for_device(worker: LabWorker, timeout: float = 120) -> int:
    """The pk of the worker's CPU once this run of the worker has registered it (online)."""
    from django.utils import timezone

    from server.devices.models import Device

    since = timezone.make_aware(datetime.fromtimestamp(worker.started_at - 0.001))

    def registered() -> int | None:
        if not worker.running():
            raise RuntimeError(f"worker exited with {worker.proc.returncode if worker.proc else '?'}")
        row = Device.objects.online().filter(worker=worker.name, kind="cpu", last_heartbeat__gte=since).first()
        return row.pk if row is not None else None

    pk: int = wait_until(registered, timeout, f"worker {worker.name} to register its device", interval=0.2)
    return pk


def stop_lab(lab: Lab) -> None:
    """Kill the row's processes, end what it left active (so that no later row meets it) and
    empty its queues."""
    from django.db import connections
    from django.utils import timezone

    from server.predictors.models import Predictor
    from server.profiling.models import ProfilingJob
    from server.taskqueue import purge_queues

    lab.worker.kill()
    lab.trainer.kill()
    kill_group(lab.web)
    connections.close_all()  # a row may have terminated them
    now = timezone.now()
    ProfilingJob.objects.filter(pk__in=lab.job_ids, state__in=("queued", "running")).update(
        state="cancelled", finished_at=now, failure_reason="the benchmark's row ended"
    )
    Predictor.objects.filter(pk__in=lab.predictor_ids, state__in=("queued", "training")).update(
        state="failed", failure_reason="the benchmark's row ended", lease_until=None
    )
    if lab.shared.redis.proc is None:
        lab.shared.redis.start()
    purge_queues(lab.prefix)


# -- submitting and waiting ------------------------------------------------------------------------


def submit_jobs(lab: Lab, n: int) -> None:
    """Queue ``n`` profiling jobs through the REST API; a refusal is noted (and counted lost)."""
    from latencylab.client import ClientError

    for _ in range(n):
        try:
            lab.job_ids.append(lab.api.profile(lab.shared.model_id, lab.device_id, JOB_SETTINGS).id)
        except ClientError as exc:
            lab.refused.append(f"job refused: {exc}")


def request_predictors(lab: Lab, methods: tuple[str, ...]) -> None:
    """Request one predictor training per method through the REST API (the qed phone's data)."""
    from latencylab.client import ClientError

    for seed, method in enumerate(methods):
        try:
            row = lab.api.train_predictor(lab.shared.phone_id, method=method, search="fast", seed=seed)
            lab.predictor_ids.append(int(row["id"]))
        except ClientError as exc:
            lab.refused.append(f"predictor refused: {exc}")


def submit(lab: Lab, jobs: int, methods: tuple[str, ...]) -> None:
    """The row's jobs, then its predictors."""
    submit_jobs(lab, jobs)
    request_predictors(lab, methods)


def job_rows(lab: Lab) -> list[dict[str, Any]]:
    """The row's jobs as they are now."""
    from server.profiling.models import ProfilingJob

    fields = ("pk", "state", "progress", "attempts", "started_at", "finished_at", "failure_reason", "moved_from")
    return list(ProfilingJob.objects.filter(pk__in=lab.job_ids).values(*fields))


def predictor_rows(lab: Lab) -> list[dict[str, Any]]:
    """The row's predictors as they are now."""
    from server.predictors.models import Predictor

    fields = ("pk", "state", "attempts", "started_at", "trained_at", "failure_reason", "progress_message")
    return list(Predictor.objects.filter(pk__in=lab.predictor_ids).values(*fields))


def measuring_job(lab: Lab) -> int | None:
    """A job of the row that runs and has reported progress (mid-measurement), if any."""
    return next((j["pk"] for j in job_rows(lab) if j["state"] == "running" and j["progress"] > 0), None)


def training_predictor(lab: Lab, for_at_least: float) -> int | None:
    """A predictor of the row that has been training for ``for_at_least`` s, if any."""
    from django.utils import timezone

    now = timezone.now()
    for p in predictor_rows(lab):
        if p["state"] == "training" and (now - p["started_at"]).total_seconds() >= for_at_least:
            return int(p["pk"])
    return None


def wait_job_measuring(lab: Lab, timeout: float = 90) -> int:
    """A job of the row that is mid-measurement; its id."""
    pk: int = wait_until(lambda: measuring_job(lab), timeout, "a job to be measuring", interval=0.05)
    return pk


# -- the faults ---------------------------------------------------------------------------------


def begin(lab: Lab) -> Window:
    """A fault's window, starting now: what is running or training now is what it may interrupt."""
    window = Window(start=time.time(), end=0.0)
    window.pending["jobs"] = any(j["state"] not in FINAL_JOB_STATES for j in job_rows(lab))
    window.pending["predictors"] = any(p["state"] not in FINAL_PREDICTOR_STATES for p in predictor_rows(lab))
    window.hit = {("job", j["pk"]): j["attempts"] for j in job_rows(lab) if j["state"] == "running"}
    window.hit |= {("predictor", p["pk"]): p["attempts"] for p in predictor_rows(lab) if p["state"] == "training"}
    return window


def ended(window: Window, note: str) -> Window:
    """The window, ended now, with what the fault did."""
    window.end = time.time()
    window.notes.insert(0, note)
    return window


def device_kill(lab: Lab, jobs: int) -> Window:
    """SIGKILL to the device's Celery process mid-job (its pool process is left to its fate)."""
    submit(lab, jobs, ("lasso",))
    job = wait_job_measuring(lab)
    process = lab.worker.device_process()
    pool = [p.pid for p in process.children()]
    window = begin(lab)
    process.send_signal(signal.SIGKILL)
    ended(window, f"killed device process {process.pid} while job {job} measured")
    try:  # the pool process dies with it (its parent-death signal) or goes on alone
        wait_until(lambda: not any(_alive(p) for p in pool), 1, "the pool process to die", interval=0.05)
        window.notes.append(f"its pool process {pool} died with it")
    except TimeoutError:
        window.notes.append(f"its pool process {pool} still ran 1 s later")
    return window


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not)."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def worker_kill(lab: Lab, jobs: int) -> Window:
    """SIGKILL to the worker's whole process group mid-job, then the same machine's worker again."""
    submit(lab, jobs, ("lasso",))
    job = wait_job_measuring(lab)
    window = begin(lab)
    lab.worker.kill()
    ended(window, f"killed the worker's process group while job {job} measured; started it again")
    lab.worker.start()
    return window


def trainer_kill(lab: Lab, jobs: int) -> Window:
    """SIGKILL to the trainer mid-training (a second training queued behind), then a new trainer."""
    submit(lab, jobs, ("rf", "lasso"))
    predictor = wait_until(lambda: training_predictor(lab, 2.0), 120, "a predictor to train for 2 s")
    window = begin(lab)
    lab.trainer.kill()
    ended(window, f"killed the trainer while predictor {predictor} trained; started a new one")
    lab.trainer.start()
    return window


def broker_restart(lab: Lab, jobs: int) -> Window:
    """Redis stopped and started again mid-job: the queued messages (jobs, a predictor) are lost."""
    submit(lab, jobs, ("rf", "lasso"))
    job = wait_job_measuring(lab)
    window = begin(lab)
    lab.shared.redis.stop()
    lab.shared.redis.start()
    return ended(window, f"restarted redis ({time.time() - window.start:.1f} s down) while job {job} measured")


def broker_down(lab: Lab, jobs: int) -> Window:
    """Redis stopped mid-job; the other jobs and the predictors submitted while it is down; 5 s
    later it starts again."""
    submit_jobs(lab, 1)
    job = wait_job_measuring(lab)
    window = begin(lab)
    lab.shared.redis.stop()
    window.pending = {"jobs": True, "predictors": True}  # what is submitted now is pending too
    took = time.time()
    submit(lab, jobs - 1, ("rf", "lasso"))
    took = time.time() - took
    submissions = jobs - 1 + 2
    accepted = f"{len(lab.job_ids) - 1} jobs and {len(lab.predictor_ids)} predictors accepted"
    time.sleep(5)
    lab.shared.redis.start()
    ended(window, f"redis down {time.time() - window.start:.1f} s from mid-job {job}")
    window.notes.append(f"{accepted} meanwhile, {took / submissions:.2f} s per submission")
    window.notes += lab.refused
    return window


def db_terminate(lab: Lab, jobs: int) -> Window:
    """Every connection to the benchmark's database but ours terminated, twice 2 s apart, while a
    job measures and a predictor trains."""
    submit(lab, jobs, ("rf",))
    wait_until(
        lambda: measuring_job(lab) and training_predictor(lab, 1.0), 120, "a job measuring while a predictor trains"
    )
    window = begin(lab)
    killed = [terminate_connections()]
    time.sleep(2)
    killed.append(terminate_connections())
    return ended(window, f"terminated {' + '.join(map(str, killed))} connections mid-job and mid-training")


def terminate_connections() -> int:
    """``pg_terminate_backend`` on every other connection to this database; how many."""
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        row = cur.fetchone()
    return int(row[0]) if row else 0


def graceful_stop(lab: Lab, jobs: int) -> Window:
    """SIGTERM to the worker mid-job (it finishes the job within its grace), started again once
    it exited."""
    submit(lab, jobs, ("lasso",))
    job = wait_job_measuring(lab)
    window = begin(lab)
    window.end = window.start  # the fault is the signal: the worker's wait for its job is part of the recovery
    status = lab.worker.terminate()
    window.notes.append(
        f"SIGTERM while job {job} measured; the worker exited {status} after {time.time() - window.start:.1f} s"
    )
    lab.worker.start()
    return window


@dataclass(frozen=True)
class Fault:
    """A row of the table: its label and how it breaks the lab (submitting the row's work too)."""

    label: str
    inject: Callable[[Lab, int], Window]


FAULTS: dict[str, Fault] = {
    "device-kill": Fault("device process kill -9", device_kill),
    "worker-kill": Fault("whole worker kill -9", worker_kill),
    "trainer-kill": Fault("trainer kill -9", trainer_kill),
    "broker-restart": Fault("broker restart", broker_restart),
    "broker-down": Fault("broker down at submit", broker_down),
    "db-terminate": Fault("database connections terminated", db_terminate),
    "graceful-stop": Fault("graceful stop (SIGTERM)", graceful_stop),
}


# -- watching and counting ---------------------------------------------------------------------


def _epoch(moment: datetime | None) -> float | None:
    return moment.timestamp() if moment is not None else None


def _first_start_after(rows: list[dict[str, Any]], after: float) -> float | None:
    starts = [s for r in rows if (s := _epoch(r["started_at"])) is not None and s >= after]
    return min(starts, default=None)


def watch(lab: Lab, window: Window, timeout: float) -> tuple[float | None, float | None]:
    """Wait until every job and predictor of the row is final (at most ``timeout`` s after the
    fault's end); (recovery, done) in seconds (the module's docstring), None where they never came."""
    first_claim: float | None = None  # the first job claimed after the fault
    back: dict[tuple[str, int], float] = {}  # when what the fault interrupted was queued again
    deadline = window.end + timeout
    while True:
        jobs, predictors = job_rows(lab), predictor_rows(lab)
        # A start is overwritten by the next attempt's: keep the earliest one seen.
        seen = _first_start_after(jobs, window.end)
        if seen is not None and (first_claim is None or seen < first_claim):
            first_claim = seen
        for kind, rows in (("job", jobs), ("predictor", predictors)):
            for r in rows:
                key = (kind, r["pk"])
                if key not in window.hit or key in back:
                    continue
                if r["attempts"] > window.hit[key]:  # taken again before a poll saw it queued
                    back[key] = r["started_at"].timestamp()
                elif r["state"] == "queued":
                    back[key] = time.time()
        finished = all(j["state"] in FINAL_JOB_STATES for j in jobs) and all(
            p["state"] in FINAL_PREDICTOR_STATES for p in predictors
        )
        if finished or time.time() > deadline:
            break
        time.sleep(0.2)
    ends = [e for j in jobs if (e := _epoch(j["finished_at"])) is not None]
    ends += [e for p in predictors if (e := _epoch(p["trained_at"])) is not None]
    done = max(ends) - window.end if finished and ends else None
    marks = list(back.values())
    if window.pending.get("jobs"):
        if first_claim is None:
            return None, done
        marks.append(first_claim)
    return (max(marks) - window.end if marks else None), done


def count(lab: Lab, row: Row) -> None:
    """Fill the row's counts from the database and the worker's log."""
    from django.db.models import Count

    from server.profiling.models import JobResult

    jobs = {j["pk"]: j for j in job_rows(lab)}
    results = dict(
        JobResult.objects.filter(job_id__in=lab.job_ids)
        .values("job_id")
        .annotate(n=Count("id"))
        .values_list("job_id", "n")
    )
    dropped: dict[int, int] = {}
    for match in DROPPED.finditer(lab.worker.log_path.read_text(errors="replace")):
        dropped[int(match.group(1))] = dropped.get(int(match.group(1)), 0) + 1
    row.jobs_submitted = len(lab.job_ids) + sum(r.startswith("job") for r in lab.refused)
    row.jobs_lost = sum(r.startswith("job") for r in lab.refused)
    row.problems += [r for r in lab.refused if r.startswith("job")]
    for pk in lab.job_ids:
        job = jobs.get(pk)
        n = results.get(pk, 0)
        twice = n > 1 or dropped.get(pk, 0) > 0
        if job is None:
            row.jobs_lost += 1
            row.problems.append(f"job {pk}: its row is gone")
            continue
        if twice:
            row.jobs_duplicated += 1
            row.problems.append(f"job {pk}: {n} results stored, {dropped.get(pk, 0)} measurement(s) dropped")
        if job["state"] in ("queued", "running"):
            row.jobs_stuck += 1
            row.problems.append(f"job {pk}: still {job['state']} (attempts {job['attempts']}) {job['moved_from']}")
        elif job["state"] != "succeeded":
            row.jobs_lost += 1
            row.problems.append(f"job {pk}: {job['state']}: {job['failure_reason']}")
        elif n == 1 and not twice:
            row.jobs_once += 1
            if job["attempts"] > 1:
                row.jobs_retried += 1
                row.notes.append(f"job {pk}: {job['attempts']} attempts ({job['moved_from']})")
    predictors = predictor_rows(lab)
    row.predictors_submitted = len(lab.predictor_ids) + sum(r.startswith("predictor") for r in lab.refused)
    row.predictors_lost = sum(r.startswith("predictor") for r in lab.refused) + len(lab.predictor_ids) - len(predictors)
    for p in predictors:
        if p["state"] == "ready":
            row.predictors_ready += 1
            if p["attempts"] > 1:
                row.predictors_retried += 1
                row.notes.append(f"predictor {p['pk']}: {p['attempts']} attempts")
        elif p["state"] == "failed":
            row.predictors_lost += 1
            row.problems.append(f"predictor {p['pk']}: failed: {p['failure_reason']}")
        else:
            row.predictors_stuck += 1
            row.problems.append(f"predictor {p['pk']}: still {p['state']} ({p['progress_message']})")


def run_row(key: str, shared: Shared, jobs: int, timeout: float) -> Row:
    """Start a lab, break it as ``key`` says, wait, count; the lab is stopped whatever happens."""
    row = Row(FAULTS[key].label)
    lab: Lab | None = None
    try:
        lab = start_lab(key, shared)
        window = FAULTS[key].inject(lab, jobs)
        row.notes += window.notes
        row.recovery_s, row.done_s = watch(lab, window, timeout)
        count(lab, row)
        if not row.healthy:
            row.worker_log_tail = tail(lab.worker.log_path, 40)
    except Exception as exc:  # noqa: BLE001 - one broken row must not hide the others
        row.error = f"{type(exc).__name__}: {exc}"
        if lab is not None:
            row.worker_log_tail = tail(lab.worker.log_path, 40)
            try:
                count(lab, row)
            except Exception as again:  # noqa: BLE001 - the row's error says what happened first
                row.notes.append(f"could not count: {again}")
    finally:
        if lab is not None:
            stop_lab(lab)
    return row


# -- the report -----------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def table(rows: list[Row]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| fault | jobs: submitted / exactly once / lost / stuck / duplicated | predictors: submitted / ready "
        "once / lost / stuck | recovery s | done s |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        jobs = f"{r.jobs_submitted} / {r.jobs_once} / {r.jobs_lost} / {r.jobs_stuck} / {r.jobs_duplicated}"
        preds = f"{r.predictors_submitted} / {r.predictors_ready} / {r.predictors_lost} / {r.predictors_stuck}"
        fault = r.fault + (f" (error: {r.error})" if r.error else "")
        lines.append(f"| {fault} | {jobs} | {preds} | {_seconds(r.recovery_s)} | {_seconds(r.done_s)} |")
    return "\n".join(lines)


def code_version() -> dict[str, Any]:
    """The commit measured, and the files of the checkout that differed from it."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    return {"commit": git("rev-parse", "--short", "HEAD"), "uncommitted": git("diff", "--name-only", "HEAD").split()}


def main(argv: list[str] | None = None) -> int:
    """Run the chosen faults, print the table and write the JSON report."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--rows", default=",".join(FAULTS), help=f"comma-separated faults (default: {','.join(FAULTS)})"
    )
    parser.add_argument("--jobs", type=int, default=JOBS, help="profiling jobs per row (default: %(default)s)")
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT_SECONDS, help="seconds to wait after a fault (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    keys = [k.strip() for k in args.rows.split(",") if k.strip()]
    unknown = [k for k in keys if k not in FAULTS]
    if unknown or args.jobs < 2:
        parser.error(f"unknown rows {unknown}; known: {list(FAULTS)}" if unknown else "--jobs must be at least 2")

    began = time.time()
    load_before = os.getloadavg()
    database = bench_database(os.environ.get("DATABASE_URL") or DEFAULT_DATABASE)
    bench_db = database.rpartition("/")[2]
    work = OUT_DIR / "faults"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    redis = OwnRedis(work / "redis")
    redis.start()
    shared = Shared(redis, server_environment(database, redis.url, work / "var"), work)
    os.environ.update(shared.server_env)
    _postgres(database, f'DROP DATABASE IF EXISTS "{bench_db}"')
    _postgres(database, f'CREATE DATABASE "{bench_db}"')
    import django

    django.setup()
    from django.db import connections

    rows: list[Row] = []
    try:
        prepare(shared)
        for key in keys:
            t0 = time.time()
            rows.append(run_row(key, shared, args.jobs, args.timeout))
            print(f"{key}: {time.time() - t0:.0f} s, {'ok' if rows[-1].healthy else 'NOT OK'}", flush=True)
    finally:
        connections.close_all()
        redis.stop()
        _postgres(database, f'DROP DATABASE IF EXISTS "{bench_db}" WITH (FORCE)')
    seconds = time.time() - began
    report = {
        "benchmark": "faults",
        "jobs_per_row": args.jobs,
        "job_settings": JOB_SETTINGS,
        "clocks": CLOCKS,
        "seconds": round(seconds, 1),
        "code": code_version(),
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
        },
        "rows": [{**asdict(r), "healthy": r.healthy} for r in rows],
    }
    out = OUT_DIR / "faults.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(table(rows))
    for r in rows:
        for line in [*r.notes, *r.problems]:
            print(f"  {r.fault}: {line}")
    print(f"{len(rows)} rows in {seconds:.0f} s; logs in {work}; wrote {out}")
    return 0 if all(r.healthy for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
