"""Discovery of the host CPU, its topology readers, and the backend registry."""

from __future__ import annotations

import logging
import os
import platform
import sys
from pathlib import Path

import pytest

from devicelab.backends import cpu, cpu_topology, registry
from devicelab.backends.base import Backend, DeviceInfo, ProfileSettings, UnsupportedSetting


def test_discover_describes_the_host_cpu_as_one_device() -> None:
    devices = cpu.discover()
    assert len(devices) == 1
    dev = devices[0]
    assert dev.kind == "cpu"
    hw = dev.hardware
    assert dev.name == hw["cpu_model"] and dev.name
    assert hw["arch"] == platform.machine()
    assert hw["logical_cores"] == len(cpu_topology.online_cpus()) >= 1
    assert 1 <= hw["physical_cores"] <= hw["logical_cores"]
    assert hw["memory_bytes"] > 0
    assert hw["runtime"].startswith("onnxruntime ")
    clustered = sorted(c for cluster in hw["clusters"] for c in cluster["cores"])
    assert clustered == cpu_topology.online_cpus()
    assert all(c["max_freq_khz"] is None or c["max_freq_khz"] > 0 for c in hw["clusters"])


def test_identity_is_the_machine_id_and_stable() -> None:
    first, second = cpu.discover()[0], cpu.discover()[0]
    assert first.identity == second.identity
    machine_id = Path("/etc/machine-id")
    if machine_id.exists() and machine_id.read_text().strip():
        assert first.identity == "cpu:" + machine_id.read_text().strip()
    assert first.as_dict()["identity"] == first.identity


def test_identity_falls_back_to_the_hostname(tmp_path: Path) -> None:
    import socket

    assert cpu_topology.machine_identity((tmp_path / "none", tmp_path / "empty")) == socket.gethostname()
    (tmp_path / "id").write_text("abc123\n")
    assert cpu_topology.machine_identity((tmp_path / "none", tmp_path / "id")) == "abc123"


def _fake_phone(root: Path) -> tuple[Path, Path]:
    """A sysfs/procfs pair for an 8-core big.LITTLE phone: 4 little, 3 big, 1 prime core."""
    sys_cpu, proc = root / "sys", root / "proc"
    freqs = [1_800_000] * 4 + [2_400_000] * 3 + [3_000_000]
    for i, f in enumerate(freqs):
        (sys_cpu / f"cpu{i}" / "cpufreq").mkdir(parents=True)
        (sys_cpu / f"cpu{i}" / "cpufreq" / "cpuinfo_max_freq").write_text(f"{f}\n")
        (sys_cpu / f"cpu{i}" / "topology").mkdir()
        (sys_cpu / f"cpu{i}" / "topology" / "core_id").write_text(f"{i}\n")
        (sys_cpu / f"cpu{i}" / "topology" / "physical_package_id").write_text("0\n")
    (sys_cpu / "online").write_text("0-7\n")
    proc.mkdir()
    blocks = [f"processor\t: {i}\nBogoMIPS\t: 38.40\nCPU part\t: 0xd05\n" for i in range(8)]
    (proc / "cpuinfo").write_text("\n".join(blocks) + "\nHardware\t: Qualcomm Technologies, Inc SM8250\n")
    (proc / "meminfo").write_text("MemTotal:        7812345 kB\nMemFree:  1 kB\n")
    return sys_cpu, proc


def test_big_little_clusters_are_grouped_by_max_frequency(tmp_path: Path) -> None:
    sys_cpu, proc = _fake_phone(tmp_path)
    topo = cpu_topology.read_topology(sys_cpu, proc)
    assert topo.clusters == [
        {"cores": [0, 1, 2, 3], "max_freq_khz": 1_800_000},
        {"cores": [4, 5, 6], "max_freq_khz": 2_400_000},
        {"cores": [7], "max_freq_khz": 3_000_000},
    ]
    assert topo.model == "Qualcomm Technologies, Inc SM8250"
    assert topo.logical_cores == 8 and topo.physical_cores == 8
    assert topo.memory_bytes == 7812345 * 1024


def test_cores_without_cpufreq_form_one_cluster_of_unknown_frequency(tmp_path: Path) -> None:
    sys_cpu = tmp_path / "sys"
    for i in range(2):
        (sys_cpu / f"cpu{i}").mkdir(parents=True)
    assert cpu_topology.frequency_clusters([0, 1], sys_cpu) == [{"cores": [0, 1], "max_freq_khz": None}]


def test_smt_siblings_count_once_as_physical_cores(tmp_path: Path) -> None:
    sys_cpu = tmp_path / "sys"
    for i, core in enumerate([0, 1, 0, 1]):  # cpu2 and cpu3 are hyper-threads of cores 0 and 1
        (sys_cpu / f"cpu{i}" / "topology").mkdir(parents=True)
        (sys_cpu / f"cpu{i}" / "topology" / "core_id").write_text(f"{core}\n")
    assert cpu_topology.physical_core_count([0, 1, 2, 3], sys_cpu, tmp_path) == 2


def test_cpu_list_parsing() -> None:
    assert cpu_topology.parse_cpu_list("0-3,6,8-9\n") == [0, 1, 2, 3, 6, 8, 9]
    assert cpu_topology.parse_cpu_list("0") == [0]


# -- registry ---------------------------------------------------------------------------------


def test_backend_for_cpu_is_the_cpu_backend() -> None:
    backend = registry.backend_for("cpu")
    assert backend is cpu.BACKEND and isinstance(backend, Backend) and backend.kind == "cpu"
    assert backend.discover() == cpu.discover()


def test_cpu_declares_what_it_can_run() -> None:
    caps = cpu.discover()[0].capabilities
    online = cpu_topology.online_cpus()
    assert caps.precisions == ("fp32", "int8") and caps.formats == ("onnx",)
    assert caps.max_threads == len(online) and caps.cores == tuple(online)
    assert caps.pins_cores == hasattr(os, "sched_setaffinity")
    assert caps.runtimes == (cpu.runtime_version(),)
    assert DeviceInfo.from_dict(cpu.discover()[0].as_dict()) == cpu.discover()[0]  # survives JSON
    caps.check(ProfileSettings(threads=len(online), cores=(online[0],) if caps.pins_cores else ()))
    with pytest.raises(UnsupportedSetting, match="precision.*fp32"):
        caps.check(ProfileSettings(precision="fp16"))


def test_backend_for_an_unknown_kind_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown device kind 'tpu'"):
        registry.backend_for("tpu")


def test_discover_all_finds_the_cpu() -> None:
    devices = registry.discover_all()
    assert cpu.discover()[0] in devices


def test_discover_all_skips_backends_whose_module_or_runtime_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A real backend module whose runtime import fails, and a backend module that does not exist.
    (tmp_path / "fake_backend_needing_runtime.py").write_text("import no_such_runtime_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BACKEND_MODULES, "fake", "fake_backend_needing_runtime")
    monkeypatch.setitem(registry.BACKEND_MODULES, "ghost", "devicelab.backends.ghost_not_written")
    with caplog.at_level(logging.INFO, logger=registry.__name__):
        devices = registry.discover_all(("fake", "ghost", "cpu"))
    assert [d.kind for d in devices] == ["cpu"]
    text = caplog.text
    assert "fake backend unavailable: its runtime is not installed (no_such_runtime_xyz)" in text
    assert "ghost backend unavailable: backend module devicelab.backends.ghost_not_written is not written yet" in text
    sys.modules.pop("fake_backend_needing_runtime", None)


def test_discover_all_survives_a_backend_whose_discovery_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "broken_driver_backend.py").write_text(
        "from devicelab.backends.base import Backend\n"
        "class Broken(Backend):\n"
        "    kind = 'broken'\n"
        "    def discover(self):\n"
        "        raise RuntimeError('driver exploded')\n"
        "    def profile(self, device, graph, settings, progress=None):\n"
        "        raise NotImplementedError\n"
        "BACKEND = Broken()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BACKEND_MODULES, "broken", "broken_driver_backend")
    with caplog.at_level(logging.INFO, logger=registry.__name__):
        devices = registry.discover_all(("broken", "cpu"))
    assert [d.kind for d in devices] == ["cpu"]
    assert "broken backend: discovery failed" in caplog.text
    sys.modules.pop("broken_driver_backend", None)


def test_a_backend_module_without_a_backend_instance_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "untyped_backend.py").write_text("def discover():\n    return []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BACKEND_MODULES, "untyped", "untyped_backend")
    with pytest.raises(TypeError, match="untyped_backend.BACKEND must be a devicelab.backends.base.Backend"):
        registry.backend_for("untyped")
    sys.modules.pop("untyped_backend", None)


def test_discovery_survives_a_module_without_a_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "half_written_backend.py").write_text('"""A backend package started, with no BACKEND yet."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(registry.BACKEND_MODULES, "half", "half_written_backend")
    with caplog.at_level(logging.INFO, logger=registry.__name__):
        devices = registry.discover_all(("half", "cpu"))
    assert [d.kind for d in devices] == ["cpu"]
    assert "half backend: not a Backend; skipping it" in caplog.text
    sys.modules.pop("half_written_backend", None)


def test_every_kind_in_the_registry_is_a_backend_or_unavailable() -> None:
    # the android package exists before its backend module does: discovery must still go on
    for kind in registry.BACKEND_MODULES:
        try:
            assert isinstance(registry.backend_for(kind), Backend)
        except registry.BackendUnavailable:
            continue
