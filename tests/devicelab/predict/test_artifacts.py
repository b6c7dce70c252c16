"""Predictor artifacts: identical predictions after a round trip, clear errors when unusable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devicelab.predict import qed
from devicelab.predict.artifacts import (
    READABLE_VERSIONS,
    load_predictor,
    predictor_from_dict,
    predictor_to_dict,
    save_predictor,
)
from devicelab.predict.cpu_learning import learn_cpu_deducer
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.models import METHODS
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor
from devicelab.predict.records import ProfileRecord

# The first test here pays for the session's host-CPU profiles (conftest.cpu_records, about 30 s).
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cpu_predictors(cpu_records: dict[str, list[ProfileRecord]]) -> dict[str, ScenarioPredictor]:
    train = cpu_records["synthetic"][:20]
    deducer = learn_cpu_deducer(train + cpu_records["probes"])
    samples = deducer.samples(train)
    scenario = Scenario("cpu", train[0].device, runtime=train[0].runtime)
    return {m: train_predictor(samples, deducer, scenario, m, seed=5, search="fast", mlp_trials=1) for m in METHODS}


@pytest.mark.parametrize("method", METHODS)
def test_round_trip_predicts_identically(
    cpu_predictors: dict[str, ScenarioPredictor],
    cpu_records: dict[str, list[ProfileRecord]],
    method: str,
    tmp_path: Path,
) -> None:
    pred = cpu_predictors[method]
    path = save_predictor(pred, tmp_path / "p.json")
    loaded = load_predictor(path)
    graphs = [r.graph for r in cpu_records["synthetic"][20:]]
    before = pred.predict(graphs, breakdown=True)
    after = loaded.predict(graphs, breakdown=True)
    assert [p.latency_ms for p in after] == [p.latency_ms for p in before]
    assert [p.kernels for p in after] == [p.kernels for p in before]
    assert loaded.meta["training_data_sha256"] == pred.meta["training_data_sha256"]
    text = path.read_text()
    assert "pickle" not in text and "sklearn." not in text  # numbers, not library objects


def test_gpu_predictor_round_trip(qed_rows: list, qed_e2e: dict, tmp_path: Path) -> None:
    samples = qed.gpu_samples("s10", qed_rows, qed_e2e)
    pred = train_predictor(
        samples[::2],
        TfliteGpuDeducer("mali"),
        Scenario("tflite_gpu", "s10", gpu="Mali-G76"),
        "gbdt",
        seed=0,
        search="fast",
        overhead_kinds=("elementwise",),
        overhead="affine",
    )
    loaded = load_predictor(save_predictor(pred, tmp_path / "gpu.json"))
    kernels = [s.prediction_input() for s in samples[1::2]]
    before = pred.predict_kernels(kernels, on_missing="zero")
    assert [p.latency_ms for p in loaded.predict_kernels(kernels, on_missing="zero")] == [p.latency_ms for p in before]
    assert loaded.kernel_scale == pred.kernel_scale != 1.0


def test_calibrated_overhead_round_trips_and_fits_the_sums(qed_rows: list, qed_e2e: dict, tmp_path: Path) -> None:
    import numpy as np

    samples = qed.gpu_samples("pixel4", qed_rows, qed_e2e)
    train, test = samples[::2], samples[1::2]
    args = (TfliteGpuDeducer("adreno6xx"), Scenario("tflite_gpu", "pixel4", gpu="Adreno 640"), "gbdt")
    # every type a model of its own (half of the phone's networks leave some thin): this checks the
    # calibration's fit, which the loss below writes without the stand-ins' activation traffic
    kw = {"seed": 0, "search": "fast", "overhead_kinds": ("elementwise", "reshape", "split", "pad"), "min_networks": 1}
    constant = train_predictor(train, *args, **kw)
    cal = train_predictor(train, *args, **kw, overhead="calibrated")
    assert cal.models.keys() == constant.models.keys()
    assert cal.kernel_scale > 0 and 0.8 <= cal.kernel_power <= 1.3 and (cal.kernel_power, cal.kernel_scale) != (1, 1)
    # the fit is a least-squares fit of the relative error on the predictor's own training sums,
    # each predicted kernel raised by the launch cost c
    inputs = [s.prediction_input() for s in train]
    sums = np.array([p.kernels_ms for p in constant.predict_kernels(inputs)])
    counts = np.array([sum(1 for k in ks if constant.resolve(k.type) != "overhead") for ks in inputs])
    e2e = np.array([s.e2e_ms for s in train])

    def loss(a: float, b: float, c: float, t: float) -> float:
        return float(np.sum(((a * (sums + c * counts) ** b + t - e2e) / e2e) ** 2))

    fitted = loss(cal.kernel_scale, cal.kernel_power, cal.per_kernel_ms, cal.t_overhead_ms)
    assert fitted <= loss(1.0, 1.0, 0.0, constant.t_overhead_ms)
    assert fitted <= loss(cal.kernel_scale * 1.01, cal.kernel_power, cal.per_kernel_ms, cal.t_overhead_ms)
    loaded = load_predictor(save_predictor(cal, tmp_path / "cal.json"))
    kernels = [s.prediction_input() for s in test]
    assert [p.latency_ms for p in loaded.predict_kernels(kernels)] == [
        p.latency_ms for p in cal.predict_kernels(kernels)
    ]
    assert (loaded.kernel_power, loaded.per_kernel_ms) == (cal.kernel_power, cal.per_kernel_ms)
    one = cal.predict_kernels(kernels[:1])[0]
    assert one.latency_ms == pytest.approx(cal.kernel_scale * one.kernels_ms**cal.kernel_power + cal.t_overhead_ms)


def test_version_1_artifacts_still_load_with_power_one(cpu_predictors: dict) -> None:
    import hashlib

    from devicelab.predict.artifacts import _canonical

    d = predictor_to_dict(cpu_predictors["gbdt"])
    body = {k: v for k, v in d.items() if k not in ("sha256", "kernel_power", "per_kernel_ms", "min_e2e_ratio")}
    body["schema_version"] = 1
    old = predictor_from_dict({**body, "sha256": hashlib.sha256(_canonical(body)).hexdigest()})
    assert (
        old.kernel_power == 1.0
        and old.per_kernel_ms == 0.0
        and old.min_e2e_ratio == 0.0
        and old.t_overhead_ms == cpu_predictors["gbdt"].t_overhead_ms
    )


def test_version_2_artifacts_still_load_without_a_floor(cpu_predictors: dict) -> None:
    import hashlib

    from devicelab.predict.artifacts import _canonical

    d = predictor_to_dict(cpu_predictors["lasso"])
    assert d["min_e2e_ratio"] == cpu_predictors["lasso"].min_e2e_ratio > 0
    body = {k: v for k, v in d.items() if k not in ("sha256", "min_e2e_ratio")}
    body["schema_version"] = 2
    old = predictor_from_dict({**body, "sha256": hashlib.sha256(_canonical(body)).hexdigest()})
    assert old.min_e2e_ratio == 0.0 and old.per_kernel_ms == cpu_predictors["lasso"].per_kernel_ms


def test_training_is_reproducible(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    train = cpu_records["synthetic"][:15]
    deducer = learn_cpu_deducer(train)
    scenario = Scenario("cpu", "host")
    a, b = (train_predictor(deducer.samples(train), deducer, scenario, "rf", seed=9, search="fast") for _ in range(2))
    da, db = predictor_to_dict(a), predictor_to_dict(b)
    assert da["models"] == db["models"]
    assert da["meta"]["training_data_sha256"] == db["meta"]["training_data_sha256"]


def _saved(cpu_predictors: dict[str, ScenarioPredictor], tmp_path: Path) -> Path:
    return save_predictor(cpu_predictors["gbdt"], tmp_path / "p.json")


def test_truncated_file_is_refused(cpu_predictors: dict, tmp_path: Path) -> None:
    path = _saved(cpu_predictors, tmp_path)
    path.write_text(path.read_text()[:-100])
    with pytest.raises(PredictorError, match="not valid JSON"):
        load_predictor(path)


def test_edited_number_fails_the_checksum(cpu_predictors: dict, tmp_path: Path) -> None:
    path = _saved(cpu_predictors, tmp_path)
    d = json.loads(path.read_text())
    d["t_overhead_ms"] += 1.0
    path.write_text(json.dumps(d))
    with pytest.raises(PredictorError, match="checksum mismatch"):
        load_predictor(path)


def test_other_schema_versions_and_formats_are_named(cpu_predictors: dict) -> None:
    d = predictor_to_dict(cpu_predictors["lasso"])
    readable = ", ".join(str(v) for v in READABLE_VERSIONS)
    with pytest.raises(PredictorError, match=rf"schema version 99 .* versions \[{readable}\]"):
        predictor_from_dict({**d, "schema_version": 99})
    with pytest.raises(PredictorError, match="not a predictor artifact"):
        predictor_from_dict({**d, "format": "something.else"})
    with pytest.raises(PredictorError, match="JSON object"):
        predictor_from_dict([1, 2])


def test_broken_model_arrays_are_caught_at_load(cpu_predictors: dict) -> None:
    import hashlib

    from devicelab.predict.artifacts import _canonical

    d = predictor_to_dict(cpu_predictors["gbdt"])
    ktype = next(t for t, m in d["models"].items() if m["method"] == "gbdt")
    d["models"][ktype]["params"]["trees"]["left"] = d["models"][ktype]["params"]["trees"]["left"][:-3]
    body = {k: v for k, v in d.items() if k != "sha256"}
    d["sha256"] = hashlib.sha256(_canonical(body)).hexdigest()  # consistent checksum, broken content
    with pytest.raises(PredictorError, match=f"model for '{ktype}'.*different lengths"):
        predictor_from_dict(d)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PredictorError, match="cannot read predictor artifact"):
        load_predictor(tmp_path / "nope.json")
