"""What ``latencylab demo`` shows beyond its CPU profiles (``latencylab.commands.demo_showcase``):
the OpenCL line or the hint, the admin log-in, the qed phones and the queued phone predictor."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from latencylab.commands import demo_showcase as showcase
from tests.server import conftest as server_fixtures

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job


@pytest.mark.django_db
def test_the_opencl_line_names_the_workers_opencl_device_or_says_how_to_get_a_driver(make_device: Callable) -> None:
    from server.profiling.services import take_devices_offline

    cpu = make_device(kind="cpu", worker="demo-host")
    other = make_device(kind="opencl", worker="another-host", name="someone else's GPU")
    pauses: list[int] = []
    line = showcase.opencl_line(cpu, lambda: pauses.append(1), wait_seconds=0)
    assert line == showcase.OPENCL_HINT and "sudo make system-deps" in line and "\n" not in line
    assert other.name not in line

    gpu = make_device(kind="opencl", worker="demo-host", name="pthread-test-cpu")
    assert showcase.opencl_line(cpu, lambda: pauses.append(1), wait_seconds=0) == (
        f"OpenCL device: pthread-test-cpu (#{gpu.pk})"
    )
    take_devices_offline({gpu.pk: "unplugged"})  # an earlier run's device, gone now, does not count
    assert showcase.opencl_line(cpu, lambda: pauses.append(1), wait_seconds=0) == showcase.OPENCL_HINT


@pytest.mark.django_db
def test_the_admin_log_in_opens_the_admin_with_a_fresh_password_each_run() -> None:
    from django.test import Client

    def opens_the_admin(name: str, password: str) -> bool:
        client = Client()
        login = client.post("/admin/login/?next=/admin/", {"username": name, "password": password})
        return login.status_code == 302 and client.get("/admin/").status_code == 200

    name, first = showcase.ensure_admin()
    assert opens_the_admin(name, first)
    _, second = showcase.ensure_admin()
    assert second != first
    assert not opens_the_admin(name, first)
    assert opens_the_admin(name, second)


@pytest.mark.django_db
def test_without_qed_data_the_demo_says_so_in_one_line(monkeypatch: Any, tmp_path: Any) -> None:
    from server.devices.models import Device

    monkeypatch.setenv("LATENCYLAB_QED_DATA", str(tmp_path))
    line = showcase.import_qed_phones()
    assert line.startswith("qed phones: not imported (no qed files in ") and str(tmp_path) in line
    assert "LATENCYLAB_QED_DATA" in line and "\n" not in line
    assert not Device.objects.filter(kind="imported").exists()
    assert showcase.queue_phone_predictor("http://host:1", _now()) is None  # nothing more to say


@pytest.mark.django_db
def test_the_qed_phones_come_in_and_one_predictor_is_queued_for_the_phone_with_most_data(monkeypatch: Any) -> None:
    from server.predictors.models import ImportedMeasurement, Predictor

    monkeypatch.delenv("LATENCYLAB_QED_DATA", raising=False)  # found as `latencylab qed import` finds it
    line = showcase.import_qed_phones()
    assert line.startswith("qed phones: 6 dataset devices (pixel4, s10, mi8se, a03s, iphone7, iphonexs), 67 ")

    # One phone with fewer networks than the others is not picked.
    ImportedMeasurement.objects.filter(device__name="pixel4", network__startswith="resnet").delete()
    phone = showcase.phone_with_most_data()
    assert phone.name == "s10" and phone.networks == 67

    started = _now()
    queued = showcase.queue_phone_predictor("http://host:1", started, send=False)
    row = Predictor.objects.get()
    assert (row.device, row.team, row.method, row.state) == (phone, None, "rf", "queued")
    assert row.params["search"] == "fast" and row.params["overhead"] == "affine"
    assert queued == (
        f"phone predictor: #{row.pk} rf v1 for s10 (67 networks) queued; it trains when the service runs "
        "(make demo, latencylab up): http://host:1/predictors/"
    )
    # Run again: the queued one is reported, not a second version.
    again = showcase.queue_phone_predictor("http://host:1", started)
    assert again is not None and f"#{row.pk} rf v1" in again and "watch it at" in again
    assert Predictor.objects.count() == 1

    # A training left behind by an earlier run's trainer does not count: a new version is queued.
    Predictor.objects.filter(pk=row.pk).update(state="training", started_at=started - timedelta(minutes=5))
    showcase.queue_phone_predictor("http://host:1", started, send=False)
    assert list(Predictor.objects.order_by("version").values_list("version", "state")) == [
        (1, "training"),
        (2, "queued"),
    ]


def _now() -> Any:
    from django.utils import timezone

    return timezone.now()


@pytest.mark.django_db
def test_the_host_cpu_predictor_is_for_the_cells_scenario_and_says_why_it_was_not_queued(
    make_device: Callable, make_job: Callable
) -> None:
    from server.accounts.services import create_user_with_token
    from server.predictors.models import Predictor

    user, _ = create_user_with_token("demo", "demo")
    team = user.memberships.get().team
    cpu = make_device(kind="cpu", name="host cpu")
    make_job(team, device=cpu, settings={"threads": 1, "runs": 3})  # a zoo profile: another scenario
    line = showcase.queue_host_predictor("http://host:1", team, cpu, _now(), send=False)
    assert line.startswith("host CPU predictor: not queued for host cpu: ") and "\n" not in line, line
    assert not Predictor.objects.exists()
    # The cells run where the predictor predicts: one thread on core 0 (not the zoo's scenario).
    assert showcase.HOST_CELL_SETTINGS["threads"] == 1 and showcase.HOST_CELL_SETTINGS["cores"] == showcase.HOST_CORES
    short, full = showcase.host_training_graphs(3), showcase.host_training_graphs()
    assert len(full) == showcase.HOST_CELLS and [g.name for g in short] == [g.name for g in full[:3]]
    assert [g.flops for g in short] == [g.flops for g in full[:3]]  # a shorter run measures the same first cells
