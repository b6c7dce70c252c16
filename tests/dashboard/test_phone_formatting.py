"""How a phone's facts read on the pages: core ranges, clusters, the job's settings and the
conditions card built from a result's environment, whatever keys it lacks."""

from __future__ import annotations

from dashboard.conditions import conditions
from dashboard.formatting import core_ranges, hardware_rows, hardware_summary, settings_items
from tests.server.phone_factories import PIXEL_7_HARDWARE, phone_environment


def test_core_ranges_read_like_the_forms_input() -> None:
    assert core_ranges([0, 1, 2, 3, 6]) == "0-3,6"
    assert core_ranges([7, 6]) == "6-7"
    assert core_ranges([4]) == "4"
    assert core_ranges([0, 2, 4]) == "0,2,4"
    assert core_ranges([]) == ""


def test_a_phones_hardware_rows_and_summary() -> None:
    rows = dict(hardware_rows(PIXEL_7_HARDWARE))
    assert rows["Android"] == "14 (SDK 34)" and "SDK" not in rows
    assert rows["CPU clusters"] == (
        "little: cores 0-3 @ 1.80 GHz · mid: cores 4-5 @ 2.35 GHz · big: cores 6-7 @ 2.85 GHz"
    )
    assert rows["RAM"] == "7.4 GiB" and rows["ABI"] == "arm64-v8a" and rows["Manufacturer"] == "Google"
    assert hardware_summary(PIXEL_7_HARDWARE) == "Google Pixel 7 · GS201 · arm64-v8a · Android 14"
    # A maker's name already in the model is not repeated.
    assert hardware_summary({"manufacturer": "samsung", "model": "samsung SM-G973F"}) == "samsung SM-G973F"


def test_settings_leave_out_an_empty_delegate_and_unset_cool_down() -> None:
    cpu = {"backend": "cpu", "threads": 1, "cores": [], "delegate": "", "cooldown_c": None, "cooldown_max_s": None}
    assert [label for label, _ in settings_items(cpu)] == ["backend", "threads", "cores"]
    phone = {**cpu, "backend": "android", "delegate": "gpu", "cooldown_c": 38.5, "cooldown_max_s": 60.0}
    assert dict(settings_items(phone)) == {
        "backend": "android",
        "delegate": "gpu",
        "threads": "1",
        "cores": "any",
        "cool down below": "38.5 °C",
        "cool-down limit": "60 s",
    }


def test_a_result_no_phone_measured_has_no_conditions() -> None:
    assert not conditions({"runtime": "onnxruntime 1.20.1", "threads": 1}).shown
    assert not conditions(None).shown


def test_conditions_of_a_phone_run() -> None:
    card = conditions(phone_environment(hot_c=41.0, rise_c=3.0))
    assert card.shown
    assert [t.zone for t in card.temperatures] == ["cpu-1-2", "gpu0", "battery"]  # hottest first
    assert card.hottest_before is not None and (card.hottest_before.zone, card.hottest_before.before) == (
        "cpu-1-2",
        41.0,
    )
    assert card.temperatures[0].rise == 3.0
    assert [(c.core, c.governor, c.after, c.below_max) for c in card.clocks] == [
        ("6", "schedutil", "2.85 GHz", False),
        ("7", "schedutil", "1.20 GHz", True),
    ]
    assert card.cooldown == "waited 12.5 s to cool below 40 °C (limit 120 s)"


def test_a_cool_down_that_gave_up_or_was_not_needed_says_so() -> None:
    gave_up = conditions(phone_environment(waited_s=120.0, reached=False))
    assert gave_up.cooldown == ("gave up after 120.0 s (limit 120 s): still at or above 40 °C when measuring began")
    assert conditions(phone_environment(waited_s=0.0)).cooldown == "already below 40 °C: no wait"


def test_missing_or_odd_keys_show_what_there_is() -> None:
    card = conditions({"delegate": "nnapi", "screen_on": None, "temperatures_before_c": {"battery": 30.0, "x": "hot"}})
    facts = dict(card.facts)
    assert facts == {"Delegate": "nnapi", "Screen": "unknown"}
    assert [(t.zone, t.before, t.after) for t in card.temperatures] == [("battery", 30.0, None), ("x", None, None)]
    assert card.hottest_after is None and card.clocks == [] and card.cooldown == ""
