"""A team sees only its own models and jobs: another team's ids answer 404 on every endpoint."""

from __future__ import annotations

from typing import Any

import pytest

from server.profiling.models import JobState, ProfilingJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def theirs(make_member: Any, make_network: Any, make_job: Any) -> dict[str, Any]:
    """Another team's model and job."""
    other = make_member()
    model = make_network(other.team)
    return {"model": model, "job": make_job(other.team, model=model)}


def test_other_teams_rows_are_404(api: Any, theirs: dict[str, Any]) -> None:
    model, job = theirs["model"], theirs["job"]
    assert api.get(f"/api/models/{model.pk}/").status_code == 404
    assert api.get(f"/api/jobs/{job.pk}/").status_code == 404
    assert api.post(f"/api/jobs/{job.pk}/cancel/").status_code == 404
    assert api.get("/api/models/").json()["count"] == 0
    assert api.get("/api/jobs/").json()["count"] == 0
    assert api.get(f"/api/jobs/?model={model.pk}").json()["count"] == 0
    job.refresh_from_db()
    assert job.state == JobState.QUEUED  # the cancel did nothing


def test_cannot_submit_with_another_teams_model(api: Any, theirs: dict[str, Any], make_device: Any) -> None:
    response = api.post("/api/jobs/", {"model": theirs["model"].pk, "device": make_device().pk}, format="json")
    assert response.status_code == 400
    assert f"no model #{theirs['model'].pk} in your team" in response.json()["model"][0]
    assert ProfilingJob.objects.count() == 1


def test_same_bytes_in_two_teams_are_two_models(api: Any, theirs: dict[str, Any]) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = theirs["model"].file.read()
    response = api.post("/api/models/", {"file": SimpleUploadedFile("same.json", data)}, format="multipart")
    assert response.status_code == 201
    assert response.json()["id"] != theirs["model"].pk
