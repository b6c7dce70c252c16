"""A web process pays at start what its first prediction would: the recent predictors loaded, the
batch workers started (``serving.warm_up``, from gunicorn's ``post_worker_init``); and a
prediction answer is the JSON it always was."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.server.predictor_data import ready_predictor

pytestmark = pytest.mark.django_db

CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    from server.predictors.serving import clear_cache

    clear_cache()


def test_the_best_predictor_of_recent_devices_is_loaded(make_device: Any, monkeypatch: Any) -> None:
    from django.db import connection

    from server.predictors import serving

    monkeypatch.setattr(connection, "close", lambda: None)  # the test's connection holds its transaction
    phone = make_device(kind="android")
    worse = ready_predictor(phone, e2e_mape=0.3)
    best = ready_predictor(phone, e2e_mape=0.05)
    serving._load_recent()
    loaded_ids = {key[0] for key in serving._cache}
    assert best.pk in loaded_ids and worse.pk not in loaded_ids


def test_warm_up_starts_without_a_database_and_nothing_fails() -> None:
    from server.predictors import serving

    serving.warm_up(load_predictors=False)
    assert not serving._cache


def test_the_answer_is_plain_json_and_bad_input_still_a_named_400(api: Any, make_device: Any) -> None:
    phone = make_device(kind="android")
    row = ready_predictor(phone)
    body = {"predictor": row.pk, "architectures": [{"name": "a", "nb201": CELL}]}
    resp = api.post("/api/predict/", json.dumps(body), content_type="application/json")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/json"
    answer = json.loads(resp.content)
    assert answer["results"][0]["name"] == "a" and answer["results"][0]["latency_ms"] > 0
    assert answer["predictor"]["id"] == row.pk
    bad = {"predictor": row.pk, "architectures": [{"name": "b", "nb201": CELL.replace("skip_connect", "conv_9x9")}]}
    resp = api.post("/api/predict/", json.dumps(bad), content_type="application/json")
    assert resp.status_code == 400
    (error,) = json.loads(resp.content)["errors"]
    assert error["index"] == 0 and error["name"] == "b" and "unknown op 'conv_9x9'" in error["error"]


def test_loading_a_predictor_checks_its_nb201_kernels_beside_the_request(make_device: Any) -> None:
    from devicelab.predict import nb201_kernels
    from server.predictors import serving
    from server.predictors.models import Predictor
    from tests.waiting import wait_for

    row = ready_predictor(make_device(kind="android"))
    entry = serving.loaded(serving._light(Predictor.objects.filter(pk=row.pk)).get())
    deducer = entry.predictor.deducer
    wait_for(lambda: nb201_kernels.known(deducer) is not None, timeout=30, what="the NB-201 kernel check")
    assert nb201_kernels.known(deducer) is True
