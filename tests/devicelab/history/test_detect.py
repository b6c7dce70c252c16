"""Online regression detection: a level shift is flagged once confirmed, with what changed and
which operators moved; a burst, a noisy result or a change inside the series' noise is not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from devicelab.history.detect import DetectionPolicy, compare, moved_operators, scan
from devicelab.history.series import Point
from devicelab.history.simulate import Noise, simulate

OPS = {"conv1": 4.0, "dw2": 3.0, "fc": 3.0}


def series(levels: list[float], seed: int = 5, cv: float = 0.01, samples: int = 20, **context: object) -> list[Point]:
    rng = np.random.default_rng(seed)
    out = []
    for i, level in enumerate(levels):
        run = level * math.exp(rng.normal(0, 0.01))
        values = tuple(float(v) for v in run * np.exp(rng.normal(0, cv, samples)))
        out.append(Point(f"r{i}", values, context={"settings": {"threads": 2}, **context}, operators_ms=OPS))
    return out


def test_a_ten_percent_slowdown_is_flagged_where_it_starts_once_confirmed() -> None:
    points = series([10.0] * 15 + [11.0] * 10)
    (flag,) = scan(points)
    assert flag.at == "r15" and flag.confirmed_by == ("r15", "r16")
    assert flag.direction == "slower" and flag.change == pytest.approx(0.10, abs=0.02)
    assert flag.p_value < 0.01 and len(flag.baseline) == 10 and flag.baseline[-1] == "r14"
    # the baseline moved to the new level: nothing more is flagged after it
    assert scan(points + series([11.0] * 10, seed=9)) == [flag]


def test_a_faster_level_is_flagged_too_and_a_single_slow_run_is_a_burst() -> None:
    (flag,) = scan(series([10.0] * 12 + [8.5] * 6))
    assert flag.direction == "faster" and flag.change == pytest.approx(-0.15, abs=0.02)
    burst = series([10.0] * 12 + [14.0] + [10.0] * 8)
    assert scan(burst) == []
    assert compare(burst[:12], burst[12], DetectionPolicy()).deviates  # it deviated, alone


def test_noisy_results_are_never_a_baseline_nor_a_change() -> None:
    points = series([10.0] * 10 + [13.0] * 4 + [10.0] * 5)
    points[10:14] = [Point(p.key, p.samples_ms, clean=False) for p in points[10:14]]
    assert scan(points) == []


def test_a_change_below_the_threshold_or_within_the_noise_is_not_flagged() -> None:
    assert scan(series([10.0] * 15 + [10.3] * 10)) == []  # +3 %, below the 5 % threshold
    policy = DetectionPolicy(threshold=0.02)
    loud = simulate(np.random.default_rng(3), 30, Noise(between_cv=0.05), 15, 0.03).points
    why = {compare([p for p in loud[:15] if p.clean], p, policy).why for p in loud[15:] if p.clean}
    assert any("within 2 x the series' noise" in w for w in why)


def test_the_flag_names_what_changed_and_the_operators_that_moved() -> None:
    before = series([10.0] * 12, runtime_version="1.20.1")
    after = series([11.5] * 4, seed=8, runtime_version="1.21.0")
    after = [
        Point(
            p.key.replace("r", "s"),
            p.samples_ms,
            context={**p.context, "settings": {"threads": 1}},
            operators_ms={**OPS, "conv1": 5.5},
        )
        for p in after
    ]
    (flag,) = scan(before + after)
    assert flag.changed == {"runtime_version": ("1.20.1", "1.21.0"), "settings": ({"threads": 2}, {"threads": 1})}
    (moved,) = flag.operators
    assert (moved.name, moved.before_ms, moved.after_ms) == ("conv1", 4.0, 5.5)
    assert moved.change == pytest.approx(0.375)


def test_operators_on_one_side_only_are_listed_and_small_moves_are_not() -> None:
    before = [Point("a", (10.0,), operators_ms={"x": 5.0, "y": 5.0, "tiny": 0.01})]
    after = [Point("b", (10.0,), operators_ms={"x": 5.02, "z": 5.0, "tiny": 0.05})]
    assert [(s.name, s.before_ms, s.after_ms) for s in moved_operators(before, after, 0.05)] == [
        ("y", 5.0, 0.0),
        ("z", 0.0, 5.0),
    ]


def test_a_phone_series_of_aggregates_is_judged_on_the_noise_alone() -> None:
    levels = [10.0 * math.exp(e) for e in np.random.default_rng(2).normal(0, 0.01, 20)]
    points = [Point(f"p{i}", (level * (1.12 if i >= 12 else 1),)) for i, level in enumerate(levels)]
    (flag,) = scan(points)
    assert flag.at == "p12" and math.isnan(flag.p_value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 0}, "threshold"),
        ({"min_history": 1}, "min_history"),
        ({"window": 40}, "noise_window"),
        ({"confirm": 0}, "confirm"),
    ],
)
def test_a_bad_policy_is_refused_saying_why(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        DetectionPolicy(**kwargs)  # type: ignore[arg-type]


def test_a_point_needs_positive_samples() -> None:
    with pytest.raises(ValueError, match="no samples"):
        Point("x", ())
    with pytest.raises(ValueError, match="finite and positive"):
        Point("x", (1.0, float("nan")))
