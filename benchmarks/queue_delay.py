"""How long a job waits between its creation and a worker starting it (state ``running``).

Starts the web server (gunicorn) and a real lab worker (``python -m workers.run``) for the host
CPU, which reaches it as any lab machine does (its URL, a lab token, the broker), and measures two
things a user waits for:

* **one at a time**: JOBS small jobs, each submitted once the previous one finished, so every
  delay is the dispatch path alone (commit -> broker -> the device's Celery process -> the claim
  over HTTP), split into commit -> message sent (``sent_at``) and message sent -> claimed;
* **a burst**: JOBS jobs submitted at once (a NAS sweep of many small jobs): for each job after
  the first, the gap between the previous job's end and its start, what every job of a sweep
  loses to the hand-over from one job to the next.

Prints the median, p90, p99 and max of each beside its goal (median < 50 ms, p99 < 200 ms) and
the machine's load average, and writes ``<var>/benchmarks/queue_delay.json`` (``<var>`` is
``LATENCYLAB_VAR_DIR``, else the checkout's ``var/``)::

    CELERY_BROKER_URL=redis://127.0.0.1:6379/0 \\
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/queue_delay.py

The broker is Redis (``CELERY_BROKER_URL``, default redis://127.0.0.1:6379/0; ``--embedded``
measures the filesystem transport instead). With PostgreSQL in ``DATABASE_URL`` it works in a
throw-away database ``<name>_queue_bench``, dropped at the end; otherwise in a fresh SQLite file
under the var folder. Its queues carry a unique prefix, so it never meets another run's messages.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
JOBS = 30
GOAL_MEDIAN_MS, GOAL_P99_MS = 50.0, 200.0


def _environment(args: argparse.Namespace) -> dict[str, str]:
    """The settings this benchmark and its worker run with (the database is a throw-away one)."""
    env = {
        "DJANGO_SETTINGS_MODULE": "server.settings",
        "LATENCYLAB_QUEUE_PREFIX": f"bench-{uuid.uuid4().hex[:10]}.",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    if args.embedded:
        env["CELERY_BROKER_URL"] = ""
    else:
        env["CELERY_BROKER_URL"] = os.environ.get("CELERY_BROKER_URL") or DEFAULT_REDIS
    url = os.environ.get("DATABASE_URL", "")
    if url.startswith(("postgres://", "postgresql://")):
        base, _, name = url.rpartition("/")
        env["DATABASE_URL"] = f"{base}/{name.split('?')[0]}_queue_bench"
    else:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        path = OUT_DIR / "queue_delay.sqlite3"
        for stale in OUT_DIR.glob("queue_delay.sqlite3*"):
            stale.unlink()
        env["DATABASE_URL"] = f"sqlite:///{path}"
    return env


def _postgres(admin_url: str, sql: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE) on the server's admin database."""
    import psycopg2

    base = admin_url.rpartition("/")[0]
    conn = psycopg2.connect(f"{base}/postgres")
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    finally:
        conn.close()


def _wait(predicate: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)
    return value


SETTINGS = {"runs": 1, "warmup_runs": 0}


def _ms(delta: Any) -> float:
    return float(delta.total_seconds() * 1000.0)


def _finished(job_id: int) -> Any:
    """The job once it ended (``SystemExit`` if it failed or took over a minute)."""
    from server.profiling.models import ProfilingJob

    _wait(
        lambda: ProfilingJob.objects.filter(pk=job_id, state__in=["succeeded", "failed"]).exists(),
        60,
        f"job {job_id} to finish",
    )
    job = ProfilingJob.objects.get(pk=job_id)
    if job.state != "succeeded":
        raise SystemExit(f"job {job.pk} failed: {job.failure_reason}")
    return job


def _run_one(team: Any, model: Any, device: Any) -> Any:
    """Submit one job and wait for it to end."""
    from server.profiling.services import submit_profiling_job

    return _finished(submit_profiling_job(team, model, device, SETTINGS).pk)


def measure(jobs: int) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """Start a worker, run ``jobs`` jobs one by one, then ``jobs`` at once; return the delays (ms)
    by what they are and what was measured."""
    from django.conf import settings

    from devicelab.graph import GraphBuilder, graph_to_json
    from server.accounts.services import create_user_with_token
    from server.devices.models import Device
    from server.labs.services import add_lab_machine
    from server.networks.services import upload_model
    from server.profiling.services import submit_profiling_job

    name = f"bench-{uuid.uuid4().hex[:6]}"
    log_path = OUT_DIR / "queue_delay_worker.log"
    web, url = _start_web(log_path.with_name("queue_delay_web.log"))
    _, token = add_lab_machine(name)
    # The worker is a lab machine: the server's URL, its token and the broker, nothing else.
    lab_env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    lab_env.update(
        LATENCYLAB_SERVER_URL=url,
        LATENCYLAB_LAB_TOKEN=token,
        CELERY_BROKER_URL=str(settings.CELERY_BROKER_URL),
        LATENCYLAB_LAB_DIR=str(OUT_DIR / f"lab-{name}"),
    )
    if str(settings.CELERY_BROKER_URL).startswith("filesystem:"):
        lab_env["LATENCYLAB_BROKER_DIR"] = str(settings.BROKER_DIR)
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "workers.run", "--name", name, "--kinds", "cpu", "--shutdown-grace", "5"],
            cwd=ROOT,
            env=lab_env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        device = _wait(lambda: Device.objects.online().filter(worker=name).first(), 90, "the worker's device")
        user, _ = create_user_with_token(name, name)
        team = user.memberships.get().team
        b = GraphBuilder("queue-bench", (1, 3, 16, 16))
        graph = b.build(b.fc(b.flatten(b.global_avg_pool(b.relu(b.conv(b.input, 8, 3)))), 10))
        model, _ = upload_model(team, user, graph_to_json(graph).encode(), "queue-bench.json")
        # the first job warms the worker up (imports, first session) and is not counted
        _run_one(team, model, device)
        one: dict[str, list[float]] = {"created_to_running": [], "created_to_sent": [], "sent_to_running": []}
        for _ in range(jobs):
            job = _run_one(team, model, device)
            one["created_to_running"].append(_ms(job.started_at - job.created_at))
            one["created_to_sent"].append(_ms(job.sent_at - job.created_at))
            one["sent_to_running"].append(_ms(job.started_at - job.sent_at))
        burst = [submit_profiling_job(team, model, device, SETTINGS) for _ in range(jobs)]
        finished = [_finished(j.pk) for j in burst]
        spans = sorted((j.started_at, j.finished_at) for j in finished)
        handover = [_ms(start - end) for (_, end), (start, _) in zip(spans, spans[1:], strict=False)]
        delays = {**one, "burst_handover": handover}
        info = {
            "broker": str(settings.CELERY_BROKER_URL).split("://")[0],
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "worker_log": str(log_path),
        }
        return delays, info
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        os.killpg(web.pid, signal.SIGKILL)
        web.wait()


def _start_web(log_path: Path) -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn on the benchmark's database, as the lab's server; (process, URL) once it answers."""
    import socket
    import urllib.error
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "ALLOWED_HOSTS": "127.0.0.1"}
    cmd = [sys.executable, "-m", "gunicorn", "server.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    cmd += ["--config", "python:server.gunicorn_conf", "--workers", "1"]
    with open(log_path, "wb") as log:
        web = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        try:
            urllib.request.urlopen(f"{url}/api/lab/hello", timeout=2)  # noqa: S310 - our own server
        except urllib.error.HTTPError:
            return True  # 401: it answers
        except OSError:
            return False
        return True

    _wait(answers, 60, "the web server")
    return web, url


def _p99(values: list[float]) -> float:
    """The 99th percentile by nearest rank (with fewer than 100 samples, the largest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)]


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print the numbers and write the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=JOBS)
    parser.add_argument("--embedded", action="store_true", help="measure the filesystem transport, not Redis")
    args = parser.parse_args(argv)

    OUT_DIR.mkdir(parents=True, exist_ok=True)  # the services' logs go there from the start
    env = _environment(args)
    os.environ.update(env)
    if env["DATABASE_URL"].startswith("postgres"):
        bench_db = env["DATABASE_URL"].rpartition("/")[2]
        _postgres(env["DATABASE_URL"], f'DROP DATABASE IF EXISTS "{bench_db}"')
        _postgres(env["DATABASE_URL"], f'CREATE DATABASE "{bench_db}"')
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from devicelab.measure.stats import summarize

    try:
        call_command("migrate", verbosity=0)
        delays, info = measure(args.jobs)
    finally:
        from server.taskqueue import purge_queues

        purge_queues(env["LATENCYLAB_QUEUE_PREFIX"])
        connections.close_all()
        if env["DATABASE_URL"].startswith("postgres"):
            _postgres(env["DATABASE_URL"], f'DROP DATABASE IF EXISTS "{env["DATABASE_URL"].rpartition("/")[2]}"')
    load = os.getloadavg()
    rows = {what: summarize(values) for what, values in delays.items()}
    report = {
        "benchmark": "queue_delay",
        "what": "ms: one at a time, job created -> running (split at the message's sending); "
        "a burst of jobs submitted at once, previous job's end -> next job's start",
        "goal": {"median_ms": GOAL_MEDIAN_MS, "p99_ms": GOAL_P99_MS},
        "jobs": args.jobs,
        **info,
        "load_average": load,
        "results": {
            what: {
                "median_ms": st.median,
                "p90_ms": st.p90,
                "p99_ms": _p99(delays[what]),
                "min_ms": st.min,
                "max_ms": st.max,
                "samples_ms": delays[what],
            }
            for what, st in rows.items()
        },
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
    }
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    out = OUT_DIR / ("queue_delay_embedded.json" if args.embedded else "queue_delay.json")
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"queue delay, {args.jobs} jobs each way ({info['broker']} broker, {info['database']}), "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    print(
        f"{'':24} {'median':>8} {'p90':>8} {'p99':>8} {'max':>8}   goal: median < {GOAL_MEDIAN_MS:.0f}, p99 < {GOAL_P99_MS:.0f}"
    )
    for what, st in rows.items():
        p99 = _p99(delays[what])
        met = (
            ""
            if what in ("created_to_sent", "sent_to_running")
            else ("  met" if st.median < GOAL_MEDIAN_MS and p99 < GOAL_P99_MS else "  NOT met")
        )
        print(f"{what:24} {st.median:8.1f} {st.p90:8.1f} {p99:8.1f} {st.max:8.1f}{met}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
