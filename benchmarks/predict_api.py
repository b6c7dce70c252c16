"""POST /api/predict/ with 1,000 architectures: how long the server takes to answer (target < 1 s).

    .venv/bin/python benchmarks/predict_api.py
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/predict_api.py

It works in a throw-away database (``<name>_predict_bench`` on PostgreSQL, a SQLite file under
var/ otherwise, dropped at the end). Two predictors are made through the services, as the
trainer makes them: one of the qed Mali G76 phone (``latencylab qed import``, then grouped-CV
training), one of this machine's CPU from a few synthetic networks profiled here and stored
through the job services. Then, for each predictor, with the API's token auth, in-process
(Django's test client: request parsing, auth, JSON, no network):

* 1,000 distinct random NAS-Bench-201 cells answered from the predictor's NB201 table (built as
  the trainer builds it, all 15625 cells; its build time is reported): the first request of
  the process (loads artifact and table) and the median of repeated ones;
* the same 1,000 cells without the table (graph built, kernels deduced, models evaluated);
* 1,000 architectures as graph JSON (synthetic NAS samples), and NB201 with ``breakdown``;
* graph JSON and NB201 without the table again in one process (``LATENCYLAB_PREDICT_PROCESSES``
  is 1), to show what splitting a batch over the cores gives.

A timed request covers what the server does: parsing the JSON body, auth, finding and (first
time) loading the predictor, building / deducing / predicting, rendering the JSON answer.

Prints the numbers and writes var/benchmarks/predict_api.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from rest_framework.test import APIClient  # noqa: E402

from devicelab.graph import graph_to_dict  # noqa: E402
from devicelab.graph.nas import nb201  # noqa: E402

N = 1000
TARGET_S = 1.0
OUT = ROOT / "var" / "benchmarks" / "predict_api.json"


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


def _post(client: APIClient, body: dict[str, Any]) -> tuple[float, Any]:
    text = json.dumps(body)  # the client's work, not timed
    start = time.perf_counter()
    resp = client.post("/api/predict/", text, content_type="application/json")
    seconds = time.perf_counter() - start
    assert resp.status_code == 200, resp.content[:500]
    assert len(resp.json()["results"]) == len(body["architectures"])
    return seconds, resp


def _timed(client: APIClient, body: dict[str, Any], repeats: int) -> dict[str, Any]:
    times = [_post(client, body)[0] for _ in range(repeats)]
    return {"median_s": round(statistics.median(times), 4), "min_s": round(min(times), 4), "repeats": repeats}


def bench_predictor(client: APIClient, row: Any, cells: list[str], graphs: list[dict[str, Any]], args: Any) -> dict:
    """Every measurement for one predictor."""
    from server.predictors.models import ArchitectureTable
    from server.predictors.serving import clear_cache
    from server.predictors.tables import build_nb201_table, nb201_index

    out: dict[str, Any] = {"predictor": row.pk, "scenario": row.scenario_key, "method": row.method}
    indices = None if args.full_table else [nb201_index(nb201.parse(c)) for c in cells]
    log(f"  building the NB201 table ({'all 15625 cells' if indices is None else f'{len(indices)} cells'})")
    started = time.perf_counter()
    table = build_nb201_table(row, indices)
    out["table"] = {
        "cells": 15625 if indices is None else len(indices),
        "computed": table.computed,
        "build_s": round(time.perf_counter() - started, 1),
    }
    nb = {"predictor": row.pk, "architectures": [{"name": f"a{i}", "nb201": c} for i, c in enumerate(cells)]}
    clear_cache()
    first, resp = _post(client, nb)
    out["nb201_table_first_request_s"] = round(first, 4)
    out["nb201_table"] = _timed(client, nb, args.repeats)
    reference = [r["latency_ms"] for r in resp.json()["results"]]

    ArchitectureTable.objects.filter(pk=table.pk).delete()
    clear_cache()
    _post(client, {"predictor": row.pk, "architectures": nb["architectures"][:5]})  # load the artifact
    log("  NB201 without the table")
    out["nb201_no_table"] = _timed(client, nb, args.slow_repeats)
    _, resp = _post(client, nb)
    live = [r["latency_ms"] for r in resp.json()["results"]]
    out["table_vs_live_max_rel_diff"] = max(abs(a - b) / b for a, b in zip(reference, live))
    log("  NB201 with breakdown")
    out["nb201_breakdown"] = _timed(client, {**nb, "breakdown": True}, args.slow_repeats)
    log("  graph JSON")
    body = {"predictor": row.pk, "architectures": [{"name": f"g{i}", "graph": g} for i, g in enumerate(graphs)]}
    out["graph_json"] = _timed(client, body, args.slow_repeats)
    log("  graph JSON and NB201 without the table, in one process")
    processes = settings.LATENCYLAB_PREDICT_PROCESSES
    settings.LATENCYLAB_PREDICT_PROCESSES = 1
    try:
        out["graph_json_one_process"] = _timed(client, body, args.slow_repeats)
        out["nb201_no_table_one_process"] = _timed(client, nb, args.slow_repeats)
    finally:
        settings.LATENCYLAB_PREDICT_PROCESSES = processes
    return out


def main() -> None:
    """Measure, print, and write var/benchmarks/predict_api.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--method", default="gbdt", choices=["lasso", "rf", "gbdt", "mlp"])
    parser.add_argument("--search", default="fast", choices=["paper", "fast"])
    parser.add_argument("--cpu-networks", type=int, default=12, help="synthetic networks profiled for the CPU one")
    parser.add_argument("--repeats", type=int, default=7, help="timed requests answered from the table")
    parser.add_argument("--slow-repeats", type=int, default=5, help="timed requests of the slow paths")
    parser.add_argument(
        "--requested-cells-only",
        dest="full_table",
        action="store_false",
        help="build the table for the requested cells only (quicker; same answers)",
    )
    args = parser.parse_args()

    postgres = connection.vendor == "postgresql"
    test_settings = connection.settings_dict.setdefault("TEST", {})
    test_settings["NAME"] = (
        f"{connection.settings_dict['NAME']}_predict_bench"
        if postgres
        else str(settings.VAR_DIR / "benchmarks" / "predict_api.sqlite3")
    )
    Path(settings.VAR_DIR, "benchmarks").mkdir(parents=True, exist_ok=True)
    original_name = connection.settings_dict["NAME"]
    media = tempfile.TemporaryDirectory(prefix="predict-bench-")
    settings.MEDIA_ROOT = media.name
    settings.LATENCYLAB_PREDICT_NB201_TABLE = False  # built below, timed
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    report: dict[str, Any] = {
        "database": connection.vendor,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "architectures": N,
        "processes": settings.LATENCYLAB_PREDICT_PROCESSES,
        "target_s": TARGET_S,
        "predictors": {},
    }
    try:
        from devicelab.graph import nas
        from server.accounts.services import create_user_with_token

        user, key = create_user_with_token("bench", "bench")
        team = user.memberships.get().team
        client = APIClient(SERVER_NAME="localhost")
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        cells = sorted(set(nb201.sample_strings(N + 50, 2024)))[:N]
        graphs = [graph_to_dict(g) for g in nas.sample("synthetic", N, 77)]
        report["graph_json_operators_mean"] = round(sum(len(g["operators"]) for g in graphs) / N, 1)
        log("training the qed s10 predictor")
        rows = {"qed s10 (TFLite GPU)": _qed_predictor(args.method, args.search)}
        log("training the host CPU predictor")
        rows["host cpu (onnxruntime)"] = _cpu_predictor(team, args.method, args.search, args.cpu_networks)
        for name, row in rows.items():
            assert row is not None and row.state == "ready", getattr(row, "failure_reason", "")
            log(f"benchmarking {name}")
            report["predictors"][name] = bench_predictor(client, row, cells, graphs, args)
    finally:
        connection.creation.destroy_test_db(original_name, verbosity=0)
        media.cleanup()
    worst = max(r["nb201_table"]["median_s"] for r in report["predictors"].values())
    worst_json = max(r["graph_json"]["median_s"] for r in report["predictors"].values())
    report["worst_nb201_table_median_s"] = worst
    report["worst_graph_json_median_s"] = worst_json
    report["meets_target"] = worst < TARGET_S and worst_json < TARGET_S
    print(
        f"POST /api/predict/ with {N} architectures ({args.method}, in-process, {connection.vendor}; "
        f"{report['processes']} process(es) per batch, LATENCYLAB_PREDICT_PROCESSES)"
    )
    print(f"{'predictor':26} {'path':34} {'median s':>9} {'min s':>8}")
    for name, r in report["predictors"].items():
        first = r["nb201_table_first_request_s"]
        print(f"{name:26} {'NB201, table, first request':34} {first:9.3f} {first:8.3f}")
        for key, label in (
            ("nb201_table", "NB201, table"),
            ("nb201_no_table", "NB201, no table (build+deduce)"),
            ("nb201_no_table_one_process", "  the same in one process"),
            ("nb201_breakdown", "NB201 with breakdown"),
            ("graph_json", f"graph JSON (~{report['graph_json_operators_mean']:.0f} ops each)"),
            ("graph_json_one_process", "  the same in one process"),
        ):
            print(f"{name:26} {label:34} {r[key]['median_s']:9.3f} {r[key]['min_s']:8.3f}")
        t = r["table"]
        print(
            f"{name:26} table: {t['computed']}/{t['cells']} cells in {t['build_s']} s; "
            f"table vs live max rel. diff {r['table_vs_live_max_rel_diff']:.1e}"
        )
    for label, value in (("NB201 from the table", worst), ("graph JSON", worst_json)):
        verdict = "met" if value < TARGET_S else "NOT met"
        print(f"{label}: worst median {value:.3f} s; target < {TARGET_S} s: {verdict}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
