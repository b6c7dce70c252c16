"""How fast the server stores operator timings: ingest_result (COPY and bulk INSERT) vs raw COPY.

Run with DATABASE_URL pointing at PostgreSQL::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/ingest_timings.py

It works in a throw-away database (``<name>_bench``, dropped at the end), ingests RESULTS x OPS
operator timings through ``ingest_result`` with each insert method, then COPYs the same rows
straight into the same table, and writes rows/s to var/benchmarks/ingest_timings.json. Without
PostgreSQL it measures the ORM path on SQLite only, with fewer rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings  # noqa: E402
from devicelab.graph import GraphBuilder, graph_to_json  # noqa: E402
from devicelab.measure.stats import summarize  # noqa: E402
from server.networks.models import NetworkModel  # noqa: E402


def make_result(ops_per_result: int) -> ProfileResult:
    """A result shaped like a real one: conv/bn/relu blocks with shapes, attrs and statistics."""
    ops = []
    for i in range(ops_per_result):
        kind = ("conv2d", "batch_norm", "relu")[i % 3]
        fused = kind == "relu"
        ops.append(
            OpTiming(
                index=i,
                name=f"block_{i // 3}/{kind}_{i}",
                type=kind,
                kernel="FusedConv" if kind == "conv2d" else kind,
                input_shapes=[[1, 64, 56, 56]],
                output_shapes=[[1, 64, 56, 56]],
                attrs={"kernel": [3, 3], "stride": [1, 1], "pads": [1, 1, 1, 1], "groups": 1, "out_channels": 64}
                if kind == "conv2d"
                else {},
                stats=None if fused else summarize([0.100 + 0.001 * (i % 7), 0.102, 0.101, 0.099, 0.103]),
                fused_into=f"block_{i // 3}/conv2d_{i - 2}" if fused else None,
            )
        )
    samples = [10.0 + 0.01 * k for k in range(30)]
    return ProfileResult(
        device=DeviceInfo("cpu", "cpu:bench", "bench cpu", {}),
        settings=ProfileSettings(),
        e2e=summarize(samples),
        samples_ms=samples,
        cold=ColdStart(50.0, 12.0),
        ops=ops,
        environment={"runtime": "bench"},
    )


_uploaded: list[Any] = []


def running_jobs(count: int) -> list[int]:
    """``count`` jobs already claimed by the run token 'bench' (claiming is not what is timed)."""
    from server.accounts.services import create_user_with_token
    from server.devices.services import register_devices
    from server.networks.services import upload_model
    from server.profiling.models import JobState, ProfilingJob

    user, _ = create_user_with_token(f"bench{time.time_ns()}", "bench")
    team = user.memberships.get().team
    device = register_devices("bench-worker", [DeviceInfo("cpu", "cpu:bench", "bench cpu", {})])[0]
    b = GraphBuilder("bench", (1, 3, 32, 32))
    graph = b.build(b.relu(b.conv(b.input, 8, 3)))
    model = NetworkModel.objects.filter(team=team).first()
    if model is None:
        model, _ = upload_model(team, user, graph_to_json(graph).encode(), "bench.json")
        _uploaded.append(model)
    now = timezone.now()
    jobs = ProfilingJob.objects.bulk_create(
        [
            ProfilingJob(
                team=team,
                model=model,
                device=device,
                settings=ProfileSettings().as_dict(),
                state=JobState.RUNNING,
                claimed_by="bench",
                started_at=now,
                attempts=1,
            )
            for _ in range(count)
        ],
        batch_size=1000,
    )
    return [j.pk for j in jobs]


def truncate_timings() -> None:
    """Empty the timing table so each method starts from the same state."""
    from server.profiling.models import OperatorTiming

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {connection.ops.quote_name(OperatorTiming._meta.db_table)}")
        else:
            cursor.execute(f"DELETE FROM {connection.ops.quote_name(OperatorTiming._meta.db_table)}")


def time_ingest(method: str, job_ids: list[int], result: ProfileResult) -> dict[str, Any]:
    """ingest_result for every job with the given insert method."""
    from server.profiling import services
    from server.profiling.models import OperatorTiming

    services.POSTGRES_INSERT_METHOD = method
    truncate_timings()
    start = time.perf_counter()
    for job_id in job_ids:
        if services.ingest_result(job_id, "bench", result) is None:
            raise RuntimeError(f"job {job_id} was not ingested")
    seconds = time.perf_counter() - start
    rows = OperatorTiming.objects.count()
    assert rows == len(job_ids) * len(result.ops), rows
    return {"seconds": round(seconds, 3), "rows": rows, "rows_per_s": round(rows / seconds)}


def time_raw_copy(result_ids: list[int], result: ProfileResult) -> dict[str, Any]:
    """The same rows, COPY'd straight in one statement (the text is built before the clock starts)."""
    import io

    from server.profiling.models import OperatorTiming
    from server.profiling.services import timing_copy_sql, timing_copy_text, timing_rows

    truncate_timings()
    text, _ = timing_copy_text(row for rid in result_ids for row in timing_rows(rid, result.ops))
    start = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.cursor.copy_expert(timing_copy_sql(), io.StringIO(text))
    seconds = time.perf_counter() - start
    rows = OperatorTiming.objects.count()
    return {"seconds": round(seconds, 3), "rows": rows, "rows_per_s": round(rows / seconds)}


def main() -> None:
    """Measure, print, and write var/benchmarks/ingest_timings.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=None, help="results per method (default 1000; 100 on SQLite)")
    parser.add_argument("--ops", type=int, default=1000, help="operator timings per result")
    args = parser.parse_args()
    postgres = connection.vendor == "postgresql"
    results = args.results or (1000 if postgres else 100)

    # A throw-away database, so the benchmark neither needs nor touches real data.
    test_settings = connection.settings_dict.setdefault("TEST", {})
    test_settings["NAME"] = (
        f"{connection.settings_dict['NAME']}_bench" if postgres else str(settings.VAR_DIR / "bench_latencylab.sqlite3")
    )
    original_name = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        from server.profiling.models import JobResult

        result = make_result(args.ops)
        report: dict[str, Any] = {
            "database": connection.vendor,
            "results": results,
            "ops_per_result": args.ops,
            "rows": results * args.ops,
        }
        methods = ["copy", "bulk_create"] if postgres else ["bulk_create"]
        for method in methods:
            jobs = running_jobs(results)
            report[f"ingest_result_{method}"] = time_ingest(method, jobs, result)
            print(f"ingest_result ({method}): {report[f'ingest_result_{method}']}", flush=True)
        if postgres:
            ids = list(JobResult.objects.order_by("-pk").values_list("pk", flat=True)[:results])
            report["raw_copy"] = time_raw_copy(ids, result)
            print(f"raw COPY: {report['raw_copy']}", flush=True)
            for method in methods:
                key = f"ingest_result_{method}"
                report[key]["ratio_to_raw_copy"] = round(
                    report[key]["rows_per_s"] / report["raw_copy"]["rows_per_s"], 3
                )
            report["copy_vs_bulk_create_speedup"] = round(
                report["ingest_result_copy"]["rows_per_s"] / report["ingest_result_bulk_create"]["rows_per_s"], 2
            )
        from server.profiling import services

        report["ingest_result_uses_on_postgresql"] = "copy"
        services.POSTGRES_INSERT_METHOD = "copy"
    finally:
        for model in _uploaded:
            model.file.delete(save=False)
        connection.creation.destroy_test_db(original_name, verbosity=0)
    out = ROOT / "var" / "benchmarks" / "ingest_timings.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
