"""Results with a time breakdown and cold starts, as ``Backend.profile_job`` reports them: the
client's stages really measured (on small photos, to be quick), the rest from ``profile_result``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from devicelab.backends.base import DeviceInfo, ProfileResult
from devicelab.graph import Graph
from devicelab.measure.cold_starts import FRESH_PROCESS, ColdSample, ColdStarts
from devicelab.measure.image_pipeline import measure_breakdown
from devicelab.measure.photos import Photo, phone_photos
from tests.server.factories import profile_result

FRESH = ColdStarts(
    FRESH_PROCESS, [ColdSample(20.0, 5.0, 250.0), ColdSample(24.0, 6.0, 240.0), ColdSample(22.0, 4.0, 260.0)]
)


def small_photos(directory: Path) -> list[Photo]:
    """The lab's scene at 320 x 240 (a phone's is 4032 x 3024): the stages run in milliseconds."""
    return phone_photos(directory, width=320, height=240)


def result_with_breakdown(
    graph: Graph,
    photos: list[Photo],
    *,
    cold_starts: ColdStarts | None = None,
    device: DeviceInfo | None = None,
) -> ProfileResult:
    """``profile_result(graph)`` with its breakdown measured, and ``cold_starts`` when given."""
    base = profile_result(graph, device)
    cold = cold_starts or base.cold_distribution()
    breakdown = measure_breakdown(
        graph,
        load_samples_ms=cold.load_samples_ms(),
        load_source="test",
        inference=base.e2e,
        inference_samples_ms=base.samples_ms,
        runs=3,
        warmup_runs=1,
        host_side=base.device.kind == "android",
        photos=photos,
    )
    return replace(base, cold_starts=cold_starts, breakdown=breakdown)
