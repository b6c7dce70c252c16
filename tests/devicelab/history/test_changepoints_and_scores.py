"""Offline change points and the scoring of detectors on series where the truth is known."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.history.changepoints import change_points
from devicelab.history.series import Point
from devicelab.history.simulate import Noise, SimulatedSeries, offline_detector, online_detector, score, simulate


def test_change_points_find_each_level_shift_and_none_in_a_flat_series() -> None:
    rng = np.random.default_rng(11)
    noise = Noise(between_cv=0.01, burst_rate=0.0)
    a = simulate(rng, 20, noise).points
    b = simulate(rng, 15, noise, level_ms=12.0).points
    c = simulate(rng, 15, noise, level_ms=9.0).points
    points = [Point(f"x{i}", p.samples_ms, p.clean) for i, p in enumerate(a + b + c)]
    found = change_points(points)
    assert [cp.index for cp in found] == [20, 35]
    assert found[0].change == pytest.approx(0.2, abs=0.03) and found[1].change == pytest.approx(-0.25, abs=0.03)
    assert change_points(simulate(np.random.default_rng(12), 40, noise).points) == []


def test_the_score_counts_hits_false_alarms_and_delays() -> None:
    points = [Point(f"r{i}", (10.0,)) for i in range(10)]
    truth = [SimulatedSeries(points, 4, 0.1), SimulatedSeries(points, None, 0.0)]
    said = {id(points): [(4, 5), (8, 8)]}
    result = score(truth, lambda p: said[id(p)])
    # series 1: the shift found with delay 1, one false alarm; series 2 (flat): two false alarms
    assert (result.shifts, result.detected, result.false_alarms, result.results) == (1, 1, 3, 20)
    assert result.delays == (1,) and result.recall == 1.0 and result.false_alarms_per_100 == 15.0
    assert result.precision == 0.25


def test_both_detectors_find_ten_percent_shifts_at_two_percent_noise() -> None:
    rng = np.random.default_rng(1000)
    noise = Noise(between_cv=0.02)
    shifted = [simulate(rng, 30, noise, int(rng.integers(10, 20)), 0.1) for _ in range(20)]
    flat = [simulate(rng, 30, noise) for _ in range(20)]
    for detector in (online_detector(), offline_detector()):
        assert score(shifted, detector).recall >= 0.9
        assert score(flat, detector).false_alarms_per_100 <= 2.0
