"""Ingest's fast forms store exactly what the ORM would: the CSV COPY of operator rows (and its
fall-back to the escaped text form for names it cannot carry), the lock read of a posted result,
the result row's JSON, and several results stored together, each job succeeding and its device
freed only when nothing else of it runs; a posted result costs the lock, one statement and the
COPY, without savepoints."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from devicelab.backends.base import OpTiming, ProfileResult
from devicelab.backends.profile_record import ProfileRecord
from devicelab.measure.stats import summarize
from server.devices.models import DeviceStatus
from server.networks.services import model_graph
from server.profiling.models import JobResult, JobState, OperatorTiming
from server.profiling.services import (
    bulk_create_timing_rows,
    claim_job,
    ingest_result,
    insert_timings,
    lock_job_for_result,
    store_results,
    timing_csv_text,
    timing_rows,
)
from tests.server.factories import profile_result

pytestmark = pytest.mark.django_db

FIELDS = [f.name for f in OperatorTiming._meta.fields if f.name not in ("id", "result")]


def running_job(member: Any, make_job: Any, token: str = "run-1", **kwargs: Any) -> Any:
    job = make_job(member.team, **kwargs)
    assert claim_job(job.pk, token) is not None
    job.refresh_from_db()
    return job


def op(name: str = "conv", attrs: Any = None, shapes: Any = ((1, 2),), stats: Any = True) -> OpTiming:
    return OpTiming(
        index=3,
        name=name,
        type="conv2d",
        kernel="k\\N",
        input_shapes=list(shapes),  # type: ignore[arg-type]
        output_shapes=[[1, 2]],
        attrs=attrs if attrs is not None else {"s": 'a\\b "q" é', "eps": 1e-7, "big": 1e16, "f": 0.1},
        stats=summarize([1e-9, 2.5e-7]) if stats else None,
        fused_into=None if stats else "conv",
    )


AWKWARD = [
    op(),
    op(name="back\\slash \\N and \\t"),  # backslashes mean nothing in the CSV form
    op(name="", stats=False),  # empty text, fused: null statistics
    op(name="tab\there"),  # the CSV form cannot carry it: the escaped text form
    op(name="new\nline\r"),
    op(name="quote\x01char"),
    op(attrs={1: "int key", "nested": {"x": [1.5, None, True]}}),  # not orjson's: the stdlib's
    op(shapes=((1, 3, 224, 224), (1,))),  # tuples
]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY needs PostgreSQL (set DATABASE_URL)")
@pytest.mark.parametrize("timing", AWKWARD, ids=range(len(AWKWARD)))
def test_the_copy_stores_what_the_orm_stores(member: Any, make_job: Any, timing: OpTiming) -> None:
    job = running_job(member, make_job)
    stored = ingest_result(job.pk, "run-1", profile_result(model_graph(job.model)))
    assert stored is not None
    OperatorTiming.objects.all().delete()

    assert insert_timings([(stored.pk, [timing])]) == 1
    bulk_create_timing_rows(timing_rows(stored.pk, [timing]))

    a, b = OperatorTiming.objects.order_by("pk")
    assert [getattr(a, f) for f in FIELDS] == [getattr(b, f) for f in FIELDS]
    assert a.name == timing.name and a.kernel == "k\\N"


def test_the_csv_form_refuses_what_it_cannot_carry() -> None:
    assert timing_csv_text(1, [op()]) is not None
    for name in ("tab\there", "new\nline", "cr\r", "q\x01"):
        assert timing_csv_text(1, [op(name=name)]) is None
    assert timing_csv_text(1, [op(attrs={1: "an int key"})]) is None  # not orjson's: the text form writes it


def test_the_lock_reads_what_the_checks_need(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    with transaction.atomic():
        locked = lock_job_for_result(job.pk)
        assert locked is not None
        assert (locked.pk, locked.kind, locked.state, locked.claimed_by, locked.attempts) == (
            job.pk,
            "profile",
            JobState.RUNNING,
            "run-1",
            1,
        )
        assert (locked.device_id, locked.device.worker) == (job.device_id, job.device.worker)
        assert lock_job_for_result(job.pk + 1000) is None


def test_several_results_are_stored_together(member: Any, make_job: Any, make_device: Any) -> None:
    device = make_device()
    jobs = [running_job(member, make_job, token=f"run-{i}", device=device) for i in range(3)]
    other = running_job(member, make_job, token="run-x", device=device)  # still running on the device
    records = [ProfileRecord.of(profile_result(model_graph(j.model))) for j in jobs]

    with transaction.atomic():
        locked = [lock_job_for_result(j.pk) for j in jobs]
        stored = store_results([(job, f"run-{i}", rec) for i, (job, rec) in enumerate(zip(locked, records))])  # type: ignore[misc]

    assert [r.job_id for r in stored] == [j.pk for j in jobs]
    for job, result, record in zip(jobs, stored, records, strict=True):
        job.refresh_from_db()
        assert (job.state, job.progress, job.progress_message) == (JobState.SUCCEEDED, 1.0, "done")
        assert job.finished_at is not None
        assert JobResult.objects.get(job=job).pk == result.pk and result.attempt == 1
        names = list(result.operators.order_by("pk").values_list("name", flat=True))
        assert names == [t.name for t in record.ops]
    device.refresh_from_db()
    assert device.status == DeviceStatus.BUSY  # another job still runs on it

    with transaction.atomic():
        (last,) = store_results([(lock_job_for_result(other.pk), "run-x", records[0])])  # type: ignore[list-item]
    device.refresh_from_db()
    assert device.status == DeviceStatus.ONLINE and last.job_id == other.pk


def test_a_job_that_moved_under_the_store_rolls_it_back(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    record = ProfileRecord.of(profile_result(model_graph(job.model)))
    with pytest.raises(RuntimeError, match="changed state"), transaction.atomic():
        store_results([(lock_job_for_result(job.pk), "another-run", record)])  # type: ignore[list-item]
    assert not JobResult.objects.exists() and not OperatorTiming.objects.exists()
    job.refresh_from_db()
    assert job.state == JobState.RUNNING


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement store is PostgreSQL's")
def test_a_posted_result_is_the_lock_one_statement_and_the_copy(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    record = ProfileRecord.of(profile_result(model_graph(job.model)))
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:  # as the result endpoint runs it
        locked = lock_job_for_result(job.pk)
        assert ingest_result(job.pk, "run-1", record, locked=locked) is not None
    # the lock, then the result row with the job's success and its device freed (the COPY of the
    # operator rows goes past the ORM), each the session's prepared statement (prepared on its
    # first use); no savepoint inside the request's transaction
    sql = [q["sql"] for q in queries.captured_queries if not q["sql"].startswith("PREPARE")]
    assert len(sql) == 2, sql
    assert sql[0].startswith("EXECUTE latencylab_lock_for_result(") and sql[1].startswith(
        "EXECUTE latencylab_store_result("
    )
    assert not any("SAVEPOINT" in q["sql"] for q in queries.captured_queries)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and job.result.operators.count() == len(record.ops)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
@pytest.mark.django_db(transaction=True)
def test_the_prepared_statements_outlive_a_rollback_and_a_new_connection(member: Any, make_job: Any) -> None:
    job, other = running_job(member, make_job), running_job(member, make_job, token="run-2")
    record = ProfileRecord.of(profile_result(model_graph(job.model)))
    connection.close()  # a new session: prepared again on first use
    with pytest.raises(RuntimeError, match="changed state"), transaction.atomic():
        store_results([(lock_job_for_result(job.pk), "another-run", record)])  # type: ignore[list-item]
    with transaction.atomic():  # the rollback kept what was prepared
        assert ingest_result(job.pk, "run-1", record, locked=lock_job_for_result(job.pk)) is not None
    connection.close()
    with transaction.atomic():
        assert ingest_result(other.pk, "run-2", record, locked=lock_job_for_result(other.pk)) is not None
    assert JobResult.objects.filter(job__in=[job, other]).count() == 2


def test_the_result_row_stores_its_json_as_the_orm_would(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    base = profile_result(model_graph(job.model))
    environment = {"runtime": "x", 1: "an int key", "nested": {"v": [1.5, None, True, 1e-7]}, "é": "ü"}
    result = ProfileResult(**{**base.__dict__, "environment": environment, "samples_ms": [1.0, 2.5e-7, 1e16]})
    stored = ingest_result(job.pk, "run-1", result)
    assert stored is not None
    row = JobResult.objects.get(pk=stored.pk)
    assert row.environment == {"runtime": "x", "1": "an int key", "nested": {"v": [1.5, None, True, 1e-7]}, "é": "ü"}
    assert row.samples_ms == [1.0, 2.5e-7, 1e16] and row.settings == stored.settings
    assert (row.device_info, row.cold_starts, row.flags) == (stored.device_info, stored.cold_starts, stored.flags)
    assert row.created_at == stored.created_at
