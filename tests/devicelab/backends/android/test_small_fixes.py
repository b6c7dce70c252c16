"""Issue 34 item 6 on the adb double: more threads than pinned cores (``threads=2`` on a one-core
cluster) is measured but flagged ``oversubscribed``; with ``warmup_runs=0`` the tool's "First
inference: 0" is recorded as not measured (None), not as 0 ms, and the cold start comes from a
fresh process."""

from __future__ import annotations

from devicelab.measure.cold_starts import FRESH_PROCESS
from tests.adb_double.server import AdbDouble
from tests.devicelab.backends.android.test_backend_on_double import farm, net, pixel, run

__all__ = ["farm"]  # the fixture, shared with the backend's other tests


def test_two_threads_on_one_pinned_core_are_flagged(farm: AdbDouble) -> None:
    info, _ = pixel(farm)
    r = run(info, net(), cores=[7], threads=2)
    (flag,) = [f for f in r.flags if f.startswith("oversubscribed:")]
    assert "2 threads pinned to 1 core (cpu7)" in flag
    fitting = run(info, net(), cores=[6, 7], threads=2)
    assert not [f for f in fitting.flags if f.startswith("oversubscribed:")]


def test_without_warmup_the_first_inference_is_not_measured_not_zero(farm: AdbDouble) -> None:
    info, _ = pixel(farm)
    r = run(info, net(), warmup_runs=0)
    assert r.environment["first_inference_ms"] is None and r.environment["warmup_avg_ms"] is None
    # the cold start is then measured by one fresh benchmark_model process, never stored as 0 ms
    assert r.cold_starts is not None and r.cold_starts.source == FRESH_PROCESS and len(r.cold_starts.samples) == 1
    assert r.cold.first_run_ms == r.cold_starts.samples[0].first_run_ms > 0
    warmed = run(info, net(), warmup_runs=1)
    assert (warmed.environment["first_inference_ms"] or 0) > 0
