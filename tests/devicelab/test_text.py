"""Failure reasons are shortened in the middle, so the cause at their end survives."""

from __future__ import annotations

import pytest

from devicelab.text import MARKER, clip_middle, one_line

CAUSE = "CL_OUT_OF_RESOURCES"
REASON = "job failed on device #3 while running operator conv_17 of mobilenet_v2: " + "x" * 300 + ": " + CAUSE


def test_a_long_reason_keeps_its_start_and_its_cause() -> None:
    short = clip_middle(REASON, 80)
    assert len(short) == 80
    assert short.startswith("job failed on device")
    assert short.endswith(CAUSE) and MARKER in short
    head, tail = short.split(MARKER)
    assert (len(head), len(tail)) == (25, 50)  # two thirds of what is kept is the end


def test_a_reason_that_fits_is_unchanged() -> None:
    assert clip_middle("device offline", 80) == "device offline"
    text = "y" * 80
    assert clip_middle(text, 80) is text


def test_one_line_joins_lines_then_cuts() -> None:
    log = "build failed\n" + "\n".join(f"  line {i}: warning" for i in range(50)) + f"\nerror: {CAUSE}\n"
    cell = one_line(log, 60)
    assert "\n" not in cell and len(cell) == 60
    assert cell.startswith("build failed line") and cell.endswith(f"error: {CAUSE}")
    assert one_line("a\n  b\tc ", 60) == "a b c"


def test_a_limit_with_no_room_for_the_text_is_refused() -> None:
    with pytest.raises(ValueError, match="limit=6 leaves no room"):
        clip_middle(REASON, 6)
