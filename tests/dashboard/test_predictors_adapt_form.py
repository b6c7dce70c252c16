"""The predictors page's adapt form: a user's phone measured on three zoo networks becomes a queued
adapted predictor (its page shown next); a line it cannot read is refused on the page, saying which."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from server.predictors.models import Predictor
from tests.server.predictor_data import ready_predictor


@pytest.mark.django_db
def test_the_form_queues_an_adapted_predictor_and_refuses_a_bad_line(
    make_member: Callable, web_client: Callable
) -> None:
    from server.predictors.qed_import import ensure_qed_device

    me = make_member()
    source = ready_predictor(ensure_qed_device("s10")[0])
    client = web_client(me)
    page = client.get("/predictors/").content.decode()
    assert 'id="adapt-form"' in page and 'action="/predictors/adapt/"' in page

    form = {
        "new_device": "My Phone",
        "gpu": "Adreno 640",
        "shots": "mobilenet_v2 7.5\nresnet18 15.2\n\nsqueezenet_1_1=4.1",
    }
    resp = client.post("/predictors/adapt/", form)

    row = Predictor.objects.get(source="adapted")
    assert resp.status_code == 302 and resp["Location"] == f"/predictors/{row.pk}/"
    assert (row.team, row.device.name, row.params["sources"]) == (me.team, "My Phone", [source.pk])
    assert [(s["name"], s["latency_ms"]) for s in row.params["shots"]] == [
        ("mobilenet_v2", 7.5),
        ("resnet18", 15.2),
        ("squeezenet_1_1", 4.1),
    ]

    queued = client.get(resp["Location"]).content.decode()  # what it will be adapted from, before training
    assert 'id="adapted-shots"' in queued and "squeezenet_1_1" in queued and "s10" in queued

    bad = client.post("/predictors/adapt/", {**form, "shots": "mobilenet_v2 7.5\nresnet18 fast"})
    assert bad.status_code == 400 and "line 2: expected MODEL LATENCY_MS" in bad.content.decode()
    assert 'value="My Phone"' in bad.content.decode()  # what was typed stays
    assert Predictor.objects.filter(source="adapted").count() == 1
