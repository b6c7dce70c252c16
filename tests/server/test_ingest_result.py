"""Ingesting a run's result: all rows in one go, exactly once, only from the run holding the job."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from devicelab.backends.base import OpTiming
from devicelab.measure.stats import summarize
from server.devices.models import DeviceStatus
from server.networks.services import model_graph
from server.profiling.models import JobResult, JobState, OperatorTiming
from server.profiling.services import (
    bulk_create_timing_rows,
    claim_job,
    copy_timing_rows,
    ingest_result,
    requeue_orphaned_jobs,
    timing_rows,
)
from tests.server.factories import profile_result

pytestmark = pytest.mark.django_db


def running_job(member: Any, make_job: Any, token: str = "run-1") -> Any:
    job = make_job(member.team)
    assert claim_job(job.pk, token) is not None
    job.refresh_from_db()
    return job


def test_ingest_stores_result_and_every_operator(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    graph = model_graph(job.model)
    result = profile_result(graph)
    stored = ingest_result(job.pk, "run-1", result)
    assert stored is not None and stored.attempt == 1
    assert (stored.e2e_n, stored.load_ms, stored.first_run_ms) == (5, 12.5, 3.25)
    assert stored.e2e_median == pytest.approx(result.e2e.median)
    assert stored.samples_ms == result.samples_ms and stored.settings["runs"] == 30
    rows = list(OperatorTiming.objects.filter(result=stored).order_by("pk"))
    assert len(rows) == len(graph.operators) + 1
    conv, relu, runtime = rows[0], rows[2], rows[-1]
    assert (conv.kernel, conv.n, conv.input_shapes) == ("FusedConv", 3, [[1, 3, 16, 16]])
    assert (relu.mean, relu.n, relu.fused_into) == (None, None, conv.name)
    assert (runtime.index, runtime.op_type, runtime.kernel) == (None, "runtime", "ReorderInput")
    job.refresh_from_db()
    assert (job.state, job.progress) == (JobState.SUCCEEDED, 1.0)
    job.device.refresh_from_db()
    assert job.device.status == DeviceStatus.ONLINE


def test_second_ingest_is_a_no_op(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    result = profile_result(model_graph(job.model))
    first = ingest_result(job.pk, "run-1", result)
    count = OperatorTiming.objects.count()
    again = ingest_result(job.pk, "run-1", result)
    assert again is not None and again.pk == first.pk  # type: ignore[union-attr]
    assert OperatorTiming.objects.count() == count
    assert JobResult.objects.filter(job=job).count() == 1


def test_ingest_from_a_run_that_lost_the_job_is_dropped(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    # The worker restarted with a new run token: its old run's job goes back to the queue...
    assert [j.pk for j in requeue_orphaned_jobs(job.device.worker, "run-2")] == [job.pk]
    assert claim_job(job.pk, "run-2") is not None
    # ...and a late report from the old run writes nothing.
    assert ingest_result(job.pk, "run-1", profile_result(model_graph(job.model))) is None
    assert not JobResult.objects.exists()
    stored = ingest_result(job.pk, "run-2", profile_result(model_graph(job.model)))
    assert stored is not None and stored.attempt == 2


def test_ingest_for_a_cancelled_job_writes_nothing(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    job.cancel()
    assert ingest_result(job.pk, "run-1", profile_result(model_graph(job.model))) is None
    assert OperatorTiming.objects.count() == 0


@pytest.mark.skipif(connection.vendor != "postgresql", reason="COPY needs PostgreSQL (set DATABASE_URL)")
def test_copy_and_bulk_insert_store_the_same_values(member: Any, make_job: Any) -> None:
    job = running_job(member, make_job)
    stored = ingest_result(job.pk, "run-1", profile_result(model_graph(job.model)))
    awkward = OpTiming(
        index=7,
        name='tab\there\nnew\\line "quoted" é',
        type="custom",
        kernel="k\\N",
        input_shapes=[[1, 2]],
        output_shapes=[[1, 2]],
        attrs={"s": "a\tb\\c\n", "f": 0.1},
        stats=summarize([1e-9, 2.5e-7]),
    )
    OperatorTiming.objects.all().delete()
    copy_timing_rows(timing_rows(stored.pk, [awkward]))  # type: ignore[union-attr]
    bulk_create_timing_rows(timing_rows(stored.pk, [awkward]))  # type: ignore[union-attr]
    a, b = OperatorTiming.objects.order_by("pk")
    fields = [f.name for f in OperatorTiming._meta.fields if f.name != "id"]
    assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
    assert a.name == awkward.name and a.attrs == awkward.attrs and a.kernel == "k\\N"
