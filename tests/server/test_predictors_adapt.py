"""POST /api/predictors/adapt/: a qed phone's predictor adapted from two other phones' predictors and
a few of its measured networks, trained by the trainer's service, then asked like any predictor."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from devicelab.graph import graph_to_dict, zoo
from devicelab.predict import qed
from devicelab.predict.predictor import ScenarioPredictor
from tests.server.predictor_data import ready_predictor

pytestmark = pytest.mark.django_db

TARGET = "mi8se"


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Rows get the same ids in every test (the database is rolled back): forget loaded ones."""
    from server.predictors.serving import clear_cache

    clear_cache()


@functools.lru_cache(maxsize=1)
def pixel4_predictor() -> ScenarioPredictor:
    """A Lasso predictor of the qed pixel4 (fast search), as ``qed_predictor`` is for the s10."""
    from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
    from devicelab.predict.predictor import Scenario, train_predictor

    scenario = Scenario("tflite_gpu", "qed:pixel4", precision="fp16", gpu=qed.DEVICES["pixel4"][0])
    return train_predictor(
        qed.gpu_samples("pixel4")[:30],  # enough for a source; the whole phone takes seconds more
        TfliteGpuDeducer(qed.DEVICES["pixel4"][1]),
        scenario,
        "lasso",
        search="fast",
        overhead_kinds=qed.OVERHEAD_KINDS,
    )


def measured_shots() -> list[dict[str, Any]]:
    """The target's measured end-to-end latencies of the qed networks with a zoo counterpart."""
    e2e = qed.read_e2e()
    column = f"{TARGET}|gpu|float|mean"
    return [
        {"model": zname, "latency_ms": e2e[qname][column] / 1000.0}
        for qname, zname in sorted(qed.ZOO_COUNTERPARTS.items())
        if column in e2e.get(qname, {})
    ]


@pytest.fixture
def sources() -> list[Any]:
    from server.predictors.qed_import import ensure_qed_device

    s10 = ready_predictor(ensure_qed_device("s10")[0])
    pixel4 = ready_predictor(ensure_qed_device("pixel4")[0], predictor=pixel4_predictor())
    return [s10, pixel4]


def test_an_adapted_predictor_trains_and_answers_like_any_predictor(api: Any, member: Any, sources: list[Any]) -> None:
    from django.test import Client

    from server.predictors.models import Predictor, PredictorSource, PredictorState
    from server.predictors.qed_import import ensure_qed_device
    from server.predictors.services import run_training

    target = ensure_qed_device(TARGET)[0]
    shots = measured_shots()
    assert len(shots) >= 8  # the zoo counterparts the training file holds
    held_out, given = shots[0], shots[1:]
    resp = api.post("/api/predictors/adapt/", {"device": target.pk, "shots": given, "method": "lasso"}, format="json")
    assert resp.status_code == 202, resp.content
    row = Predictor.objects.get(pk=resp.json()["id"])
    assert row.source == PredictorSource.ADAPTED and row.state == PredictorState.QUEUED
    assert sorted(row.params["sources"]) == sorted(s.pk for s in sources)  # default: every other device's best

    run_training(row.pk, enqueue_table=False)
    row.refresh_from_db()
    assert row.state == PredictorState.READY, row.failure_reason
    # the stated uncertainty: the leave-one-out error on the shots, one point per shot
    assert row.n_test == len(given) and row.e2e_mape is not None and 0 < row.e2e_mape < 0.5
    assert [p["name"] for p in row.evaluation["points"]] == [s["model"] for s in given]
    provenance = row.meta["adapted"]
    assert [s["name"] for s in provenance["shots"]] == [s["model"] for s in given]
    assert abs(sum(s["weight"] for s in provenance["sources"]) - 1) < 1e-9

    # its page shows what it was adapted from: the sources' weights and each shot's leave-one-out error
    web = Client()
    web.force_login(member.user)
    page = web.get(f"/predictors/{row.pk}/").content.decode()
    assert 'id="adapted-sources"' in page and "Predicted without it" in page
    assert all(s["model"] in page for s in given) and all(s.device.name in page for s in sources)

    graph = zoo.build(held_out["model"])
    answer = api.post(
        "/api/predict/",
        {"predictor": row.pk, "architectures": [{"name": graph.name, "graph": graph_to_dict(graph)}]},
        format="json",
    )
    assert answer.status_code == 200, answer.content
    predicted = answer.json()["results"][0]["latency_ms"]
    # a network no shot included, on a phone none of its sources is: within 35 % of its measurement
    assert abs(predicted - held_out["latency_ms"]) / held_out["latency_ms"] < 0.35


def test_a_device_not_in_the_lab_is_registered_with_its_gpu(api: Any, sources: list[Any]) -> None:
    from server.devices.models import Device

    body = {
        "new_device": {"name": "My Phone", "soc": "Snapdragon 855", "gpu": "Adreno 640"},
        "shots": measured_shots()[:4],
    }
    resp = api.post("/api/predictors/adapt/", body, format="json")
    assert resp.status_code == 202, resp.content
    device = Device.objects.get(identity="user:my-phone")
    assert device.hardware["gpu_family"] == "adreno6xx" and resp.json()["device"] == device.pk
    # a number where a name goes is refused, not read as its digits (schemathesis: gpu 0 was taken)
    bad = {**body, "new_device": {"name": "0", "soc": "", "gpu": 0}}
    refused = api.post("/api/predictors/adapt/", bad, format="json")
    assert refused.status_code == 400 and "gpu" in refused.content.decode(), refused.content


@pytest.mark.parametrize(
    ("shots", "says"),
    [
        (lambda s: s[:2], "shots"),
        (lambda s: [*s[:3], {"model": "no_such_net", "latency_ms": 3.0}], "zoo name"),
        (lambda s: [*s[:3], {"model": "mobilenet_v2", "latency_ms": -1}], "latency_ms"),
    ],
)
def test_bad_shots_are_refused_saying_why(api: Any, sources: list[Any], shots: Any, says: str) -> None:
    from server.predictors.qed_import import ensure_qed_device

    target = ensure_qed_device(TARGET)[0]
    resp = api.post("/api/predictors/adapt/", {"device": target.pk, "shots": shots(measured_shots())}, format="json")
    assert resp.status_code == 400 and says in resp.content.decode(), resp.content


def test_without_a_source_it_says_so(api: Any) -> None:
    from server.predictors.qed_import import ensure_qed_device

    target = ensure_qed_device(TARGET)[0]
    resp = api.post("/api/predictors/adapt/", {"device": target.pk, "shots": measured_shots()[:4]}, format="json")
    assert resp.status_code == 400 and "no ready tflite_gpu fp16 predictor" in resp.content.decode()


def test_lab_jobs_are_shots_with_their_measured_latency(
    member: Any, make_member: Any, make_device: Any, sources: list[Any]
) -> None:
    from django.core.exceptions import ValidationError

    from server.predictors.adapt import request_adapted_predictor
    from tests.server.predictor_data import store_profiles

    cpu = make_device("cpu")
    jobs = store_profiles(member.team, cpu)[:3]
    row = request_adapted_predictor(
        member.team, cpu, [{"job": j.pk} for j in jobs], sources=[sources[0].pk], backend="cpu", precision="fp32"
    )
    assert [(s["job"], s["name"], s["latency_ms"]) for s in row.params["shots"]] == [
        (j.pk, j.model.name, j.result.e2e_central) for j in jobs
    ]
    with pytest.raises(ValidationError, match=f"no profiling job #{jobs[0].pk} of your team"):
        request_adapted_predictor(make_member().team, cpu, [{"job": j.pk} for j in jobs], sources=[sources[0].pk])
