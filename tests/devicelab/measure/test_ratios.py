"""Paired ratios: one ratio per round, an interval over rounds, "within noise" where it holds 1."""

from __future__ import annotations

import random

import pytest

from devicelab.measure.ratios import count_significant, paired_ratio, share_above


def test_the_ratio_is_paired_not_two_unpaired_medians() -> None:
    # the reference side drifts with the machine's load; the candidate follows it within 4 %
    reference = [45.5, 30.0, 60.0, 31.0, 47.0, 33.0, 58.0, 44.0]
    candidate = [r / 1.04 for r in reference]
    candidate[1] = reference[1] / 1.02
    estimate = paired_ratio(reference, candidate)
    assert estimate.ratio == pytest.approx(1.04, abs=0.005)
    assert 1.0 < estimate.low <= estimate.ratio <= estimate.high < 1.05
    assert estimate.verdict == "above"
    assert estimate.label() == f"{estimate.ratio:.2f}x [{estimate.low:.2f}-{estimate.high:.2f}]"


def test_noise_around_one_is_said_to_be_within_noise() -> None:
    rng = random.Random(3)
    reference = [10.0 * rng.uniform(0.8, 1.25) for _ in range(20)]
    candidate = [10.0 * rng.uniform(0.8, 1.25) for _ in range(20)]
    estimate = paired_ratio(reference, candidate)
    assert estimate.low < 1 < estimate.high
    assert estimate.verdict == "within noise"
    assert estimate.label().endswith("within noise")


def test_one_wild_round_does_not_move_the_estimate() -> None:
    reference = [2.0] * 9 + [66.0]
    candidate = [1.0] * 10
    assert paired_ratio(reference, candidate).ratio == pytest.approx(2.0)


def test_a_slower_candidate_is_below_one_and_the_headline_counts_only_significant_ones() -> None:
    slower = paired_ratio([1.0, 1.1, 0.9, 1.0, 1.05], [2.0, 2.1, 1.9, 2.05, 2.0])
    faster = paired_ratio([2.0, 2.1, 1.9, 2.05, 2.0], [1.0, 1.1, 0.9, 1.0, 1.05])
    single = paired_ratio([3.0], [1.0])
    assert slower.verdict == "below" and faster.verdict == "above"
    assert single.verdict == "within noise" and single.low == single.high == pytest.approx(3.0)
    assert count_significant([slower, faster, single]) == {"above": 1, "below": 1, "within noise": 1}
    assert share_above([slower, faster, single]) == pytest.approx(1 / 3)


def test_the_interval_is_seeded_and_travels_as_json() -> None:
    a, b = [1.0, 1.3, 1.1, 0.9, 1.2], [1.0, 1.0, 1.0, 1.0, 1.0]
    first, second = paired_ratio(a, b), paired_ratio(a, b)
    assert first == second
    assert type(first).from_dict(first.as_dict()) == first


@pytest.mark.parametrize(
    ("num", "den", "message"),
    [([1.0, 2.0], [1.0], "as many"), ([], [], "at least one"), ([1.0, 0.0], [1.0, 1.0], "positive")],
)
def test_bad_rounds_are_refused_saying_why(num: list[float], den: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        paired_ratio(num, den)
