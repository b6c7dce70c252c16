"""Training a predictor from a team's stored CPU timings: request, claim, evaluate, store, fail."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.graph import nas
from tests.server.predictor_data import N_NETWORKS, cpu_profiles, store_profiles

pytestmark = pytest.mark.django_db


def test_a_predictor_trains_on_stored_cpu_timings(member: Any, make_device: Any) -> None:
    from server.predictors.artifacts import load_row
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training

    device = make_device("cpu")
    store_profiles(member.team, device)
    row = request_predictor(member.team, device, method="lasso", search="fast", seed=3)
    assert (row.state, row.version, row.team_id) == (PredictorState.QUEUED, 1, member.team.pk)
    assert row.scenario_key == f"cpu:{device.identity}|threads=1|cores=any|fp32"

    messages: list[str] = []
    row = run_training(row.pk, progress=messages.append)
    assert row is not None and row.state == PredictorState.READY, row.failure_reason
    assert any("held-out" in m for m in messages) and any("final" in m for m in messages)

    ev = row.evaluation
    assert ev["protocol"] == "holdout 20%"
    # 7 networks: 1 held out (20 %, at least one), 6 to train on.
    assert ev["n_test"] == 1 and len(ev["points"]) == 1
    point = ev["points"][0]
    assert point["measured_ms"] > 0 and point["predicted_ms"] > 0
    assert ev["e2e_mape"] == pytest.approx(abs(point["predicted_ms"] - point["measured_ms"]) / point["measured_ms"])
    assert ev["kernel_mape"] and all(v >= 0 for v in ev["kernel_mape"].values())
    assert any(k.startswith("conv2d/") for k in ev["kernel_mape"])
    assert ev["by_training_size"] == [{"n": N_NETWORKS - 1, "e2e_mape": ev["e2e_mape"]}]
    assert 0 <= ev["deduction"]["operator_match"] <= 1
    assert row.e2e_mape == ev["e2e_mape"]
    assert row.n_train == N_NETWORKS and row.meta["networks"] == N_NETWORKS
    assert row.meta["seed"] == 3 and len(row.meta["training_data_sha256"]) == 64
    assert {"numpy", "scikit-learn", "python"} <= set(row.meta["libraries"])
    assert row.meta["runtime"].startswith("onnxruntime")
    assert row.artifact_sha256 == row.artifact["sha256"] and row.trained_at is not None

    predictor = load_row(row)
    assert predictor.method == "lasso" and predictor.scenario.device == device.identity
    assert predictor.scenario.runtime == row.meta["runtime"]
    graph = nas.sample("synthetic", 1, 99)[0]
    (prediction,) = predictor.predict([graph])
    assert prediction.latency_ms > 0

    # A second delivery of the message finds the row ready and changes nothing.
    again = run_training(row.pk)
    assert again is not None and again.state == PredictorState.READY and again.artifact_sha256 == row.artifact_sha256


def test_the_evaluation_says_how_steady_the_held_out_measurements_are(member: Any, make_device: Any) -> None:
    import dataclasses

    from devicelab.measure.stats import SampleStats
    from server.predictors.services import request_predictor, run_training

    def scaled(s: SampleStats, f: float) -> SampleStats:
        return dataclasses.replace(s, mean=s.mean * f, median=s.median * f, min=s.min * f, max=s.max * f)

    device = make_device("cpu")
    profiles = cpu_profiles()
    factors = {g.name: [1.0 + 0.05 * ((i + r) % 3) for r in range(3)] for i, (g, _) in enumerate(profiles)}
    for r in range(3):  # three rounds of every network, each round's whole network scaled
        store_profiles(
            member.team,
            device,
            [(g, dataclasses.replace(res, e2e=scaled(res.e2e, factors[g.name][r]))) for g, res in profiles],
        )
    row = run_training(request_predictor(member.team, device, method="lasso", search="fast").pk)
    assert row is not None and row.evaluation["n_test"] == 1, row.failure_reason
    floor = row.evaluation["noise_floor"]
    (held_out,) = [p["name"] for p in row.evaluation["points"]]
    f = factors[held_out]
    assert (floor["networks"], floor["rounds"], floor["rounds_per_half"]) == (1, 3, 1)
    assert floor["mape_half_vs_half"] == pytest.approx(abs(f[0] - f[1]) / f[1])
    assert 0 <= floor["oracle_mape"] < 0.2
    # stored once per network, there is nothing to say
    other = make_device("cpu")
    store_profiles(member.team, other)
    once = run_training(request_predictor(member.team, other, method="lasso", search="fast").pk)
    assert once is not None and once.evaluation["noise_floor"] is None


def test_versions_count_up_per_scenario_and_method(member: Any, make_device: Any) -> None:
    from server.predictors.services import request_predictor

    device = make_device("cpu")
    store_profiles(member.team, device, cpu_profiles()[:5])
    first = request_predictor(member.team, device, method="lasso", enqueue=False)
    second = request_predictor(member.team, device, method="lasso", enqueue=False)
    other = request_predictor(member.team, device, method="rf", enqueue=False)
    assert (first.version, second.version, other.version) == (1, 2, 1)


def test_too_few_networks_is_refused_with_the_reason(member: Any, make_device: Any) -> None:
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings
    from devicelab.predict.cpu_probes import probe_graphs
    from server.predictors.models import Predictor
    from server.predictors.services import request_predictor

    device = make_device("cpu")
    store_profiles(member.team, device, cpu_profiles()[:2])
    # The deducer's probe graphs teach fusion rules; they are no latency training data.
    host, once = cpu.discover()[0], ProfileSettings(threads=1, runs=1, warmup_runs=0)
    store_profiles(member.team, device, [(g, cpu.profile(host, g, once)) for g in probe_graphs()[:4]])
    with pytest.raises(ValidationError) as caught:
        request_predictor(member.team, device, method="gbdt")
    text = str(caught.value.message_dict["device"])
    assert "2 network(s)" in text and "at least 5" in text and "threads=1" in text
    with pytest.raises(ValidationError, match="threads"):
        request_predictor(member.team, device, threads=0)
    with pytest.raises(ValidationError, match="unknown method"):
        request_predictor(member.team, device, method="svm")
    assert not Predictor.objects.exists()


def test_training_that_cannot_run_fails_with_a_reason(member: Any, make_device: Any) -> None:
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training
    from server.profiling.models import JobResult

    device = make_device("cpu")
    store_profiles(member.team, device, cpu_profiles()[:5])
    row = request_predictor(member.team, device, method="lasso", search="fast", enqueue=False)
    # The timings went away between the request and the training.
    JobResult.objects.filter(job__device=device).delete()
    row = run_training(row.pk)
    assert row is not None and row.state == PredictorState.FAILED
    assert "0 network(s)" in row.failure_reason and device.name in row.failure_reason
    assert row.artifact is None and row.trained_at is None


def test_android_devices_have_no_predictors(member: Any, make_device: Any) -> None:
    from server.predictors.services import request_predictor

    with pytest.raises(ValidationError, match="android device"):
        request_predictor(member.team, make_device("android"))
