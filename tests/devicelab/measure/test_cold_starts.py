"""Cold starts as a distribution: samples from fresh processes (real subprocesses of this Python),
their statistics, and a failing or hanging process reported with its reason."""

from __future__ import annotations

import os

import pytest

from devicelab.measure.cold_process import MARKER
from devicelab.measure.cold_starts import (
    FRESH_PROCESS,
    IN_PROCESS,
    ColdSample,
    ColdStartError,
    ColdStarts,
    parse_child_output,
    run_fresh,
)
from devicelab.measure.harness import Meter, Progress

ENTRIES = "tests.devicelab.measure.cold_entries"


def test_each_cold_start_runs_in_its_own_fresh_process() -> None:
    calls: list[tuple[float, str]] = []
    meter = Meter(Progress(lambda f, m: calls.append((f, m))), 0.5, 1.0, 3)
    starts = run_fresh(f"{ENTRIES}:own_pid", {}, 3, meter)
    pids = [s.load_ms for s in starts.samples]
    assert starts.source == FRESH_PROCESS and len(set(pids)) == 3 and os.getpid() not in pids
    assert all(s.import_ms is not None and s.import_ms >= 0 for s in starts.samples)
    assert [m for _, m in calls] == [f"cold start {i}/3 (fresh process)" for i in (1, 2, 3)]
    assert calls[-1][0] == 1.0


def test_the_child_reports_what_the_entry_measured_past_other_output() -> None:
    starts = run_fresh(f"{ENTRIES}:fixed", {"load_ms": 12.5, "first_run_ms": 3.5}, 2)
    assert [(s.load_ms, s.first_run_ms, s.total_ms) for s in starts.samples] == [(12.5, 3.5, 16.0)] * 2


def test_statistics_of_the_distribution() -> None:
    starts = ColdStarts(FRESH_PROCESS, [ColdSample(10.0, 2.0, 300.0), ColdSample(14.0, 4.0, 200.0)])
    d = starts.as_dict()
    assert (d["source"], d["n"]) == (FRESH_PROCESS, 2)
    assert d["total_ms"]["mean"] == 15.0 and d["total_ms"]["std"] == pytest.approx(4.242640687)
    assert d["load_ms"]["median"] == 12.0 and d["import_ms"]["mean"] == 250.0
    assert d["samples"][1] == {"load_ms": 14.0, "first_run_ms": 4.0, "total_ms": 18.0, "import_ms": 200.0}
    assert ColdStarts.from_dict(d) == starts


def test_one_in_process_cold_start_has_no_spread() -> None:
    d = ColdStarts.in_process(40.0, 5.0).as_dict()
    assert (d["source"], d["n"], d["import_ms"]) == (IN_PROCESS, 1, None)
    assert d["total_ms"]["mean"] == 45.0 and d["total_ms"]["std"] is None and d["total_ms"]["cv"] is None
    with pytest.raises(ValueError, match="at least one sample"):
        ColdStarts(IN_PROCESS, [])
    with pytest.raises(ValueError, match="not 'warm'"):
        ColdStarts("warm", [ColdSample(1.0, 1.0)])


def test_a_failing_process_is_reported_with_its_stderr() -> None:
    with pytest.raises(ColdStartError, match="exited with 3: the model could not be loaded: out of device memory"):
        run_fresh(f"{ENTRIES}:failing", {}, 2)
    with pytest.raises(ColdStartError, match="exited with 1: ModuleNotFoundError: No module named"):
        run_fresh("tests.devicelab.measure.no_such_module:f", {}, 1)


def test_a_hanging_process_is_killed_at_its_timeout() -> None:
    with pytest.raises(ColdStartError, match="took more than 1 s and was killed"):
        run_fresh(f"{ENTRIES}:sleeping", {}, 1, timeout_s=1.0)


def test_output_without_the_marker_is_an_error() -> None:
    with pytest.raises(ColdStartError, match="printed no LATENCYLAB_COLD_START line"):
        parse_child_output("just a banner\n")
    last = parse_child_output(f'{MARKER}{{"load_ms": 1, "first_run_ms": 2}}\nnoise\n')
    assert (last.load_ms, last.first_run_ms, last.import_ms) == (1.0, 2.0, None)
    with pytest.raises(ValueError, match="count must be at least 1"):
        run_fresh(f"{ENTRIES}:fixed", {}, 0)
