"""The row tables of ``latencylab fusion rows`` and ``latencylab sharing rows`` cut a long refusal
in the middle: its start and its cause (the end) both show."""

from __future__ import annotations

from latencylab.commands import fusion_cmds, sharing_cmds

LONG = (
    "FusionError: cannot fuse DWC_s1+EW:\n" + "  while tiling the output, the wave of 64 lanes\n" * 10 + "needs 98304 B"
)


def test_a_refused_fusion_set_shows_the_cause() -> None:
    cell = fusion_cmds._check({"error": LONG})
    assert len(cell) <= 70 and "\n" not in cell
    assert cell.startswith("refused: FusionError") and cell.endswith("needs 98304 B")
    assert fusion_cmds._check({"error": "FusionError: not independent"}) == "refused: FusionError: not independent"


def test_a_failed_sharing_row_shows_the_cause() -> None:
    cell = sharing_cmds._check({"status": "error", "error": LONG})
    assert len(cell) <= 100 and cell.startswith("FusionError") and cell.endswith("needs 98304 B")
    assert sharing_cmds._check({"status": "memory_bound", "error": ""}) == "-"
