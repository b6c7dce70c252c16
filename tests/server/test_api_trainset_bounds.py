"""``POST /api/trainsets/`` holds a server thread while it uploads and queues, so one request is
bounded (100 synthetic samples, 200 jobs of (synthetic + zoo models) x rounds) and the 400 says how
to send a bigger set: samples split by ``first_sample``, the same networks one request draws."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def test_more_than_200_jobs_in_one_request_is_a_400_naming_the_bound(api: Any, make_device: Any) -> None:
    from server.profiling.models import ProfilingJob

    device = make_device("cpu")
    body = {"device": device.pk, "synthetic": 100, "zoo": ["mobilenet_v2"], "rounds": 2, "probes": False}
    response = api.post("/api/trainsets/", body, format="json")
    assert response.status_code == 400, response.content
    message = response.json()["non_field_errors"][0]
    assert message.startswith("(synthetic + zoo models) x rounds is (100 + 1) x 2 = 202 jobs; one request queues")
    assert "at most 200" in message and "first_sample" in message
    # ["all"] counts as the zoo's models.
    response = api.post("/api/trainsets/", {"device": device.pk, "zoo": ["all"], "rounds": 7}, format="json")
    assert response.status_code == 400 and "(0 + 32) x 7 = 224 jobs" in response.json()["non_field_errors"][0]
    response = api.post("/api/trainsets/", {"device": device.pk, "synthetic": 101}, format="json")
    assert response.status_code == 400 and response.json()["synthetic"] == ["must be between 0 and 100, got 101"]
    assert not ProfilingJob.objects.exists()


def test_a_zoo_model_named_twice_is_a_400(api: Any, make_device: Any) -> None:
    body = {"device": make_device("cpu").pk, "zoo": ["mobilenet_v2", "mobilenet_v2"]}
    response = api.post("/api/trainsets/", body, format="json")
    assert response.status_code == 400 and "mobilenet_v2" in str(response.json()["zoo"])


def test_first_sample_draws_the_samples_one_request_would(api: Any, make_device: Any) -> None:
    from server.profiling.models import ProfilingJob

    device = make_device("cpu")
    parts = [{"synthetic": 2, "first_sample": 0}, {"synthetic": 1, "first_sample": 2}]
    for part in parts:
        response = api.post("/api/trainsets/", {"device": device.pk, "seed": 3, "probes": False, **part}, format="json")
        assert response.status_code == 202, response.content
    names = set(ProfilingJob.objects.values_list("model__name", flat=True))
    assert names == {"synthetic-3-0", "synthetic-3-1", "synthetic-3-2"}
    whole = api.post(
        "/api/trainsets/", {"device": device.pk, "synthetic": 3, "seed": 3, "probes": False}, format="json"
    )
    assert whole.status_code == 202 and not whole.json()["submitted"] and len(whole.json()["reused"]) == 3


def test_the_schema_states_the_bounds(api: Any) -> None:
    schema = api.get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/trainsets/"]["post"]
    assert "at most 100 synthetic samples and 200 jobs" in operation["description"]
    body = schema["components"]["schemas"]["TrainingSetRequestRequest"]["properties"]
    assert body["synthetic"]["maximum"] == 100 and body["first_sample"]["minimum"] == 0
    assert body["zoo"]["uniqueItems"] is True
