"""POST /api/predict/ with 1,000 architectures over HTTP, beside the library doing the same work.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/predict_api.py

It works in a throw-away database (``<name>_predict_bench`` on PostgreSQL, a SQLite file under
the var dir otherwise, dropped at the end). Two GBDT predictors are trained through the services,
as the trainer trains them: one of the qed Mali G76 phone (s10; ``latencylab qed import``, then
grouped-CV training), one of this machine's CPU from a few synthetic networks profiled here and
stored through the job services. Then a real server, gunicorn with ``server.gunicorn_conf`` as
``latencylab up`` starts it (its workers, threads and warm-up), answers over HTTP on 127.0.0.1.

Every round draws fresh architectures (a new seed: no earlier answer can be reused; the
per-operator memo tables are warm after the first round, as in a server that has answered
before) and, for each predictor, in a random order:

* ``graph JSON``: 1,000 synthetic NAS samples as graph JSON (~55 operators each), over HTTP, and
  the library's answer to the same architectures in this process (``BatchPool`` on
  ``LATENCYLAB_PREDICT_PROCESSES`` processes, as the server splits a batch: the reference);
* ``NB-201``: 1,000 NAS-Bench-201 cell strings without the lookup table (graphs built, deduced,
  predicted), over HTTP and by the library;
* ``NB-201 table``: the same cells answered from the predictor's NB-201 table (built once, as the
  trainer builds it, when ``--table``), over HTTP.

A timed request is what a NAS tool waits for: from sending the body (JSON text made beforehand)
to the last byte of the answer on a kept-alive connection (the answer's JSON is not decoded in
the timing). The library's time is the call on the same Python objects. The answers are checked
against the library's. Each start of the server (``--starts``) times its first request (1,000
NB-201 cells, table off) against the steady median.

Prints, per predictor and path, the HTTP and library medians with their spread (min-max), the
ratio HTTP / library (the median of per-round ratios with a bootstrap 95 % interval), the server's
CPU seconds per request (all its processes, and the busiest one: what the request costs when the
machine is busy with other work and its wall time is mostly waiting for a core), the load
average, and the goal (< 0.5 s for 1,000 architectures through HTTP); writes ``predict_api.json``
under ``$LATENCYLAB_VAR_DIR/benchmarks/`` (default ``var/benchmarks/``).
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
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

from benchmarks.predict_batch import spread, var_dir  # noqa: E402
from devicelab.measure.stats import median_interval  # noqa: E402

N = 1000
GOAL_S = 0.5
PATHS = ("graph JSON", "NB-201")


def log(msg: str) -> None:
    """Progress on stderr."""
    print(msg, file=sys.stderr, flush=True)


def _qed_predictor(method: str, search: str) -> Any:
    from server.predictors.qed_import import import_qed
    from server.predictors.services import request_predictor, run_training

    phone = next(d.device for d in import_qed().devices if d.device.name == "s10")
    row = request_predictor(None, phone, method=method, search=search, enqueue=False)
    return run_training(row.pk, progress=lambda m: log(f"  qed s10 {method}: {m}"))


def _cpu_predictor(team: Any, method: str, search: str, networks: int) -> Any:
    from devicelab.backends import cpu
    from devicelab.backends.base import DeviceInfo, ProfileSettings
    from devicelab.graph import graph_to_json, nas
    from devicelab.predict.cpu_probes import probe_graphs
    from server.devices.services import register_devices
    from server.networks.services import upload_model
    from server.predictors.services import request_predictor, run_training
    from server.profiling.services import claim_job, ingest_result, submit_profiling_job

    info = cpu.discover()[0]
    (device,) = register_devices("bench-worker", [DeviceInfo(info.kind, info.identity, info.name, info.hardware)])
    timed = ProfileSettings(threads=1, runs=3, warmup_runs=1)
    once = ProfileSettings(threads=1, runs=1, warmup_runs=0)
    plan = [(g, timed) for g in nas.sample("synthetic", networks, 3)] + [(g, once) for g in probe_graphs()]
    log(f"  profiling {networks} synthetic networks and {len(plan) - networks} probes on {info.name}")
    for graph, ps in plan:
        result = cpu.profile(info, graph, ps)
        model, _ = upload_model(team, None, graph_to_json(graph).encode(), f"{graph.name}.json", name=graph.name)
        job = submit_profiling_job(team, model, device, ps.as_dict())
        assert claim_job(job.pk, "bench") is not None and ingest_result(job.pk, "bench", result) is not None
    row = request_predictor(team, device, method=method, search=search, enqueue=False)
    return run_training(row.pk, progress=lambda m: log(f"  cpu {method}: {m}"))


def _database_url() -> str:
    """The throw-away database as a URL, for the server process."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    auth = quote(s.get("USER") or "", safe="")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"], safe="")
    return f"postgres://{auth}@{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


class Server:
    """gunicorn on the throw-away database, started and stopped by the benchmark."""

    def __init__(self, log_path: Path, media: str) -> None:
        self.log_path = log_path
        self.media = media
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> float:
        """Start it; seconds until it answers."""
        import requests
        from django.conf import settings

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {
            **os.environ,
            "DATABASE_URL": _database_url(),
            "SECRET_KEY": str(settings.SECRET_KEY),
            "ALLOWED_HOSTS": "127.0.0.1",
            "CELERY_BROKER_URL": str(settings.CELERY_BROKER_URL),
            "LATENCYLAB_MEDIA_ROOT": self.media,
        }
        cmd = [sys.executable, "-m", "gunicorn", "server.wsgi:application", "--bind", f"127.0.0.1:{port}"]
        cmd += ["--config", "python:server.gunicorn_conf", "--log-level", "warning"]
        started = time.perf_counter()
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                requests.get(f"{self.url}/api/health/", timeout=2)
                return time.perf_counter() - started
            except requests.RequestException:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit(f"the server did not start; see {self.log_path}") from None
                time.sleep(0.05)

    def cpu_seconds(self) -> dict[int, float]:
        """CPU seconds (user + system) so far of each process of the server (gunicorn, its web
        workers, their batch workers): on a busy machine a request's wall time is mostly waiting
        for a core, and what it costs shows here."""
        import psutil

        if self.proc is None:
            return {}
        out = {}
        try:
            root = psutil.Process(self.proc.pid)
            for p in [root, *root.children(recursive=True)]:
                try:
                    t = p.cpu_times()
                    out[p.pid] = t.user + t.system
                except psutil.NoSuchProcess:
                    continue
        except psutil.NoSuchProcess:
            pass
        return out

    def stop(self) -> None:
        """Stop gunicorn and its workers (their batch processes follow them)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self.proc = None


class Bench:
    """The HTTP client and the library reference for one server."""

    def __init__(self, server: Server, key: str) -> None:
        import requests

        self.server = server
        self.last_cpu = (0.0, 0.0)  # the last request's server CPU seconds: all processes, the busiest one
        self.session = requests.Session()
        self.headers = {"Authorization": f"Token {key}", "Content-Type": "application/json"}

    def post(self, body: dict[str, Any]) -> tuple[float, list[float]]:
        """Seconds of one POST /api/predict/ (body serialized beforehand), and its latencies."""
        import orjson

        data = orjson.dumps(body)
        before = self.server.cpu_seconds()
        start = time.perf_counter()
        resp = self.session.post(f"{self.server.url}/api/predict/", data=data, headers=self.headers)
        content = resp.content
        seconds = time.perf_counter() - start
        after = self.server.cpu_seconds()
        spent = {pid: after[pid] - before.get(pid, 0.0) for pid in after}
        self.last_cpu = (sum(spent.values()), max(spent.values(), default=0.0))
        if resp.status_code != 200:
            raise SystemExit(f"POST /api/predict/ answered {resp.status_code}: {content[:500]!r}")
        results = orjson.loads(content)["results"]
        assert len(results) == len(body["architectures"])
        return seconds, [r["latency_ms"] for r in results]


def library(pool: Any, predictor: Any, key: str, items: list[dict[str, Any]]) -> tuple[float, list[float]]:
    """Seconds of the library's answer to the same architectures (the server's pool size, collector
    paused as the server pauses it), and its latencies."""
    import gc

    pairs = list(enumerate(items))
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        results, errors = pool.answer(key, predictor, pairs)
        seconds = time.perf_counter() - start
    finally:
        gc.enable()
    assert not errors, errors[:3]
    return seconds, [results[i]["latency_ms"] for i in range(len(items))]


def architectures(seed: int) -> dict[str, list[dict[str, Any]]]:
    """Fresh graph JSON NAS samples and NB-201 cells drawn with ``seed``."""
    from devicelab.graph import graph_to_dict, nas
    from devicelab.graph.nas import nb201

    return {
        "graph JSON": [
            {"name": f"g{i}", "graph": graph_to_dict(g)} for i, g in enumerate(nas.sample("synthetic", N, seed))
        ],
        "NB-201": [{"name": f"c{i}", "nb201": c} for i, c in enumerate(nb201.sample_strings(N, seed))],
    }


def max_rel_diff(a: list[float], b: list[float]) -> float:
    """The largest relative difference of two lists of latencies."""
    return max(abs(x - y) / abs(y) if y else abs(x) for x, y in zip(a, b, strict=True))


def measure(
    rows: dict[str, Any], live: dict[str, Any], key: str, args: argparse.Namespace, media: str
) -> dict[str, Any]:
    """Every round of every predictor and path, and the first requests of fresh server starts.

    ``live`` holds, per predictor, a second row with the same artifact and no NB-201 table: the
    cells it is asked for are built, deduced and predicted (the table's row answers from it)."""
    from django.conf import settings

    from devicelab.predict.parallel import BatchPool
    from server.predictors.artifacts import load_row

    server = Server(var_dir() / "predict_api_web.log", media)
    pool = BatchPool(settings.LATENCYLAB_PREDICT_PROCESSES)
    pool.start()
    rng = random.Random(11)
    predictors = {name: load_row(row) for name, row in live.items()}
    http: dict[str, dict[str, list[float]]] = {name: {p: [] for p in (*PATHS, "NB-201 table")} for name in rows}
    # per request: the server's CPU seconds over all its processes, and in the busiest one
    cpu: dict[str, dict[str, list[tuple[float, float]]]] = {name: {p: [] for p in PATHS} for name in rows}
    lib: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PATHS} for name in rows}
    diffs: dict[str, float] = {}
    firsts: list[dict[str, Any]] = []
    loads: list[float] = []
    first = next(iter(live.values()))
    try:
        for start in range(args.starts):
            up_s = server.start()
            bench = Bench(server, key)
            first_s, _ = bench.post({"predictor": first.pk, "architectures": architectures(500 + start)["NB-201"]})
            second_s, _ = bench.post({"predictor": first.pk, "architectures": architectures(600 + start)["NB-201"]})
            firsts.append({"up_s": round(up_s, 2), "first_s": round(first_s, 4), "second_s": round(second_s, 4)})
            log(f"start {start + 1}: up in {up_s:.1f} s, first request {first_s:.3f} s, second {second_s:.3f} s")
            if start < args.starts - 1:
                server.stop()
        bench = Bench(server, key)
        warm = architectures(999)
        for name, row in live.items():  # imports, memo tables and connections, not counted
            for path in PATHS:
                for _ in range(2):  # both web workers
                    bench.post({"predictor": row.pk, "architectures": warm[path][:200]})
                library(pool, predictors[name], f"bench-{name}", warm[path][:200])
        for r in range(args.rounds):
            archs = architectures(1000 + r)
            for name, row in live.items():
                for path in PATHS:
                    order = ["http", "library"]
                    rng.shuffle(order)
                    answers = {}
                    for way in order:
                        if way == "http":
                            s, answers[way] = bench.post({"predictor": row.pk, "architectures": archs[path]})
                            http[name][path].append(s)
                            cpu[name][path].append(bench.last_cpu)
                        else:
                            s, answers[way] = library(pool, predictors[name], f"bench-{name}", archs[path])
                            lib[name][path].append(s)
                    diff = max_rel_diff(answers["http"], answers["library"])
                    diffs[f"{name} {path}"] = max(diff, diffs.get(f"{name} {path}", 0.0))
                    if path == "NB-201":
                        cells_answer = answers["library"]
                if args.table:
                    s, from_table = bench.post({"predictor": rows[name].pk, "architectures": archs["NB-201"]})
                    http[name]["NB-201 table"].append(s)
                    diff = max_rel_diff(from_table, cells_answer)  # the table's values are its own predictions
                    diffs[f"{name} NB-201 table"] = max(diff, diffs.get(f"{name} NB-201 table", 0.0))
            loads.append(round(os.getloadavg()[0], 2))
            log(f"round {r + 1}/{args.rounds}: load average {loads[-1]}")
    finally:
        server.stop()
        pool.close()
    return {
        "http": http,
        "server_cpu": cpu,
        "library": lib,
        "max_rel_diff": diffs,
        "first_requests": firsts,
        "load_average_rounds": loads,
    }


def main() -> None:
    """Measure, print, and write predict_api.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="gbdt", choices=["lasso", "rf", "gbdt", "mlp"])
    parser.add_argument("--search", default="fast", choices=["paper", "fast"])
    parser.add_argument("--cpu-networks", type=int, default=12, help="synthetic networks profiled for the CPU one")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of fresh architectures")
    parser.add_argument("--starts", type=int, default=3, help="server starts whose first request is timed")
    parser.add_argument("--no-table", dest="table", action="store_false", help="skip the NB-201 table path")
    args = parser.parse_args()

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection

    out_dir = var_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    postgres = connection.vendor == "postgresql"
    test_settings = connection.settings_dict.setdefault("TEST", {})
    test_settings["NAME"] = (
        f"{connection.settings_dict['NAME']}_predict_bench" if postgres else str(out_dir / "predict_api.sqlite3")
    )
    original_name = connection.settings_dict["NAME"]
    media = tempfile.TemporaryDirectory(prefix="predict-bench-")
    settings.MEDIA_ROOT = media.name
    settings.LATENCYLAB_PREDICT_NB201_TABLE = False  # built below when asked
    load_before = [round(x, 2) for x in os.getloadavg()]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    report: dict[str, Any] = {
        "database": connection.vendor,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "architectures": N,
        "processes": settings.LATENCYLAB_PREDICT_PROCESSES,
        "goal_s": GOAL_S,
        "method": args.method,
        "rounds": args.rounds,
        "load_average_before": load_before,
    }
    try:
        from server.accounts.services import create_user_with_token
        from server.predictors.models import Predictor
        from server.predictors.tables import build_nb201_table

        user, key = create_user_with_token("bench", "bench")
        team = user.memberships.get().team
        log("training the qed s10 predictor")
        rows = {"qed s10 (TFLite GPU)": _qed_predictor(args.method, args.search)}
        log("training the host CPU predictor")
        rows["host cpu (onnxruntime)"] = _cpu_predictor(team, args.method, args.search, args.cpu_networks)
        live = {}
        for name, row in rows.items():
            assert row is not None and row.state == "ready", getattr(row, "failure_reason", "")
            twin = Predictor.objects.get(pk=row.pk)  # the same artifact under a row without a table
            twin.pk, twin.version = None, row.version + 1
            twin.save()
            live[name] = twin
        if args.table:
            for name, row in rows.items():
                log(f"building the NB-201 table of {name} (all 15625 cells)")
                started = time.perf_counter()
                build_nb201_table(row)
                report.setdefault("table_build_s", {})[name] = round(time.perf_counter() - started, 1)
        measured = measure(rows, live, key, args, media.name)
    finally:
        from django.db import connections

        connections.close_all()
        connection.creation.destroy_test_db(original_name, verbosity=0)
        media.cleanup()
    report.update(measured)
    results: dict[str, Any] = {}
    for name in rows:
        results[name] = {}
        for path in (*PATHS, "NB-201 table"):
            h = measured["http"][name][path]
            if not h:
                continue
            entry: dict[str, Any] = {"http": spread(h), "goal_met": statistics.median(h) < GOAL_S}
            if path in PATHS:
                used = measured["server_cpu"][name][path]
                entry["server_cpu_s"] = spread([a for a, _ in used])
                entry["busiest_process_cpu_s"] = spread([b for _, b in used])
                lib = measured["library"][name][path]
                ratios = [a / b for a, b in zip(h, lib, strict=True)]
                low, high = median_interval(ratios)
                entry["library"] = spread(lib)
                entry["ratio_http_over_library"] = {
                    "median": round(statistics.median(ratios), 3),
                    "ci95": [round(low, 3), round(high, 3)],
                }
            results[name][path] = entry
    report["results"] = results
    loads = measured["load_average_rounds"]
    print(
        f"POST /api/predict/ with {N} architectures over HTTP (gunicorn, server.gunicorn_conf; "
        f"{report['processes']} process(es) per batch), {args.method}, {connection.vendor}; {args.rounds} rounds "
        f"of fresh architectures; load average {min(loads):.1f}-{max(loads):.1f} during the rounds "
        f"({os.cpu_count()} cores)"
    )
    print(
        "| predictor | path | HTTP median s (min-max) | library median s (min-max) | HTTP / library (95 % interval) "
        "| server CPU s: all processes / busiest (medians) | goal < 0.5 s |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, paths in results.items():
        for path, e in paths.items():
            h = e["http"]
            lib_text = ratio_text = cpu_text = ""
            if "server_cpu_s" in e:
                cpu_text = f"{e['server_cpu_s']['median_s']:.3f} / {e['busiest_process_cpu_s']['median_s']:.3f}"
            if "library" in e:
                lib = e["library"]
                lib_text = f"{lib['median_s']:.3f} ({lib['min_s']:.3f}-{lib['max_s']:.3f})"
                r = e["ratio_http_over_library"]
                ratio_text = f"{r['median']:.2f} ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})"
            verdict = "met" if e["goal_met"] else "NOT met"
            label = path if path != "NB-201" else "NB-201, no table"
            print(
                f"| {name} | {label} | {h['median_s']:.3f} ({h['min_s']:.3f}-{h['max_s']:.3f}) | {lib_text} | "
                f"{ratio_text} | {cpu_text} | {verdict} |"
            )
    for f in measured["first_requests"]:
        print(
            f"server start: answers in {f['up_s']} s; first request (1,000 NB-201 cells) {f['first_s']:.3f} s, second {f['second_s']:.3f} s"
        )
    worst = max(measured["max_rel_diff"].values()) if measured["max_rel_diff"] else 0.0
    print(f"HTTP answers vs the library's: largest relative difference {worst:.1e}")
    out = out_dir / "predict_api.json"
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
