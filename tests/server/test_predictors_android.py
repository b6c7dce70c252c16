"""Predictors of phones (issue 19): one delegate's stored jobs train a ``tflite_cpu`` or
``tflite_gpu`` predictor through the ordinary request / train path, and a measured phone sits
beside the qed phone of its model.

The jobs go through the real services (submit, claim, ingest) with results of the shapes the
android backend stores (``tests/devicelab/predict/tflite_phone_data.py``: aggregates only, no
median; one row per operator; XNNPACK kernels or a GPU partition).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.backends.base import DELEGATES, Capabilities, ProfileSettings
from devicelab.graph import Graph, graph_to_dict, graph_to_json, nas, zoo
from tests.devicelab.predict.tflite_phone_data import GLES, RUNTIME, phone_device, phone_result
from tests.server.predictor_data import ready_predictor

pytestmark = pytest.mark.django_db

CAPABILITIES = Capabilities(
    precisions=("fp32", "fp16"),
    max_threads=8,
    pins_cores=True,
    cores=tuple(range(8)),
    runtimes=(RUNTIME,),
    formats=("tflite",),
    delegates=DELEGATES,
    core_clusters={"little": (0, 1, 2, 3), "big": (4, 5, 6, 7)},
    cools_down=True,
)
SIZES = ("mobilenet_v1_0.25", "mobilenet_v1_0.5", "mobilenet_v1")  # one network, growing width


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Rows get the same ids in every test (the database is rolled back): forget loaded ones."""
    from server.predictors.serving import clear_cache

    clear_cache()


@functools.lru_cache(maxsize=1)
def _training_graphs() -> tuple[Graph, ...]:
    return (*nas.sample("synthetic", 8, 5), zoo.build("mobilenet_v1_0.25"), zoo.build("squeezenet_1_1"))


@functools.lru_cache(maxsize=1)
def _sized_graphs() -> tuple[Graph, ...]:
    return tuple(zoo.build(n) for n in SIZES)


def _phone(make_device: Any, model: str = "Pixel 4", serial: str = "PIXEL4A") -> Any:
    info = phone_device(f"android:{serial}", model)
    return make_device("android", hardware=info.hardware, identity=info.identity, capabilities=CAPABILITIES)


def _store(team: Any, device: Any, graphs: tuple[Graph, ...], **settings: Any) -> list[Any]:
    """Profile each graph on the phone through the services; the jobs, in order."""
    from server.networks.services import upload_model
    from server.profiling.services import claim_job, ingest_result, submit_profiling_job

    jobs = []
    for g in graphs:
        model, _ = upload_model(team, None, graph_to_json(g).encode(), f"{g.name}.json", name=g.name)
        job = submit_profiling_job(team, model, device, {"runs": 20, "warmup_runs": 2, **settings})
        token = f"phone-run-{job.pk}"
        assert claim_job(job.pk, token) is not None
        result = phone_result(g, ProfileSettings.from_dict(job.settings), phone_device(device.identity))
        assert ingest_result(job.pk, token, result) is not None
        jobs.append(job)
    return jobs


def _truth(settings: ProfileSettings) -> list[float]:
    """What the test phone measures for the sized networks."""
    return [phone_result(g, settings).e2e.mean for g in _sized_graphs()]


def _check_sane(predicted: list[float], truth: list[float], within: float) -> None:
    assert all(math.isfinite(v) and v > 0 for v in predicted), predicted
    assert predicted == sorted(predicted) and predicted[0] < predicted[-1] / 2, predicted
    assert all(abs(p - t) / t < within for p, t in zip(predicted, truth, strict=True)), (predicted, truth)


def test_an_xnnpack_predictor_trains_on_that_delegates_jobs_only(member: Any, make_device: Any) -> None:
    from server.predictors.artifacts import load_row
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training
    from server.profiling.models import JobResult

    phone = _phone(make_device)
    graphs = _training_graphs()
    mine = _store(member.team, phone, graphs, delegate="xnnpack", cores="big")
    _store(member.team, phone, graphs[:5], delegate="cpu", cores="big")  # another delegate: never mixed in
    _store(member.team, phone, graphs[:5], delegate="xnnpack")  # no cores pinned: another scenario
    stored = JobResult.objects.get(job=mine[0])
    assert stored.e2e_median is None and stored.e2e_mean > 0  # the tool prints no median

    row = request_predictor(member.team, phone, method="lasso", search="fast", delegate="xnnpack", cores="big")
    assert row.scenario_key == f"tflite_cpu:{phone.identity}|threads=1|cores=4,5,6,7|fp32|delegate=xnnpack"
    assert row.scenario["delegate"] == "xnnpack" and row.params["delegate"] == "xnnpack"
    row = run_training(row.pk)
    assert row is not None and row.state == PredictorState.READY, row.failure_reason
    assert row.meta["jobs"] == sorted(j.pk for j in mine) and row.meta["networks"] == len(graphs)
    assert row.meta["runtime"] == RUNTIME and "kernel_latencies" not in row.meta
    ev = row.evaluation
    assert ev["deduction"]["operator_match"] == 1.0
    assert any(t.startswith("conv2d/convolution_") for t in ev["kernel_mape"]), ev["kernel_mape"]
    assert all(p["predicted_ms"] > 0 and p["measured_ms"] > 0 for p in ev["points"])

    predictor = load_row(row)
    assert predictor.scenario.backend == "tflite_cpu" and predictor.scenario.delegate == "xnnpack"
    predicted = [p.latency_ms for p in predictor.predict(list(_sized_graphs()))]
    _check_sane(predicted, _truth(ProfileSettings(backend="android", delegate="xnnpack", runs=20)), 0.3)


def test_a_gpu_predictor_trains_on_partition_times_and_says_its_kernels_were_not_measured(
    member: Any, make_device: Any
) -> None:
    from server.predictors.artifacts import load_row
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training

    phone = _phone(make_device)
    _store(member.team, phone, _training_graphs(), delegate="gpu", precision="fp16")
    row = request_predictor(member.team, phone, method="lasso", search="fast", delegate="gpu", precision="fp16")
    assert row.scenario["backend"] == "tflite_gpu" and row.scenario["gpu"] == GLES
    row = run_training(row.pk)
    assert row is not None and row.state == PredictorState.READY, row.failure_reason
    assert row.evaluation["kernel_mape"] == {} and "partition" in row.evaluation["kernel_latencies"]
    assert "partition" in row.meta["kernel_latencies"] and "deduction" not in row.evaluation
    assert row.artifact["deducer"]["kind"] == "tflite_gpu" and row.artifact["deducer"]["family"] == "mali"
    assert row.e2e_mape is not None and math.isfinite(row.e2e_mape)

    predicted = [p.latency_ms for p in load_row(row).predict(list(_sized_graphs()))]
    _check_sane(predicted, _truth(ProfileSettings(backend="android", delegate="gpu", precision="fp16", runs=20)), 0.4)


def test_a_phone_predictor_request_says_what_is_wrong(member: Any, make_device: Any) -> None:
    from server.predictors.services import request_predictor

    phone = _phone(make_device)
    _store(member.team, phone, _training_graphs()[:3], delegate="gpu")

    def refused(**kwargs: Any) -> str:
        with pytest.raises(ValidationError) as caught:
            request_predictor(member.team, kwargs.pop("device", phone), method="lasso", **kwargs)
        return " ".join(caught.value.messages)

    assert "nnapi" in refused(delegate="nnapi") and "no kernel deduction" in refused(delegate="nnapi")
    assert "name the delegate" in refused()
    assert "3 network(s)" in refused(delegate="gpu") and "delegate gpu" in refused(delegate="gpu")
    assert "no core cluster 'prime'" in refused(delegate="gpu", cores="prime")
    cpu = make_device("cpu")
    assert "a delegate names a phone's" in refused(device=cpu, delegate="gpu")


def test_the_api_requests_a_predictor_for_one_delegate_and_cluster(api: Any, member: Any, make_device: Any) -> None:
    phone = _phone(make_device)
    _store(member.team, phone, _training_graphs()[:5], delegate="cpu", cores="little")
    body = {"device": phone.pk, "method": "lasso", "search": "fast", "delegate": "cpu", "cores": "little"}
    resp = api.post("/api/predictors/", body, format="json")
    assert resp.status_code == 202, resp.content
    data = resp.json()
    assert data["state"] == "queued" and data["scenario"]["backend"] == "tflite_cpu"
    assert data["scenario"]["delegate"] == "cpu" and data["scenario"]["cores"] == [0, 1, 2, 3]
    resp = api.post("/api/predictors/", {**body, "delegate": "xnnpack"}, format="json")
    assert resp.status_code == 400 and "0 network(s)" in resp.content.decode()


def _phone_gpu_predictor() -> Any:
    """A GPU predictor of the test phone, trained on its records (as training stores it)."""
    from devicelab.predict.deducers import learn_deducer
    from devicelab.predict.predictor import Scenario, train_predictor
    from devicelab.predict.records import record_from_result

    settings = ProfileSettings(backend="android", delegate="gpu", runs=20)
    records = [record_from_result(g, phone_result(g, settings)) for g in _training_graphs()]
    deducer = learn_deducer("tflite_gpu", records, gpu=GLES)
    scenario = Scenario("tflite_gpu", "android:PIXEL4A", gpu=GLES, delegate="gpu")
    return train_predictor(deducer.samples(records), deducer, scenario, "lasso", search="fast")


def test_a_measured_phone_sits_beside_the_qed_phone_of_its_model(api: Any, member: Any, make_device: Any) -> None:
    from server.predictors.phones import phone_model_of, same_model_devices
    from server.predictors.qed_import import ensure_qed_device

    qed_pixel, _ = ensure_qed_device("pixel4")
    ensure_qed_device("s10")
    phone = _phone(make_device)
    _phone(make_device, "Pixel 7", "PIXEL7")  # another model
    assert phone_model_of(phone) == phone_model_of(qed_pixel) == "pixel4"
    assert same_model_devices(phone) == [qed_pixel] and same_model_devices(qed_pixel) == [phone]
    assert same_model_devices(make_device("cpu")) == []

    ready_predictor(qed_pixel)  # shared: a lab admin trained it on the qed data
    ready_predictor(phone, member.team, predictor=_phone_gpu_predictor())
    graphs = [{"name": g.name, "graph": graph_to_dict(g)} for g in _sized_graphs()]
    resp = api.post(
        "/api/predict/side-by-side/",
        {"device": phone.pk, "backend": "tflite_gpu", "architectures": graphs},
        format="json",
    )
    assert resp.status_code == 200, resp.content
    data = resp.json()
    assert data["device"] == phone.pk and data["phone_model"] == "pixel4"
    assert [(a["device"]["id"], a["device"]["kind"]) for a in data["answers"]] == [
        (phone.pk, "android"),
        (qed_pixel.pk, "imported"),
    ]
    for answer in data["answers"]:
        assert answer["predictor"]["device"] == answer["device"]["id"] and answer["detail"] == ""
        latencies = [r["latency_ms"] for r in answer["results"]]
        assert [r["name"] for r in answer["results"]] == list(SIZES)
        assert all(math.isfinite(v) and v > 0 for v in latencies) and latencies[0] < latencies[-1]

    # only which predictor would answer, and a device without one of that backend says why
    resp = api.post("/api/predict/side-by-side/", {"device": qed_pixel.pk, "backend": "tflite_cpu"}, format="json")
    assert resp.status_code == 200, resp.content
    answers = resp.json()["answers"]
    assert [a["device"]["id"] for a in answers] == [qed_pixel.pk, phone.pk]
    assert all(a["predictor"] is None and "no ready tflite_cpu predictor" in a["detail"] for a in answers)
    resp = api.post("/api/predict/side-by-side/", {"device": qed_pixel.pk}, format="json")
    assert [a["predictor"]["id"] is not None for a in resp.json()["answers"]] == [True, True]
    assert all(a["results"] == [] for a in resp.json()["answers"])

    assert api.post("/api/predict/side-by-side/", {"device": 10**6}, format="json").status_code == 404
    bad = api.post("/api/predict/side-by-side/", {"device": phone.pk, "backend": "tpu"}, format="json")
    assert bad.status_code == 400 and "unknown backend" in bad.content.decode()
    many = [{"name": f"a{i}", "nb201": "|nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|none~2|"} for i in range(101)]
    bad = api.post("/api/predict/side-by-side/", {"device": phone.pk, "architectures": many}, format="json")
    assert bad.status_code == 400 and "side-by-side limit of 100" in bad.content.decode()
