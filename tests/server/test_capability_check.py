"""A job's settings are checked against what its device declared it can run, at submission:
the API answers 400 naming the setting and what the device offers, and nothing is queued."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.backends.base import MAX_RUNS, Capabilities
from server.profiling.models import ProfilingJob

pytestmark = pytest.mark.django_db

# What the CPU backend declares for a 2-core host.
TWO_CORE_CPU = Capabilities(
    precisions=("fp32",),
    max_threads=2,
    pins_cores=True,
    cores=(0, 1),
    runtimes=("onnxruntime 1.20.1",),
    formats=("onnx",),
)
OPENCL_GPU = Capabilities(precisions=("fp32", "fp16"), max_threads=8, pins_cores=False, formats=("ir",))


@pytest.fixture
def model(member: Any, make_network: Any) -> Any:
    return make_network(member.team)


def _submit(api: Any, model: Any, device: Any, settings: dict[str, Any]) -> Any:
    return api.post("/api/jobs/", {"model": model.pk, "device": device.pk, "settings": settings}, format="json")


def _refused(response: Any) -> str:
    assert response.status_code == 400, response.json()
    return " ".join(response.json()["settings"])


def test_the_capabilities_are_stored_when_the_device_registers(make_device: Any) -> None:
    device = make_device(capabilities=TWO_CORE_CPU)
    device.refresh_from_db()
    assert device.capabilities["precisions"] == ["fp32"] and device.capabilities["cores"] == [0, 1]
    assert device.declared_capabilities() == TWO_CORE_CPU


def test_fp16_on_the_cpu_is_refused_naming_what_it_runs(api: Any, model: Any, make_device: Any) -> None:
    device = make_device(capabilities=TWO_CORE_CPU)
    text = _refused(_submit(api, model, device, {"precision": "fp16"}))
    assert "settings.precision" in text and "'fp16'" in text and "runs fp32" in text
    assert not ProfilingJob.objects.exists()


def test_a_core_that_does_not_exist_is_refused(api: Any, model: Any, make_device: Any) -> None:
    device = make_device(capabilities=TWO_CORE_CPU)
    text = _refused(_submit(api, model, device, {"cores": [5]}))
    assert "settings.cores" in text and "[5]" in text and "[0, 1]" in text


def test_more_threads_than_the_device_has_are_refused(api: Any, model: Any, make_device: Any) -> None:
    device = make_device(capabilities=TWO_CORE_CPU)
    text = _refused(_submit(api, model, device, {"threads": 3}))
    assert "settings.threads" in text and "2" in text


def test_pinning_cores_on_a_device_that_cannot_is_refused(api: Any, model: Any, make_device: Any) -> None:
    device = make_device(kind="opencl", capabilities=OPENCL_GPU)
    assert "cannot pin cores" in _refused(_submit(api, model, device, {"cores": [0]}))
    response = _submit(api, model, device, {"precision": "fp16"})
    assert response.status_code == 201, response.json()


def test_what_the_device_offers_is_accepted(api: Any, model: Any, make_device: Any) -> None:
    device = make_device(capabilities=TWO_CORE_CPU)
    response = _submit(api, model, device, {"threads": 2, "cores": [0, 1], "precision": "fp32"})
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(
    ("job_settings", "key"),
    [
        ({"runs": 10**30}, "runs"),
        ({"runs": MAX_RUNS + 1}, "runs"),
        ({"warmup_runs": 10**12}, "warmup_runs"),
        ({"threads": 10**6}, "threads"),
        ({"cores": list(range(100_000))}, "cores"),
    ],
)
def test_every_setting_is_bounded_even_on_a_device_that_declared_nothing(
    api: Any, model: Any, make_device: Any, job_settings: dict[str, Any], key: str
) -> None:
    device = make_device()  # no capabilities: an older worker's row
    assert device.declared_capabilities() is None
    assert key in _refused(_submit(api, model, device, job_settings))
    assert not ProfilingJob.objects.exists()


def test_more_threads_than_pinned_cores_is_queued_with_a_warning(api: Any, model: Any, make_device: Any) -> None:
    from tests.server.phone_factories import PIXEL_7_CAPABILITIES

    phone = make_device(kind="android", capabilities=PIXEL_7_CAPABILITIES)
    r = _submit(api, model, phone, {"backend": "android", "threads": 2, "cores": [7]})
    assert r.status_code == 201, r.json()
    (warning,) = r.json()["warnings"]
    assert "2 threads on 1 pinned core (cpu7)" in warning and "oversubscribed" in warning
    assert ProfilingJob.objects.get().warnings == [warning]
    # a whole named cluster is named; as many threads as cores gives no warning
    big = _submit(api, model, phone, {"backend": "android", "threads": 4, "cores": "big"})
    assert "the 'big' cluster" in big.json()["warnings"][0]
    fitting = _submit(api, model, phone, {"backend": "android", "threads": 2, "cores": "big"})
    assert fitting.json()["warnings"] == []
