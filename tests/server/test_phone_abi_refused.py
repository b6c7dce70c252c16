"""A phone the lab's benchmark_model cannot run on (issue 34 item 5) registers saying so: a job
for it is refused at submission naming the two ABIs, and the device API and page say why."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.backends.base import DeviceInfo
from server.profiling.models import ProfilingJob
from tests.adb_double import elf
from tests.adb_double.benchmark_tool import benchmark_model_binary
from tests.adb_double.phones import Phone
from tests.adb_double.server import discovered_phone

pytestmark = pytest.mark.django_db


@pytest.fixture
def emulator(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[DeviceInfo]:
    props = {"ro.product.cpu.abi": "x86_64", "ro.product.cpu.abilist": "x86_64,x86"}
    phone = Phone("EMULATOR-5556", props=props)
    with discovered_phone(phone, elf.built_for("arm64-v8a", benchmark_model_binary()), tmp_path) as info:
        yield info


def test_a_job_for_a_phone_the_binary_cannot_run_on_is_refused_and_the_device_says_why(
    api: Any, member: Any, make_network: Any, make_device: Any, emulator: DeviceInfo
) -> None:
    from server.devices.services import register_devices

    (device,) = register_devices("worker-abi", [emulator])
    model = make_network(member.team)
    resp = api.post("/api/jobs/", {"model": model.pk, "device": device.pk, "settings": {}}, format="json")
    assert resp.status_code == 400, resp.json()
    text = " ".join(resp.json()["settings"])
    assert "takes no jobs" in text and "arm64-v8a binary" in text and "x86_64, x86" in text
    assert not ProfilingJob.objects.exists()

    shown = api.get(f"/api/devices/{device.pk}/").json()
    assert "arm64-v8a binary" in shown["capabilities"]["refuses"]
    assert "takes no jobs" in shown["hardware"]["runtime"] and shown["hardware"]["abilist"] == ["x86_64", "x86"]
