"""Plotly figures of a remote run: plain data in (a run's profiles and requests), figure JSON out.

* Where the time goes: one stacked horizontal bar per network profile, a segment per part in
  the order a request meets them: the upload, the server's stages (decode, resize + crop,
  normalize, compute, post-processing, the rest of its time), the download, and the remainder
  that none of the parts' clocks holds; each the median of the profile's requests (so a bar is close to, not exactly, the median end to end).
* End to end: a box per profile of every request's time, each request drawn.

The network parts are warm colours, the server's the cool colours of a profile's time breakdown
(``figures.STAGE_COLORS``). The look is the dashboard's (``figures._layout``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import plotly.graph_objects as go

from dashboard.figures import _OTHER_COLOR, STAGE_COLORS, Segment, _json, _layout, stacked_bars

# A request's parts in the order it meets them: (name, label, colour).
PARTS = (
    ("upload", "upload", "#e8702a"),
    ("decode", "server: decode", STAGE_COLORS["decode"]),
    ("resize_crop", "server: resize + crop", STAGE_COLORS["resize_crop"]),
    ("normalize", "server: normalize", STAGE_COLORS["normalize"]),
    ("compute", "server: compute", STAGE_COLORS["inference"]),
    ("postprocess", "server: post-processing", STAGE_COLORS["postprocess"]),
    ("other", "server: other", _OTHER_COLOR),
    ("download", "download", "#e9b949"),
    ("remainder", "remainder (no part's clock)", "#cbd2d9"),
)
E2E_COLOR = "#2f6fde"


@dataclass(frozen=True)
class ProfileBar:
    """One profile's medians (ms) by part name (``PARTS``)."""

    profile: str
    parts_ms: dict[str, float]


def time_breakdown(bars: Sequence[ProfileBar]) -> str:
    """Stacked horizontal bars, one per profile, of the parts' medians."""
    segments = [Segment(label, color, [b.parts_ms.get(name, 0.0) for b in bars]) for name, label, color in PARTS]
    return stacked_bars([b.profile for b in bars], segments, "median time (ms)", 110, 70, 2)


def e2e_boxes(samples_ms: Mapping[str, Sequence[float]]) -> str:
    """A box per profile of its requests' end-to-end times, every request drawn."""
    traces = [
        go.Box(
            x=list(values),
            name=profile,
            orientation="h",
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker={"color": E2E_COLOR, "size": 5, "opacity": 0.7},
            line={"color": E2E_COLOR},
            hovertemplate=f"{profile}: %{{x:.2f}} ms<extra></extra>",
        )
        for profile, values in samples_ms.items()
    ]
    fig = go.Figure(
        traces,
        layout=_layout(
            90 + 50 * len(traces),
            "end to end (ms per request)",
            "",
            yaxis={"autorange": "reversed"},
            showlegend=False,
        ),
    )
    return _json(fig)


__all__ = ["PARTS", "ProfileBar", "e2e_boxes", "time_breakdown"]
