"""``latencylab qed import`` goes through the server: without ``--data`` the server reads its own
copy of the qed data; with ``--data DIR`` the client sends DIR's files (here as the public dataset
publishes them), which the server takes from a lab admin only, since the phones are every team's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.live_lab import run_cli
from tests.cli.server_lab import lab
from tests.devicelab.predict.qed_published import write_published
from tests.server import conftest as server_fixtures

make_device = server_fixtures.make_device
media_in_tmp = server_fixtures.media_in_tmp
__all__ = ["lab", "make_device", "media_in_tmp"]

pytestmark = pytest.mark.django_db(transaction=True)

PHONES = ("pixel4", "s10", "mi8se", "a03s", "iphone7", "iphonexs")


def _row(out: str, phone: str) -> str:
    return next(line for line in out.splitlines() if f" {phone} " in line)


def test_files_sent_by_a_lab_admin_are_imported_others_are_refused(
    lab: dict[str, Any], tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from server.devices.models import Device
    from server.predictors.models import ImportedMeasurement

    clone = tmp_path / "mobile-ml-benchmark"
    write_published(clone, ["resnet10", "mobilenetv2_wd4", "squeezenet_v1_1"])
    argv = ["qed", "import", "--data", str(clone), *lab["server"]]

    rc, out, err = run_cli(argv, capsys)
    assert rc == 1 and "HTTP 403" in err and "only a lab admin" in err
    assert not Device.objects.filter(kind="imported").exists()

    lab["member"].user.is_staff = True
    lab["member"].user.save(update_fields=["is_staff"])
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    assert f"imported qed measurements from {clone}: tflite_cnn_ops_gpu.csv, tflite_cnn_e2e.csv" in out
    for phone in PHONES:
        assert "created" in _row(out, phone) and " 3 " in _row(out, phone)
    assert ImportedMeasurement.objects.count() == 6 * 3

    rc, out, err = run_cli(["qed", "import", "--data", str(tmp_path / "empty"), *lab["server"]], capsys)
    assert rc == 2 and "does not exist or is not a folder" in err


def test_without_data_the_server_imports_its_own_copy(lab: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from devicelab.predict import qed
    from server.predictors.models import ImportedMeasurement

    rc, out, err = run_cli(["qed", "import", *lab["server"]], capsys)

    assert rc == 0, err
    assert f"imported qed measurements from the server's copy: {qed.OPS_FILE}, {qed.E2E_FILE}" in out
    for phone in PHONES:
        assert "created" in _row(out, phone)
    stored = ImportedMeasurement.objects.count()
    assert stored >= 6 * 60
    rc, out, err = run_cli(["qed", "import", *lab["server"]], capsys)
    assert rc == 0 and all(" kept " in _row(out, phone) for phone in PHONES)
    assert ImportedMeasurement.objects.count() == stored
