"""The qed importer: six phones as devices, their measurements stored, idempotent; a predictor
trains on them with grouped cross-validation; and the phones run no jobs."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.predict import qed
from devicelab.predict.errors import PredictorError

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported() -> Any:
    from server.predictors.qed_import import import_qed

    data = qed.default_data_dir()
    assert (data / qed.OPS_FILE).exists(), f"the qed data is expected at {data} (see ../shared/data/README.md)"
    return import_qed()


def test_import_creates_the_six_phones_with_their_measurements(imported: Any) -> None:
    from server.devices.models import Device
    from server.predictors.models import ImportedMeasurement

    assert [d.device.name for d in imported.devices] == list(qed.DEVICES)
    phones = Device.objects.filter(kind="imported")
    assert phones.count() == 6
    for d in imported.devices:
        gpu, family = qed.DEVICES[d.device.name]
        assert d.device_created and d.created == d.networks > 0 and d.updated == d.unchanged == 0
        assert d.device.identity == f"qed:{d.device.name}"
        assert d.device.status == "offline" and d.device.worker == ""
        assert d.device.hardware["gpu_name"] == gpu and d.device.hardware["gpu_family"] == family
        assert d.device.hardware["source"] == "qed"
    s10 = Device.objects.get(identity="qed:s10")
    rows = ImportedMeasurement.objects.filter(device=s10)
    e2e = qed.read_e2e()
    assert rows.count() == len([m for m in e2e if "s10|gpu|float|mean" in e2e[m]]) == 67
    resnet = rows.get(network="resnet10")
    assert resnet.e2e_ms == pytest.approx(e2e["resnet10"]["s10|gpu|float|mean"] / 1000)
    assert resnet.kernels and all(k["latency_ms"] > 0 for k in resnet.kernels)
    assert {k["type"] for k in resnet.kernels} >= {"conv2d", "fully_connected"}
    assert sum(len(k["ops"]) for k in resnet.kernels) == len(resnet.operators)


def test_a_second_import_changes_nothing(imported: Any) -> None:
    from server.devices.models import Device
    from server.predictors.models import ImportedMeasurement
    from server.predictors.qed_import import import_qed

    ids = sorted(ImportedMeasurement.objects.values_list("pk", flat=True))
    devices = sorted(Device.objects.values_list("pk", flat=True))
    again = import_qed()
    assert all(not d.device_created and d.created == d.updated == 0 and d.unchanged > 0 for d in again.devices)
    assert sorted(ImportedMeasurement.objects.values_list("pk", flat=True)) == ids
    assert sorted(Device.objects.values_list("pk", flat=True)) == devices


def test_a_changed_measurement_is_updated_in_place(imported: Any) -> None:
    from server.predictors.models import ImportedMeasurement
    from server.predictors.qed_import import import_qed

    row = ImportedMeasurement.objects.get(device__identity="qed:pixel4", network="resnet10")
    ImportedMeasurement.objects.filter(pk=row.pk).update(e2e_ms=1.0, data_sha256="0" * 64)
    again = import_qed()
    pixel4 = next(d for d in again.devices if d.device.name == "pixel4")
    assert pixel4.updated == 1 and pixel4.created == 0
    row.refresh_from_db()
    assert row.e2e_ms != 1.0 and row.data_sha256 != "0" * 64


def test_stored_rows_give_the_samples_the_qed_reader_gives(imported: Any) -> None:
    from server.devices.models import Device
    from server.predictors.qed_import import qed_samples

    stored = {s.name: s for s in qed_samples(Device.objects.get(identity="qed:iphonexs"))}
    direct = {s.name: s for s in qed.gpu_samples("iphonexs")}
    assert set(stored) == set(direct)
    for name, s in direct.items():
        mine = stored[name]
        assert mine.e2e_ms == pytest.approx(s.e2e_ms)
        assert [(k.type, k.ops, k.raw, k.latency_ms) for k in mine.measured] == [
            (k.type, k.ops, k.raw, k.latency_ms) for k in s.measured
        ]
        assert [(k.type, k.ops) for k in mine.deduced or ()] == [(k.type, k.ops) for k in s.deduced or ()]


@pytest.mark.slow
def test_a_phone_predictor_trains_with_grouped_cross_validation(imported: Any) -> None:
    from server.devices.models import Device
    from server.predictors.models import PredictorState
    from server.predictors.services import request_predictor, run_training

    phone = Device.objects.get(identity="qed:pixel4")
    row = request_predictor(None, phone, method="lasso", search="fast", enqueue=False)
    assert row.team is None and row.source == "qed" and row.scenario["backend"] == "tflite_gpu"
    assert row.scenario["gpu"] == "Adreno 640" and row.scenario["precision"] == "fp16"
    row = run_training(row.pk)
    assert row is not None and row.state == PredictorState.READY, row.failure_reason
    ev = row.evaluation
    assert ev["protocol"] == "grouped 5-fold cv" and ev["n_test"] == 67 and len(ev["points"]) == 67
    assert 0 < ev["e2e_mape"] < 0.5
    assert [p["n"] for p in ev["by_training_size"]] == [30, 53]
    assert {"conv2d", "depthwise_conv2d"} <= set(ev["kernel_mape"])
    assert row.meta["qed_device"] == "pixel4" and row.n_train == 67


def test_the_public_dataset_imports_as_published(tmp_path: Any) -> None:
    from server.predictors.models import ImportedMeasurement
    from server.predictors.qed_import import import_qed
    from tests.devicelab.predict.qed_published import PUBLISHED_E2E, PUBLISHED_OPS, write_published

    clone = tmp_path / "mobile-ml-benchmark"
    ops, e2e = write_published(clone, ["resnet10", "mobilenetv2_wd4"])
    outcome = import_qed(clone)  # a clone of the repository, given as it is
    assert outcome.files == (ops, e2e)
    assert [(d.device.name, d.created) for d in outcome.devices] == [(name, 2) for name in qed.DEVICES]
    row = ImportedMeasurement.objects.get(device__identity="qed:a03s", network="resnet10")
    assert row.extra["files"] == [PUBLISHED_OPS, PUBLISHED_E2E]
    assert row.e2e_ms == pytest.approx(qed.read_e2e()["resnet10"]["a03s|gpu|float|mean"] / 1000)
    assert [k["name"] for k in row.kernels][:3] == [
        "convolution_2d_0_linked_:_relu_1",
        "pooling_2d_2",
        "convolution_winograd_4x4_6x6_3",
    ]
    # our own training files over it: the two networks are the same data, the rest are new
    again = import_qed()
    assert all(d.created == 65 and d.unchanged == 0 and d.updated == 2 for d in again.devices)


def test_a_folder_without_qed_files_is_refused_naming_the_names(tmp_path: Any) -> None:
    from server.predictors.qed_import import import_qed

    with pytest.raises(PredictorError, match=r"no qed files in .*tflite_cnn_ops_gpu.csv \+ tflite_cnn_e2e.csv"):
        import_qed(tmp_path)


def test_an_imported_phone_refuses_profiling_jobs(imported: Any, member: Any, make_network: Any, api: Any) -> None:
    from server.devices.models import Device
    from server.profiling.models import ProfilingJob
    from server.profiling.services import submit_profiling_job

    phone = Device.objects.get(identity="qed:s10")
    model = make_network(member.team)
    with pytest.raises(ValidationError) as caught:
        submit_profiling_job(member.team, model, phone, {})
    assert "known only from measurements imported from qed" in str(caught.value.message_dict["device"])
    resp = api.post("/api/jobs/", {"model": model.pk, "device": phone.pk}, format="json")
    assert resp.status_code == 400
    assert "cannot run profiling jobs" in resp.json()["device"][0]
    assert not ProfilingJob.objects.exists()
