"""A run's peak memory: what a model allocates after the baseline is seen at its peak, even once
freed; the CPU backend reports its session's peak above the worker's baseline, and a model with
64 MB of weights takes that much more than a small one."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from devicelab.backends import cpu
from devicelab.backends.base import ProfileSettings
from devicelab.graph.builder import GraphBuilder
from devicelab.measure.memory import HIGH_WATER_MARK, PeakRss


def test_an_allocation_freed_before_the_reading_still_counts_at_its_peak() -> None:
    memory = PeakRss()
    block = np.ones(160 * 1024 * 1024 // 8)  # 160 MB, every page touched
    del block
    peak = memory.peak()
    if sys.platform.startswith("linux"):
        assert peak.method == HIGH_WATER_MARK
        assert peak.above_baseline_mb > 140  # gone by now, and still the peak
    assert peak.as_dict()["rss_peak_mb"] >= peak.as_dict()["rss_baseline_mb"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="exact peaks need Linux's VmHWM")
def test_the_cpu_backend_reports_its_sessions_peak_and_weights_count() -> None:
    def net(width: int) -> object:
        b = GraphBuilder(f"fc-{width}", (1, width))
        return b.build(b.fc(b.relu(b.fc(b.input, width)), 10))

    device = cpu.discover()[0]
    settings = ProfileSettings(runs=2, warmup_runs=1)
    small = cpu.profile(device, net(64), settings)  # type: ignore[arg-type]
    big = cpu.profile(device, net(4096), settings)  # type: ignore[arg-type] # 4096 x 4096 fp32: 64 MB of weights
    for r in (small, big):
        assert r.peak_memory_mb is not None and r.peak_memory_mb >= 0
        assert r.environment["memory"]["method"] == HIGH_WATER_MARK
        assert r.environment["memory"]["above_baseline_mb"] == pytest.approx(r.peak_memory_mb, abs=1e-3)
    assert big.peak_memory_mb - small.peak_memory_mb > 50  # type: ignore[operator]


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="exact peaks need Linux's VmHWM")
def test_a_model_measured_after_a_bigger_one_in_the_same_process_reports_its_own_peak() -> None:
    """The C allocator keeps what ResNet-50's run freed resident for reuse; ResNeXt-50's run then
    allocated into it and its resident set hardly grew: 98 MB reported, against 305 MB measured
    alone. The baseline is now read once that memory has gone back to the system."""
    from devicelab.graph import zoo

    device = cpu.discover()[0]
    settings = ProfileSettings(runs=2, warmup_runs=1)
    cpu.profile(device, zoo.build("resnet50"), settings)
    after = cpu.profile(device, zoo.build("resnext50_32x4d"), settings)
    assert after.peak_memory_mb is not None and after.peak_memory_mb > 200
