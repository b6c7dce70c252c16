"""settings.cold_runs: the CPU and OpenCL backends measure that many cold starts, each in a fresh
process running the backend's own load and first run; a device that cannot says so at submission."""

from __future__ import annotations

from dataclasses import replace

import pytest

from devicelab.backends import cpu
from devicelab.backends.base import (
    MAX_COLD_RUNS,
    BackendError,
    Capabilities,
    DeviceInfo,
    ProfileSettings,
    UnsupportedSetting,
    fresh_cold_starts,
)
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.measure.cold_starts import FRESH_PROCESS, IN_PROCESS


def net() -> Graph:
    b = GraphBuilder("cold-net", (1, 3, 24, 24))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2, bias=False)))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def test_cold_runs_is_a_bounded_setting() -> None:
    assert ProfileSettings().cold_runs == 1
    assert ProfileSettings.from_dict({"cold_runs": MAX_COLD_RUNS}).cold_runs == 50
    for bad in (0, MAX_COLD_RUNS + 1):
        with pytest.raises(ValueError, match=f"cold_runs must be between 1 and 50, got {bad}"):
            ProfileSettings(cold_runs=bad)


def test_a_device_that_declares_no_fresh_cold_starts_refuses_more_than_one() -> None:
    with pytest.raises(UnsupportedSetting, match="cold_runs: 3 is more than this device's 1: it measures the one"):
        Capabilities().check(ProfileSettings(cold_runs=3))
    Capabilities().check(ProfileSettings(cold_runs=1))
    assert cpu.discover()[0].capabilities.max_cold_runs == MAX_COLD_RUNS  # type: ignore[union-attr]
    assert Capabilities.from_dict({"max_cold_runs": 7}).max_cold_runs == 7


def test_the_cpu_backend_measures_each_cold_start_in_a_fresh_process() -> None:
    device = cpu.discover()[0]
    events: list[tuple[float, str]] = []
    result = cpu.profile(
        device, net(), ProfileSettings(runs=2, warmup_runs=1, cold_runs=3), lambda f, m: events.append((f, m))
    )
    starts = result.cold_starts
    assert starts is not None and starts.source == FRESH_PROCESS and len(starts.samples) == 3
    for s in starts.samples:
        assert s.load_ms > 0 and s.first_run_ms > 0 and s.import_ms is not None and s.import_ms > 0
    assert result.cold.load_ms > 0  # the profile's own cold start stays beside them
    assert result.cold_distribution() is starts
    messages = [m for _, m in events]
    assert [m for m in messages if m.startswith("cold start")] == [
        f"cold start {i}/3 (fresh process)" for i in (1, 2, 3)
    ]
    assert [f for f, _ in events] == sorted(f for f, _ in events) and events[-1] == (1.0, "done")


def test_one_cold_run_is_the_profiles_own() -> None:
    result = cpu.profile(cpu.discover()[0], net(), ProfileSettings(runs=1, warmup_runs=0))
    assert result.cold_starts is None
    own = result.cold_distribution()
    assert own.source == IN_PROCESS and [(s.load_ms, s.first_run_ms) for s in own.samples] == [
        (result.cold.load_ms, result.cold.first_run_ms)
    ]


def test_a_fresh_process_that_fails_fails_the_profile_with_its_reason() -> None:
    other = replace(cpu.discover()[0], identity="cpu:some-other-machine")
    with pytest.raises(
        BackendError, match="cpu backend: cold starts of graph 'cold-net' in fresh processes: .*is not this host's CPU"
    ):
        fresh_cold_starts(cpu.COLD_START_ENTRY, other, net(), ProfileSettings(cold_runs=2))


def test_the_opencl_backend_measures_each_cold_start_in_a_fresh_process() -> None:
    from devicelab.backends.opencl import backend as opencl

    found = opencl.discover()
    if not found:
        pytest.fail("no OpenCL device: install PoCL (make system-deps)")
    device: DeviceInfo = found[0]
    assert device.capabilities is not None and device.capabilities.max_cold_runs == MAX_COLD_RUNS
    result = opencl.profile(device, net(), ProfileSettings(backend="opencl", runs=2, warmup_runs=1, cold_runs=2))
    starts = result.cold_starts
    assert starts is not None and starts.source == FRESH_PROCESS and len(starts.samples) == 2
    assert all(s.load_ms > 0 and s.first_run_ms > 0 and s.import_ms for s in starts.samples)
