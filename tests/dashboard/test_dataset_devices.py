"""Devices known only from imported measurements (the qed phones) read as "dataset" devices:
never "offline, last heartbeat never", and their page lists what was imported."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.predictor_factories import imported_device, make_predictor


def _measure(device: Any, network: str, e2e_ms: float, kernel_ms: list[float], std_ms: float | None = 0.4) -> Any:
    from server.predictors.models import ImportedMeasurement, MeasurementSource

    kernels = [{"type": "conv2d", "name": f"k{i}", "ops": [i], "latency_ms": ms} for i, ms in enumerate(kernel_ms)]
    operators = [
        {"row": i, "operation": "CONV_2D", "feature": "{}", "latency_us": ms * 1000, "kernel": f"k{i}"}
        for i, ms in enumerate(kernel_ms)
    ]
    return ImportedMeasurement.objects.create(
        device=device,
        source=MeasurementSource.QED,
        network=network,
        operators=operators,
        kernels=kernels,
        e2e_ms=e2e_ms,
        e2e_std_ms=std_ms,
        data_sha256="0" * 64,
    )


def _fleet_row(html: str, device: Any) -> str:
    m = re.search(rf'<tr><td><a href="/devices/{device.pk}/">.*?</tr>', html, re.S)
    assert m, f"no fleet row for device #{device.pk}"
    return m.group(0)


@pytest.mark.django_db
def test_the_fleet_shows_an_imported_phone_as_a_dataset_device_not_offline(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    from server.profiling.services import take_devices_offline

    me = make_member()
    phone = imported_device("pixel4")
    gone = make_device(kind="cpu", name="old box")
    take_devices_offline({gone.pk: "no heartbeat for 90 s"})
    html = web_client(me).get("/").content.decode()

    row = _fleet_row(html, phone)
    assert 'data-device-state="dataset"' in row and ">dataset</span>" in row
    assert "offline" not in row and "never" not in row
    assert "measurements from qed" in row
    # A device that really went offline still says so.
    assert 'data-device-state="offline"' in _fleet_row(html, gone)
    tile = re.search(r"Devices</div>.*?</div></div>", html, re.S)
    assert tile and "1 offline · 1 dataset" in re.sub(r"<[^>]+>", "", tile.group(0))


@pytest.mark.django_db
def test_a_dataset_devices_page_lists_its_imported_measurements(make_member: Callable, web_client: Callable) -> None:
    me = make_member()
    phone = imported_device("s10")
    _measure(phone, "resnet10", 20.0, [5.0, 7.0, 3.0])
    _measure(phone, "mobilenetv2_wd2", 4.0, [1.0, 1.0], std_ms=None)
    resp = web_client(me).get(f"/devices/{phone.pk}/")
    assert resp.status_code == 200
    html = resp.content.decode()
    head = html[html.index("<h1>") : html.index("</h1>")]
    assert 'data-device-state="dataset"' in head and "offline" not in head
    assert "last heartbeat" not in html and "Your jobs on this device" not in html

    rows = dict(re.findall(r'<tr data-network="([^"]+)">(.*?)</tr>', html, re.S))
    assert list(rows) == ["mobilenetv2_wd2", "resnet10"]
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td.*?</td>", rows["resnet10"], re.S)]
    # network, end-to-end, ±, kernels, kernel sum, share listed, operators
    assert cells == ["resnet10", "20.00", "0.400", "3", "15.00", "75%", "3"]
    assert resp.context["kernel_count"] == 5
    assert f'href="/predictors/#device-{phone.pk}"' in html


@pytest.mark.django_db
def test_a_dataset_device_without_measurements_says_how_to_import_them(
    make_member: Callable, web_client: Callable
) -> None:
    html = web_client(make_member()).get(f"/devices/{imported_device().pk}/").content.decode()
    assert "No measurements are imported for this device yet" in html and "latencylab qed import" in html


@pytest.mark.django_db
def test_the_submit_page_does_not_count_dataset_devices_as_offline(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    from server.profiling.services import take_devices_offline

    me = make_member()
    make_device(kind="cpu")
    for name in ("pixel4", "s10"):
        imported_device(name)
    assert "offline device" not in web_client(me).get("/jobs/new/").content.decode()
    gone = make_device(kind="cpu")
    take_devices_offline({gone.pk: "unplugged"})
    assert "1 offline device not shown" in web_client(me).get("/jobs/new/").content.decode()


@pytest.mark.django_db
def test_the_predictors_page_follows_a_training_until_it_ends(make_member: Callable, web_client: Callable) -> None:
    from server.predictors.models import PredictorState

    me = make_member()
    phone = imported_device()
    make_predictor(phone, state=PredictorState.READY)
    html = web_client(me).get("/predictors/").content.decode()
    assert 'http-equiv="refresh"' not in html
    make_predictor(phone, state=PredictorState.TRAINING, e2e_mape=None, progress_message="evaluating")
    html = web_client(me).get("/predictors/").content.decode()
    assert '<meta http-equiv="refresh" content="5">' in html and "evaluating" in html
