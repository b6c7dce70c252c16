"""A failure reason longer than the stored limit keeps its cause (its end) in the API's lists."""

from __future__ import annotations

from typing import Any

import pytest

from server.predictors.models import Predictor, PredictorSource, PredictorState
from server.profiling.services import claim_job, fail_job

pytestmark = pytest.mark.django_db

CAUSE = "RuntimeError: CL_OUT_OF_RESOURCES while building kernel conv_17"
LONG_REASON = "the device's runtime reported:\n" + "  at frame\n" * 2000 + CAUSE


def test_a_long_job_failure_keeps_its_cause_in_the_job_list(api: Any, member: Any, make_job: Any) -> None:
    job = make_job(member.team)
    assert claim_job(job.pk, "run-1") is not None
    assert fail_job(job.pk, "run-1", LONG_REASON)
    listed = api.get("/api/jobs/", {"state": "failed"}).json()["results"]
    (row,) = [r for r in listed if r["id"] == job.pk]
    assert len(row["failure_reason"]) == 10_000 < len(LONG_REASON)
    assert row["failure_reason"].startswith("the device's runtime reported:")
    assert row["failure_reason"].endswith(CAUSE)


def test_a_long_training_failure_keeps_its_cause(api: Any, member: Any, make_device: Any) -> None:
    row = Predictor.objects.create(
        team=member.team,
        device=make_device(),
        source=PredictorSource.TIMINGS,
        method="lasso",
        scenario={},
        scenario_key="test",
        version=1,
        state=PredictorState.QUEUED,
    )
    assert row.fail(LONG_REASON)
    stored = Predictor.objects.get(pk=row.pk).failure_reason
    assert len(stored) == 10_000 and stored.endswith(CAUSE)
    listed = api.get("/api/predictors/").json()
    items = listed["results"] if isinstance(listed, dict) else listed
    assert [p["failure_reason"] for p in items if p["id"] == row.pk] == [stored]
