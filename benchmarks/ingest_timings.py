"""How fast the server stores a posted profile: ``ingest_result`` against the least work that stores
the same result, interleaved round by round.

Run with DATABASE_URL pointing at PostgreSQL::

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/latencylab .venv/bin/python benchmarks/ingest_timings.py

It works in a throw-away database (``<name>_ingest_bench``, dropped at the end). Every result is the
same Python object the lab API's result endpoint hands the ingest: a ``ProfileRecord`` read back
from its JSON (``ProfileRecord.from_dict``) of ``--ops`` operators (300 by default), each result for
a job of its own, running on a busy device of its own, as a job is when its result arrives.

* **ours**: what ``POST /api/lab/jobs/<id>/result`` does once the record is read
  (``server.labs.protocol.store_result``): in one transaction per result, the job's row locked
  (``lock_job_for_result``) and ``ingest_result(..., locked=job)``: the result row, every operator row, the
  job's success and its device freed.
* **reference** (the fair one): for each result, in its own transaction, the least a correct
  ingest must do: insert the result row (one INSERT of its values, the session's prepared
  statement, as ours' lock and store are), build the COPY text of its operator rows from the
  same record, the fastest way we know (CSV with a quote character no
  field holds, every field written once by one f-string, orjson for the JSON columns; the names
  checked for characters that form cannot carry), and COPY it. No job or device is touched.
* context, not a goal: **batch**, the results of a block stored together as the batch endpoint
  stores them (``POST /api/lab/results``: each job locked, then ``store_results``: one statement
  for the result rows, the jobs' success and their devices freed, one COPY of all their operator
  rows, one transaction); and **one COPY**, the
  operator rows of a block in one COPY whose text was built before the clock started (the old
  script's reference: no result row, no per-result transaction).

Each round runs ours and the reference in two blocks each, alternating (ABAB, BABA the next
round), then batch and one COPY. A round's ratio is ours' rows/s over the reference's; the
report gives the median of the per-round ratios with a 95 % bootstrap interval and the range,
each path's median rows/s, the load average, and issue 33's goal (ours at least 0.9x the
reference). Before timing, one result is stored both ways and the stored rows are compared: the
two do the same work; the statements each sends a result are counted then. The job and device
tables are analyzed once their rows are made, as autovacuum keeps a live database's.
``--profile`` prints where ours spends its time (cProfile). The report goes to
``$LATENCYLAB_VAR_DIR/benchmarks/ingest_timings.json`` (else ``var/benchmarks/``).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time
import weakref
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

import django  # noqa: E402

django.setup()

import orjson  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.utils import timezone  # noqa: E402

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings  # noqa: E402
from devicelab.backends.profile_record import ProfileRecord  # noqa: E402
from devicelab.graph import GraphBuilder, graph_to_json  # noqa: E402
from devicelab.measure.stats import median_interval, summarize  # noqa: E402

GOAL = 0.9  # issue 33: ingest at least 0.9x the fair reference's rows/s
RUN = "bench"


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


def posted_record(ops: int) -> ProfileRecord:
    """The record as the result endpoint hands it to the ingest: read back from its JSON."""
    return ProfileRecord.from_dict(orjson.loads(orjson.dumps(ProfileRecord.of(make_result(ops)).json_ready())))


# -- jobs --------------------------------------------------------------------------------------------


class Jobs:
    """Running jobs claimed by run ``bench``, each on a busy device of its own (claiming is not
    what is timed), handed out in order."""

    def __init__(self, count: int) -> None:
        from server.accounts.services import create_user_with_token
        from server.devices.models import Device, DeviceStatus
        from server.networks.services import upload_model
        from server.profiling.models import JobState, ProfilingJob

        user, _ = create_user_with_token(f"bench{time.time_ns()}", "bench")
        team = user.memberships.get().team
        b = GraphBuilder("bench", (1, 3, 32, 32))
        graph = b.build(b.relu(b.conv(b.input, 8, 3)))
        self.model, _ = upload_model(team, user, graph_to_json(graph).encode(), "bench.json")
        now = timezone.now()
        devices = Device.objects.bulk_create(
            [
                Device(
                    kind="cpu",
                    identity=f"cpu:bench-{i}",
                    name=f"bench cpu {i}",
                    worker="bench",
                    status=DeviceStatus.BUSY,
                    last_heartbeat=now,
                )
                for i in range(count)
            ],
            batch_size=1000,
        )
        jobs = ProfilingJob.objects.bulk_create(
            [
                ProfilingJob(
                    team=team,
                    model=self.model,
                    device=device,
                    settings=ProfileSettings().as_dict(),
                    state=JobState.RUNNING,
                    claimed_by=RUN,
                    started_at=now,
                    attempts=1,
                )
                for device in devices
            ],
            batch_size=1000,
        )
        self.ids = [j.pk for j in jobs]
        # A live database has its tables' statistics (autovacuum); without them the planner
        # takes the thousand running jobs made here for a handful and scans them all.
        with connection.cursor() as cursor:
            cursor.execute(f"ANALYZE {ProfilingJob._meta.db_table}, {Device._meta.db_table}")

    def take(self, n: int) -> list[int]:
        """The next ``n`` job ids."""
        if n > len(self.ids):
            raise RuntimeError("the benchmark ran out of jobs: raise the count made at the start")
        taken, self.ids = self.ids[:n], self.ids[n:]
        return taken

    def close(self) -> None:
        """Remove the uploaded model's file."""
        self.model.file.delete(save=False)


# -- ours ----------------------------------------------------------------------------------------------


def ours(job_ids: list[int], record: ProfileRecord) -> None:
    """Each result as the result endpoint stores it: its own transaction, the job locked, ingested."""
    from server.profiling.services import ingest_result, lock_job_for_result

    for job_id in job_ids:
        with transaction.atomic():
            job = lock_job_for_result(job_id)
            if ingest_result(job_id, RUN, record, locked=job) is None:
                raise RuntimeError(f"job {job_id} was not ingested")


def batch(job_ids: list[int], record: ProfileRecord) -> None:
    """The results together, as the batch endpoint stores them: one transaction, each job locked
    and checked, then one INSERT of the result rows and one COPY of all their operator rows."""
    from server.profiling.services import lock_job_for_result, store_results

    with transaction.atomic():
        checked = []
        for job_id in job_ids:
            job = lock_job_for_result(job_id)
            assert job is not None and job.claimed_by == RUN
            checked.append((job, RUN, record))
        store_results(checked)


# -- the reference ---------------------------------------------------------------------------------------

_NULL_STATS = "\t\t\t\t"


def _stat(value: float | None) -> str:
    return "" if value is None or value != value else repr(float(value))


def reference_text(result_id: int, ops: Iterable[OpTiming]) -> str:
    """The operator rows of a result as CSV COPY text, built the fastest way we know."""
    rid = str(result_id)
    lines = []
    dumps = orjson.dumps
    for op in ops:
        s = op.stats
        stats = (
            _NULL_STATS if s is None else f"{float(s.mean)!r}\t{_stat(s.median)}\t{_stat(s.p90)}\t{_stat(s.std)}\t{s.n}"
        )
        index = "" if op.index is None else op.index
        lines.append(
            f"{rid}\t{index}\t{op.name}\t{op.type}\t{op.kernel or ''}\t{dumps(op.input_shapes).decode()}\t"
            f"{dumps(op.output_shapes).decode()}\t{dumps(op.attrs).decode()}\t{stats}\t{op.fused_into or ''}\n"
        )
    text = "".join(lines)
    # a correct ingest must notice a name the form cannot carry (a tab, a newline, the quote)
    if text.count("\t") != 13 * len(lines) or text.count("\n") != len(lines) or "\r" in text or "\x01" in text:
        raise ValueError("a name holds a character the CSV form cannot carry")
    return text


def _copy_sql() -> str:
    from server.profiling.models import OperatorTiming

    table = OperatorTiming._meta.db_table
    return (
        f'COPY "{table}" ("result_id", "index", "name", "op_type", "kernel", "input_shapes", "output_shapes", '
        '"attrs", "mean", "median", "p90", "std", "n", "fused_into") FROM STDIN WITH (FORMAT csv, '
        'DELIMITER E\'\\t\', QUOTE E\'\\x01\', FORCE_NOT_NULL ("name", "op_type", "kernel", "fused_into"))'
    )


_RESULT_COLUMNS = (
    "job_id",
    "attempt",
    "e2e_mean",
    "e2e_median",
    "e2e_p90",
    "e2e_std",
    "e2e_min",
    "e2e_max",
    "e2e_cv",
    "e2e_n",
    "noisy",
    "flags",
    "samples_ms",
    "load_ms",
    "first_run_ms",
    "peak_memory_mb",
    "environment",
    "settings",
    "device_info",
    "cold_starts",
    "time_breakdown",
    "created_at",
)


def _result_sql() -> str:
    """The reference's INSERT of a result row, its values numbered for PREPARE."""
    from server.profiling.models import JobResult

    names = ", ".join(f'"{c}"' for c in _RESULT_COLUMNS)
    marks = ", ".join(f"${i}" for i in range(1, len(_RESULT_COLUMNS) + 1))
    return f'INSERT INTO "{JobResult._meta.db_table}" ({names}) VALUES ({marks}) RETURNING "id"'


# The reference's INSERT is the session's prepared statement, planned once, as ours' lock and store are.
_REFERENCE_INSERT = "bench_reference_insert"
_prepared_in: weakref.WeakSet[Any] = weakref.WeakSet()  # the sessions (connections) that prepared it


def _nan_null(value: float | None) -> float | None:
    return None if value is None or value != value else value


def reference(job_ids: list[int], record: ProfileRecord, result_ids: list[int] | None = None) -> None:
    """Per result, its own transaction: the result row in one INSERT (prepared), its operator
    rows' text built from the record and COPYed."""
    copy = _copy_sql()
    insert = f"EXECUTE {_REFERENCE_INSERT}({', '.join(['%s'] * len(_RESULT_COLUMNS))})"
    e = record.e2e
    for job_id in job_ids:
        with transaction.atomic(), connection.cursor() as cursor:
            if cursor.cursor.connection not in _prepared_in:
                cursor.execute(f"PREPARE {_REFERENCE_INSERT} AS {_result_sql()}")
                _prepared_in.add(cursor.cursor.connection)
            cursor.execute(
                insert,
                (
                    job_id,
                    1,
                    e.mean,
                    _nan_null(e.median),
                    _nan_null(e.p90),
                    _nan_null(e.std),
                    _nan_null(e.min),
                    _nan_null(e.max),
                    _nan_null(e.cv),
                    e.n,
                    e.noisy,
                    orjson.dumps(record.flags).decode(),
                    orjson.dumps(record.samples_ms).decode(),
                    record.load_ms,
                    record.first_run_ms,
                    record.peak_memory_mb,
                    orjson.dumps(record.environment).decode(),
                    orjson.dumps(record.settings.as_dict()).decode(),
                    orjson.dumps(record.device.as_dict()).decode(),
                    orjson.dumps(record.cold_starts).decode(),
                    orjson.dumps(record.time_breakdown).decode(),
                    timezone.now(),
                ),
            )
            (result_id,) = cursor.fetchone()
            cursor.cursor.copy_expert(copy, io.StringIO(reference_text(result_id, record.ops)))
        if result_ids is not None:
            result_ids.append(result_id)


def one_copy(result_ids: list[int], record: ProfileRecord) -> Callable[[], None]:
    """The operator rows of these results in one COPY, its text built now (before the clock)."""
    text = "".join(reference_text(rid, record.ops) for rid in result_ids)
    sql = _copy_sql()

    def run() -> None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.cursor.copy_expert(sql, io.StringIO(text))

    return run


# -- the same work ---------------------------------------------------------------------------------------


def stored_rows(job_id: int) -> tuple[dict[str, Any], list[tuple[Any, ...]]]:
    """What is stored of a job's result: the result row (without its ids and dates) and the
    operator rows in order (without theirs)."""
    from server.profiling.models import JobResult, OperatorTiming

    result = JobResult.objects.filter(job_id=job_id).values().get()
    for key in ("id", "job_id", "created_at"):
        result.pop(key)
    fields = [f.column for f in OperatorTiming._meta.concrete_fields if f.column not in ("id", "result_id")]
    rows = list(OperatorTiming.objects.filter(result__job_id=job_id).order_by("pk").values_list(*fields))
    return result, rows


def check_same_work(jobs: Jobs, record: ProfileRecord) -> dict[str, int]:
    """One result stored by ours and by the reference: the same rows. Answers the statements
    each sent for it: those the ORM counts (BEGIN and COMMIT among them, a session's PREPARE
    not) and the COPY."""
    from django.test.utils import CaptureQueriesContext

    a, b = jobs.take(2)
    with CaptureQueriesContext(connection) as ours_sql:
        ours([a], record)
    with CaptureQueriesContext(connection) as reference_sql:
        reference([b], record)
    if stored_rows(a) != stored_rows(b):
        raise AssertionError("ours and the reference store different rows: the comparison would be unfair")

    def sent(queries: CaptureQueriesContext) -> int:  # a PREPARE is once a session, not once a result
        return sum(not q["sql"].startswith("PREPARE") for q in queries.captured_queries) + 1

    return {"ours": sent(ours_sql), "reference": sent(reference_sql)}


# -- measuring ---------------------------------------------------------------------------------------------


def timed(run: Callable[[], None]) -> float:
    """Seconds one call takes."""
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure(rounds: int, block: int, record: ProfileRecord, jobs: Jobs) -> dict[str, Any]:
    """``rounds`` rounds (and one warm-up): ours and the reference ABAB / BABA, then batch and one COPY."""
    rows_per_result = len(record.ops)
    per: dict[str, list[float]] = {"ours": [], "reference": [], "batch": [], "one_copy": []}
    ratios: list[float] = []
    loads: list[float] = []
    for r in range(rounds + 1):
        load = os.getloadavg()[0]
        seconds = {"ours": 0.0, "reference": 0.0}
        order = ["ours", "reference", "ours", "reference"] if r % 2 == 0 else ["reference", "ours", "reference", "ours"]
        result_ids: list[int] = []
        for path in order:
            ids = jobs.take(block)
            start = time.perf_counter()
            if path == "ours":
                ours(ids, record)
            else:
                reference(ids, record, result_ids)
            seconds[path] += time.perf_counter() - start
        batch_ids = jobs.take(block)
        start = time.perf_counter()
        batch(batch_ids, record)
        batch_s = time.perf_counter() - start
        one_copy_s = timed(one_copy(result_ids[:block], record))
        if r == 0:
            continue  # warm-up
        rows = 2 * block * rows_per_result
        for path in ("ours", "reference"):
            per[path].append(rows / seconds[path])
        per["batch"].append(block * rows_per_result / batch_s)
        per["one_copy"].append(block * rows_per_result / one_copy_s)
        ratios.append(per["ours"][-1] / per["reference"][-1])
        loads.append(load)
        print(
            f"round {r:2d}: ours {per['ours'][-1]:8.0f} rows/s, reference {per['reference'][-1]:8.0f}, "
            f"ratio {ratios[-1]:.3f}; batch {per['batch'][-1]:8.0f}, one COPY {per['one_copy'][-1]:8.0f}; "
            f"load {load:.2f}",
            flush=True,
        )
    low, high = median_interval(ratios, draws=4000)
    median = statistics.median(ratios)
    context = {
        f"{path}_over_reference": round(statistics.median(a / b for a, b in zip(per[path], per["reference"])), 3)
        for path in ("batch", "one_copy")
    }
    return {
        "ratio": {
            "what": "ours rows/s / reference rows/s, per round (the same results, blocks interleaved)",
            "median": round(median, 3),
            "ci95": [round(low, 3), round(high, 3)],
            "range": [round(min(ratios), 3), round(max(ratios), 3)],
            "per_round": [round(x, 3) for x in ratios],
        },
        "rows_per_s_median": {path: round(statistics.median(v)) for path, v in per.items()},
        "ms_per_result_median": {
            path: round(1e3 * rows_per_result / statistics.median(v), 2) for path, v in per.items()
        },
        "context": context,
        "goal": {
            "what": f"ours >= {GOAL}x the fair reference (issue 33)",
            "value": GOAL,
            "met": low >= GOAL,
            "met_by_median": median >= GOAL,
        },
        "load_average": {"min": min(loads), "median": round(statistics.median(loads), 2), "max": max(loads)},
    }


def profile_ours(jobs: Jobs, record: ProfileRecord, n: int = 60) -> str:
    """Where ours spends its time: cProfile of ``n`` results, the top entries."""
    ids = jobs.take(n)
    prof = cProfile.Profile()
    prof.enable()
    ours(ids, record)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(14)
    stats.sort_stats("cumulative").print_stats("profiling/services.py|labs/protocol.py|transaction.py", 14)
    return out.getvalue()


def out_path() -> Path:
    """``$LATENCYLAB_VAR_DIR/benchmarks/ingest_timings.json``, else under ``var/`` beside the code."""
    var = os.environ.get("LATENCYLAB_VAR_DIR", "").strip()
    return (Path(var) if var else ROOT / "var") / "benchmarks" / "ingest_timings.json"


def main(argv: list[str] | None = None) -> int:
    """Measure, print, and write the report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--block", type=int, default=10, help="results per block (default %(default)s)")
    parser.add_argument("--ops", type=int, default=300, help="operators per result (default %(default)s)")
    parser.add_argument("--profile", action="store_true", help="also print cProfile of ours")
    args = parser.parse_args(argv)
    if connection.vendor != "postgresql":
        print("this benchmark compares COPYs: it needs PostgreSQL in DATABASE_URL", file=sys.stderr)
        return 2
    test = connection.settings_dict.setdefault("TEST", {})
    test["NAME"] = f"{connection.settings_dict['NAME']}_ingest_bench"
    original = connection.settings_dict["NAME"]
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    jobs: Jobs | None = None
    try:
        record = posted_record(args.ops)
        jobs = Jobs(2 + (args.rounds + 1) * 5 * args.block + (60 if args.profile else 0))
        statements = check_same_work(jobs, record)
        report: dict[str, Any] = {
            "benchmark": "ingest_timings",
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
            "rounds": args.rounds,
            "results_per_block": args.block,
            "ops_per_result": args.ops,
            "same_work_checked": True,
            "statements_per_result": statements,
        }
        report.update(measure(args.rounds, args.block, record, jobs))
        if args.profile:
            report["profile"] = profile_ours(jobs, record)
    finally:
        if jobs is not None:
            jobs.close()
        connection.creation.destroy_test_db(original, verbosity=0)
    ratio = report["ratio"]
    print(
        f"\ningest of {args.ops}-operator results, {args.rounds} rounds, load average "
        f"{report['load_average']['min']:.1f}-{report['load_average']['max']:.1f}\n"
        f"  ours:      {report['rows_per_s_median']['ours']:8d} rows/s ({report['ms_per_result_median']['ours']} ms a result)\n"
        f"  reference: {report['rows_per_s_median']['reference']:8d} rows/s "
        f"({report['ms_per_result_median']['reference']} ms a result)\n"
        f"  ratio ours/reference: {ratio['median']:.3f} (95 % CI {ratio['ci95'][0]:.3f}-{ratio['ci95'][1]:.3f}, "
        f"range {ratio['range'][0]:.3f}-{ratio['range'][1]:.3f}); goal >= {GOAL}: "
        f"{'met' if report['goal']['met'] else 'met by the median only' if report['goal']['met_by_median'] else 'not met'}\n"
        f"  statements a result (BEGIN and COMMIT included): ours {statements['ours']}, reference {statements['reference']}\n"
        f"  context: batch of {args.block} {report['rows_per_s_median']['batch']} rows/s "
        f"({report['context']['batch_over_reference']}x the reference), one COPY of a block "
        f"{report['rows_per_s_median']['one_copy']} rows/s ({report['context']['one_copy_over_reference']}x)"
    )
    if args.profile:
        print(report["profile"])
    out = out_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
