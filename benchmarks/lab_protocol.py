"""The lab protocol's cost: a job's queue delay and a result's ingest through the HTTP path (a lab
machine with a URL and a token) next to the direct-database path a worker used before (in one
run, interleaved round by round).

* queue delay: the job is submitted (its message goes to the device's Redis queue on commit), the
  message is taken from the queue, and the job is claimed: with ``claim_job`` on the database, or
  with ``POST /api/lab/jobs/<id>/claim`` to a real server process (gunicorn) that answers the
  claimed job's payload. The time from submission to claimed.
* ingest: a profile of ``--ops`` operators (300 by default) is stored: with ``ingest_result`` on
  the database, or posted as JSON to ``POST /api/lab/jobs/<id>/result``, where the server reads it
  back (``ProfileRecord.from_dict``, every key checked) and stores it with the same service. The
  time of the call as the lab machine sees it, serialization included.

Each round runs both paths in a random order; the ratio HTTP / direct is reported as the median
of the per-round ratios with a bootstrap 95 % interval, beside each path's median and spread::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab CELERY_BROKER_URL=redis://127.0.0.1:6379/0 \\
        .venv/bin/python benchmarks/lab_protocol.py

It works in a throw-away database (``<name>_lab_bench``, dropped at the end) and under a unique
queue prefix, and writes <var>/benchmarks/lab_protocol.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
os.environ["LATENCYLAB_QUEUE_PREFIX"] = f"labbench-{uuid.uuid4().hex[:10]}."

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from benchmarks.ingest_timings import make_result  # noqa: E402
from devicelab.backends.base import DeviceInfo  # noqa: E402
from devicelab.backends.profile_record import ProfileRecord  # noqa: E402
from devicelab.lab_protocol import Claim, Registration, ResultPost  # noqa: E402
from devicelab.measure.stats import median_interval  # noqa: E402

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "lab_protocol.json"


def spread(values_s: list[float]) -> dict[str, Any]:
    """Median, p90 and CV of timings (reported in ms)."""
    ms = sorted(v * 1e3 for v in values_s)
    mean = statistics.fmean(ms)
    return {
        "n": len(ms),
        "median_ms": round(statistics.median(ms), 3),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 3),
        "cv": round(statistics.stdev(ms) / mean, 3) if len(ms) > 1 and mean else None,
    }


def ratio_report(http: list[float], direct: list[float]) -> dict[str, Any]:
    """Per-round ratios HTTP / direct: their median and its interval."""
    ratios = [h / d for h, d in zip(http, direct, strict=True)]
    low, high = median_interval(ratios)
    return {
        "http": spread(http),
        "direct": spread(direct),
        "ratio_median": round(statistics.median(ratios), 3),
        "ratio_ci95": [round(low, 3), round(high, 3)],
    }


def database_url() -> str:
    """The throw-away database as a URL, for the server process."""
    s = connection.settings_dict
    auth = quote(s.get("USER") or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    """gunicorn on the throw-away database, as the lab's server."""
    from django.conf import settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "SECRET_KEY": str(settings.SECRET_KEY),
        "ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
    }
    cmd = [sys.executable, "-m", "gunicorn", "server.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    cmd += ["--config", "python:server.gunicorn_conf", "--workers", "1", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    import requests

    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(f"{url}/api/lab/hello", timeout=2)
            return proc, url
        except requests.RequestException:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("the server process did not answer within 60 s") from None
            time.sleep(0.3)


# How a job is claimed: by a process that already holds its connection (``kept``), or as a worker
# claims it (``fresh``): each job runs in a fresh pool process (``--max-tasks-per-child 1``), whose
# claim opens its connection (to PostgreSQL on the direct path, to the server on the HTTP path);
# its result goes out on the same connection. Since the web server closes a connection after its
# answer (``server/gunicorn_conf.py``: ``keepalive = 0``), ``kept`` keeps only the direct path's
# PostgreSQL connection; over HTTP each call connects again, as a pool process does.
CONNECTIONS = ("kept", "fresh")


def measure(rounds: int, ops: int) -> dict[str, Any]:
    """Both paths, ``rounds`` times each per way of connecting, interleaved in a random order."""
    from server.accounts.services import create_user_with_token
    from server.devices.models import Device
    from server.labs.services import add_lab_machine
    from server.networks.services import upload_model
    from server.taskqueue import app, device_queue
    from tests.e2e.helpers import tiny_graph
    from workers.server_api import LabServer

    proc, url = start_server()
    try:
        lab, token = add_lab_machine("bench-lab")
        server = LabServer(url, token)
        run = uuid.uuid4().hex
        info = DeviceInfo("cpu", "cpu:lab-bench", "bench cpu", {})
        registered = server.register(Registration(lab.name, run, [info], start=True))
        device = Device.objects.get(pk=registered.devices[0].pk)
        user, _ = create_user_with_token("labbench", "labbench")
        team = user.memberships.get().team
        from devicelab.graph import graph_to_json

        model, _ = upload_model(team, user, graph_to_json(tiny_graph("bench")).encode(), "bench.json")
        bench = Bench(team, model, device, user, run, make_result(ops), url, token, server)
        rng = random.Random(11)
        empty: list[float] = []
        with app.connection_for_read() as conn:
            bench.queue = conn.SimpleQueue(device_queue(device.pk))
            bench.queue.clear()
            for _ in range(3):  # warm-up: connections, caches, the server's first requests
                for way in CONNECTIONS:
                    bench.round(rng, way, warm=True)
            for _ in range(rounds):
                for way in CONNECTIONS:
                    bench.round(rng, way)
                started = time.perf_counter()
                server.hello()
                empty.append(time.perf_counter() - started)
            bench.queue.close()
        report: dict[str, Any] = {"empty_call": spread(empty)}
        for way in CONNECTIONS:
            report[f"queue_delay_{way}"] = ratio_report(bench.delays[way]["http"], bench.delays[way]["direct"])
            report[f"ingest_{way}"] = ratio_report(bench.ingests[way]["http"], bench.ingests[way]["direct"])
        return report
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class Bench:
    """What every round needs, and the timings it collects."""

    def __init__(
        self, team: Any, model: Any, device: Any, user: Any, run: str, result: Any, url: str, token: str, server: Any
    ) -> None:
        self.team, self.model, self.device, self.user = team, model, device, user
        self.run, self.result, self.url, self.token, self.server = run, result, url, token, server
        self.queue: Any = None
        self.delays: dict[str, dict[str, list[float]]] = {w: {"http": [], "direct": []} for w in CONNECTIONS}
        self.ingests: dict[str, dict[str, list[float]]] = {w: {"http": [], "direct": []} for w in CONNECTIONS}

    def round(self, rng: random.Random, way: str, warm: bool = False) -> None:
        """One job through each path, in a random order: submitted, its message taken, claimed,
        its result stored."""
        from server.profiling.services import claim_job, ingest_result, submit_profiling_job
        from workers.server_api import LabServer

        paths = ["http", "direct"]
        rng.shuffle(paths)
        for path in paths:
            started = time.perf_counter()
            job = submit_profiling_job(
                self.team, self.model, self.device, {"runs": 3, "warmup_runs": 1}, user=self.user
            )
            message = self.queue.get(timeout=30)
            message.ack()
            fresh = way == "fresh"
            if path == "http":
                server = LabServer(self.url, self.token) if fresh else self.server
                answer = server.claim(job.pk, Claim(self.run, self.device.pk))
                assert answer.outcome == "claimed", answer
            else:
                if fresh:
                    connection.close()  # the pool process's first query opens its connection
                assert claim_job(job.pk, self.run, device_id=self.device.pk) is not None
            claimed = time.perf_counter()
            # the result goes out from the process that claimed the job, on its connection
            started_ingest = time.perf_counter()
            if path == "http":
                post = ResultPost(self.run, 1, "profile", ProfileRecord.of(self.result).json_ready())
                assert server.post_result(job.pk, post).outcome == "stored"
            else:
                assert ingest_result(job.pk, self.run, self.result) is not None
            done = time.perf_counter()
            if not warm:
                self.delays[way][path].append(claimed - started)
                self.ingests[way][path].append(done - started_ingest)


def main(argv: list[str] | None = None) -> int:
    """Measure, print, and write <var>/benchmarks/lab_protocol.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--ops", type=int, default=300, help="operators per profile (default %(default)s)")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        print("this benchmark needs PostgreSQL in DATABASE_URL", file=sys.stderr)
        return 2
    test = connection.settings_dict.setdefault("TEST", {})
    test["NAME"] = f"{connection.settings_dict['NAME']}_lab_bench"
    original = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        report = measure(args.rounds, args.ops)
    finally:
        connection.creation.destroy_test_db(original, verbosity=0)
    report.update(
        {
            "rounds": args.rounds,
            "ops_per_result": args.ops,
            "target": "ingest through HTTP at most 1.5x the direct path (ratio's interval below 1.5)",
            "connections": "kept: the poster holds its connection; fresh: each job's pool process opens its own "
            "(how workers run: --max-tasks-per-child 1)",
            "machine": f"{platform.node()} {os.cpu_count()} cores",
            "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
