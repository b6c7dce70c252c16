"""OpenCL device discovery: every device with its driver-reported limits and a stable identity;
the registry offers the backend, and skips it with a logged reason when pyopencl or an OpenCL
platform is missing."""

from __future__ import annotations

import json
import subprocess
import sys

from devicelab.backends import registry
from devicelab.backends.base import Backend, DeviceInfo
from devicelab.backends.opencl import devices
from devicelab.backends.opencl.backend import BACKEND, discover

HARDWARE_KEYS = {
    "compute_units",
    "max_work_group_size",
    "max_work_item_sizes",
    "wave_size",
    "local_mem_size",
    "fp16",
    "driver_version",
    "platform",
    "name",
    "device_type",
    "preferred_vector_width_float",
    "runtime",
}


def test_discover_lists_devices_with_their_limits(found) -> None:
    infos = discover()
    assert infos, "the fixture found a device, so discover() must list it"
    by_id = {d.identity: d for d in infos}
    assert len(by_id) == len(infos), "identities are unique"
    info = by_id[found.identity]
    assert info.kind == "opencl"
    assert HARDWARE_KEYS <= set(info.hardware)
    hw = info.hardware
    assert hw["compute_units"] >= 1 and hw["max_work_group_size"] >= 1 and hw["wave_size"] >= 1
    assert hw["wave_size"] <= hw["max_work_group_size"]
    assert isinstance(hw["fp16"], bool)
    assert hw["fp16"] == ("cl_khr_fp16" in hw["extensions"])
    assert info.name == found.device.name.strip()
    json.dumps(info.as_dict())  # plain data


def test_each_device_declares_what_it_can_run(found) -> None:
    info = next(d for d in discover() if d.identity == found.identity)
    caps = info.capabilities
    assert caps.precisions == (("fp32", "fp16") if found.limits.fp16 else ("fp32",))
    assert caps.max_threads == found.limits.compute_units and not caps.pins_cores and caps.cores == ()
    assert caps.formats == ("ir",) and len(caps.runtimes) == 1
    assert caps.runtimes[0].startswith("pyopencl ") and found.limits.platform_version in caps.runtimes[0]
    assert DeviceInfo.from_dict(json.loads(json.dumps(info.as_dict()))) == info


def test_identity_names_machine_platform_and_device_and_is_stable(found) -> None:
    assert found.identity.startswith("opencl:")
    machine, platform, device = found.identity[len("opencl:") :].split("/", 2)
    assert machine and platform == found.limits.platform and device.startswith(found.limits.name)
    assert [d.identity for d in discover()] == [d.identity for d in discover()]


def test_find_device_rejects_an_unknown_identity(found) -> None:
    assert devices.find_device(found.identity).device == found.device
    try:
        devices.find_device("opencl:nowhere/none/none")
    except ValueError as e:
        assert "nowhere" in str(e) and found.identity in str(e)
    else:
        raise AssertionError("an unknown identity must be refused")


def test_registry_offers_the_opencl_backend(found) -> None:
    backend = registry.backend_for("opencl")
    assert backend is BACKEND and isinstance(backend, Backend) and backend.kind == "opencl"
    assert found.identity in {d.identity for d in registry.discover_all(("opencl",))}


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


def test_no_platform_means_no_devices_and_a_logged_reason(tmp_path) -> None:
    code = (
        "import logging; logging.basicConfig(level=logging.INFO)\n"
        "from devicelab.backends import registry\n"
        "print(len(registry.discover_all(('opencl',))))\n"
    )
    done = _python(code, OCL_ICD_VENDORS=str(tmp_path))  # an ICD directory with no driver in it
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
    assert "no OpenCL platform" in done.stderr


def test_missing_pyopencl_makes_the_backend_unavailable_with_a_reason() -> None:
    code = (
        "import sys, logging; logging.basicConfig(level=logging.INFO)\n"
        "sys.modules['pyopencl'] = None  # as if it were not installed\n"
        "from devicelab.backends import registry\n"
        "try:\n    registry.backend_for('opencl')\nexcept registry.BackendUnavailable as e:\n    print(e)\n"
        "print(len(registry.discover_all(('opencl',))))\n"
    )
    done = _python(code)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert "opencl backend unavailable" in lines[0] and "pyopencl" in lines[0]
    assert lines[-1] == "0"
    assert "skipping opencl backend unavailable" in done.stderr
