"""The measuring harness: cold start timed apart, warm-up runs dropped, timed runs counted and
kept in order, progress monotonic, reported by count and, for slow runs, by time."""

from __future__ import annotations

import time

import pytest

from devicelab.measure.harness import Harness, Meter, Progress, repeat, split_evenly, wall_ms


class FakeClock:
    """A monotonic clock a test advances by hand (seconds)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_never_goes_back_and_tolerates_no_callback() -> None:
    calls: list[tuple[float, str]] = []
    p = Progress(lambda f, m: calls.append((f, m)))
    for f in (0.1, 0.5, 0.3, 1.4, 0.9):
        p(f, "x")
    assert [f for f, _ in calls] == [0.1, 0.5, 0.5, 1.0, 1.0]
    silent = Progress(None)
    silent(0.7, "nobody listens")
    assert silent.last == 0.7


def test_warm_up_runs_are_dropped_and_timed_runs_kept_in_order() -> None:
    made: list[str] = []
    counter = iter(range(100))

    def run() -> int:
        i = next(counter)
        made.append("run")
        return i

    h = Harness(None)
    h.warm_up(run, 3, 0.1, 0.2)
    samples = h.timed(run, 5, 0.2, 0.9)
    assert samples == [3, 4, 5, 6, 7]  # the three warm-up samples are not among them
    assert len(made) == 8


def test_zero_warm_up_runs_make_no_call() -> None:
    calls: list[int] = []
    Harness(None).warm_up(lambda: calls.append(1), 0, 0.0, 0.1)
    assert calls == []


def test_cold_start_is_timed_apart_from_the_runs() -> None:
    h = Harness(None)
    with pytest.raises(RuntimeError, match="cold start was not measured"):
        h.cold_start()
    loaded = h.load(lambda: (time.sleep(0.02), "session")[1], 0.0, "loading")
    assert loaded == "session"
    h.first_run(lambda: time.sleep(0.01), 0.1)
    samples = h.timed(lambda: wall_ms(time.sleep, 0.001), 3, 0.2, 0.9)
    load_ms, first_ms = h.cold_start()
    assert load_ms >= 20 and first_ms >= 10  # each timed alone: sleeps only ever last longer
    assert len(samples) == 3 and all(s >= 1 for s in samples)


def test_progress_counts_every_phase_and_ends_at_one() -> None:
    calls: list[tuple[float, str]] = []
    h = Harness(lambda f, m: calls.append((f, m)))
    h.load(lambda: None, 0.0)
    h.first_run(lambda: None, 0.1)
    h.warm_up(lambda: None, 4, 0.1, 0.3)
    h.timed(lambda: 1.0, 30, 0.3, 0.95)
    h.done()
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and calls[-1] == (1.0, "done")
    messages = [m for _, m in calls]
    assert "warm-up 4/4" in messages and "timed run 30/30" in messages
    timed = [m for m in messages if m.startswith("timed run")]
    assert timed == [f"timed run {i}/30" for i in range(3, 31, 3)]  # about ten reports, by count
    assert (0.95, "timed run 30/30") in calls


def test_a_slow_phase_reports_by_time_between_its_counted_reports() -> None:
    clock = FakeClock()
    calls: list[tuple[float, str, float]] = []
    h = Harness(lambda f, m: calls.append((f, m, clock.now)), interval_s=1.0, clock=clock)

    def slow_run() -> float:
        clock.now += 0.4  # a run of 0.4 s: reports by count alone would come every 40 runs (16 s)
        return 0.4

    h.timed(slow_run, 400, 0.0, 1.0)
    assert calls[0][1] == "timed run 3/400"  # the first report came after 1.2 s, not after 40 runs
    at = [0.0] + [t for _, _, t in calls]
    assert max(b - a for a, b in zip(at, at[1:], strict=False)) <= 1.2 + 1e-9  # never silent past a run
    fractions = [f for f, _, _ in calls]
    assert fractions == sorted(fractions) and fractions[0] > 0 and fractions[-1] == 1.0


def test_fast_runs_report_by_count_only() -> None:
    clock = FakeClock()
    calls: list[str] = []
    h = Harness(lambda f, m: calls.append(m), interval_s=1.0, clock=clock)
    h.timed(lambda: None, 1000, 0.0, 1.0)  # the clock never moves: no report is due by time
    assert len(calls) == 10


def test_a_meter_shared_by_two_interleaved_loops_moves_forward() -> None:
    calls: list[tuple[float, str]] = []
    p = Progress(lambda f, m: calls.append((f, m)))
    meter = Meter(p, 0.2, 0.8, 2 * 6)
    a: list[int] = []
    for k in split_evenly(6, 3):
        a += repeat(lambda: 1, k, meter, "plain", first=len(a), of=6)
        repeat(lambda: None, k, meter, "other", first=len(a) - k, of=6)
    fractions = [f for f, _ in calls]
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(0.8)
    assert [m for _, m in calls if m.startswith("plain")] == [f"plain {i}/6" for i in range(1, 7)]


def test_split_evenly() -> None:
    assert split_evenly(7, 5) == [2, 2, 1, 1, 1]
    assert split_evenly(3, 5) == [1, 1, 1]
    assert split_evenly(30, 5) == [6] * 5
    assert split_evenly(1, 5) == [1]
