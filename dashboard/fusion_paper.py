"""Seed paper 000's own numbers (ParallelFusion, EMDL'21, section 5), shown beside our figures.

Each value was read from the paper's text (``shared/seeds/000_*.txt``, section 5 and the
abstract): the paper reports throughput relative to sequential execution as a percentage, here
as the same ratio (36 % is 0.36x). Every one was measured on one device, which the pages name:
a Samsung Galaxy S20 (USA version) with an Adreno 650 GPU, MNN's OpenCL backend, averages of 100
consecutive inferences after 5 warm-up iterations; no interval is given for any of them.
"""

from __future__ import annotations

from dataclasses import dataclass

PAPER_DEVICE = "Samsung Galaxy S20 (USA), Adreno 650 GPU, MNN OpenCL backend"
PAPER_METHOD = "averages of 100 consecutive inferences after 5 warm-up iterations, no interval reported"


@dataclass(frozen=True)
class PaperFigure:
    """What the paper reports for one of its figures, and what our figure of it can be read against."""

    figure: str  # "8a"
    text: str  # the paper's numbers, in its own terms
    low: float | None = None  # the range of its ratios, where it gives one
    high: float | None = None
    share_above_1: float | None = None  # its share of combinations faster fused, where it gives one

    @property
    def device(self) -> str:
        """The device every number of the paper was measured on."""
        return PAPER_DEVICE


PAPER_FIGURES = {
    "8a": PaperFigure(
        "8a",
        "pairs of operators: 0.36x to 1.95x throughput (36 %-195 %) depending on the combination; fused "
        "faster than sequential in 66 % of all combinations (averages, no interval)",
        low=0.36,
        high=1.95,
        share_above_1=0.66,
    ),
    "8b": PaperFigure(
        "8b",
        "triples of operators: 0.31x to 2.18x throughput (31 %-218 %); fused faster in about 80 % of all "
        "combinations; fusing more than two squeeze operators degrades badly",
        low=0.31,
        high=2.18,
        share_above_1=0.80,
    ),
    "9": PaperFigure(
        "9",
        "identical operators of one network: up to 40 % higher throughput (1.4x) on MobileNet-V2 and DeepLab-V3; "
        "without wave rounding (dotted) branch divergence costs up to 50 % beyond 5 fused kernels",
        high=1.40,
    ),
    "10": PaperFigure(
        "10",
        "pairs against their MFLOPs: the gain follows the kinds combined more than the work, each group of a "
        "combination stretching over 10-100x in MFLOPs",
    ),
}


__all__ = ["PAPER_DEVICE", "PAPER_FIGURES", "PAPER_METHOD", "PaperFigure"]
