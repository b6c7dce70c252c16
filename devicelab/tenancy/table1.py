"""Table 1: the throughput of space-time over the next best approach, per workload.

For every R in [2, 120] where space-time and at least one of time-only and space-only were
measured, the next best is the better of the two by median GFLOP/s, and the speed-up is
space-time's GFLOP/s over the next best's *paired by round*: a run interleaves the strategies
round by round, so round i's samples of the two were taken side by side, and the speed-up is
``devicelab.measure.ratios.paired_ratio`` of them (the median of the per-round ratios, with a
bootstrap interval over rounds; "within noise" where the interval holds 1), never a ratio of two
unpaired medians. The table gives the geometric mean of the per-R speed-ups, which approach was
next best (the one that was, at most R), and how many R were significantly above 1, below 1 or
within noise (``significant``): the headline counts only those. Per R, ``over`` gives the subject's
paired ratio over every other strategy measured at that R (exclusive, the multiplexers, the peers).

Works on stored rows (``SharingRow.as_dict()``), so the server can rebuild it from the database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from devicelab.measure.ratios import RatioEstimate, count_significant, paired_ratio

R_RANGE = (2, 120)
SPACE_TIME = "space_time"
MULTIPLEXERS = ("time_only", "space_only")  # the paper's "next best" candidates
PEERS = ("space_time_vbatched", "space_time_clblast", "space_time_native")


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of positive values (None when there are none)."""
    v = [x for x in values if x > 0]
    return float(np.exp(np.mean(np.log(v)))) if v else None


def _gflops(row: Mapping[str, Any]) -> float | None:
    t = row.get("throughput")
    return None if not t else t.get("gflops")


def paired_gflops(a: Mapping[str, Any], b: Mapping[str, Any]) -> RatioEstimate | None:
    """Row ``a``'s GFLOP/s over row ``b``'s, paired by round (None when no round has both)."""
    sa, sb = a["throughput"]["gflops_samples"], b["throughput"]["gflops_samples"]
    pairs = [(x, y) for x, y in zip(sa, sb) if x and y]
    if not pairs:
        return None
    return paired_ratio([x for x, _ in pairs], [y for _, y in pairs])


def _speedups(
    by_r: dict[int, dict[str, Mapping[str, Any]]], subject: str, r_range: tuple[int, int]
) -> tuple[list[dict[str, Any]], Counter[str]]:
    per_r: list[dict[str, Any]] = []
    winners: Counter[str] = Counter()
    for r in sorted(by_r):
        if not r_range[0] <= r <= r_range[1]:
            continue
        rows = by_r[r]
        top = rows.get(subject)
        rivals = [rows[s] for s in MULTIPLEXERS if s in rows and _gflops(rows[s])]
        if top is None or not _gflops(top) or not rivals:
            continue
        best = max(rivals, key=lambda row: _gflops(row) or 0.0)
        estimate = paired_gflops(top, best)
        if estimate is None:
            continue
        winners[best["strategy"]] += 1
        per_r.append(
            {
                "tenants": r,
                "gflops": _gflops(top),
                "next_best": best["strategy"],
                "next_best_gflops": _gflops(best),
                "speedup": estimate.ratio,
                "ratio": estimate.as_dict(),
                # against every other strategy measured at this R too, each paired by round
                "over": {
                    name: paired.as_dict()
                    for name, row in sorted(rows.items())
                    if name != subject and _gflops(row) and (paired := paired_gflops(top, row)) is not None
                },
            }
        )
    return per_r, winners


def _significant(per_r: list[dict[str, Any]]) -> dict[str, int]:
    return count_significant([RatioEstimate.from_dict(p["ratio"]) for p in per_r])


def table1(rows: Iterable[Mapping[str, Any]], r_range: tuple[int, int] = R_RANGE) -> list[dict[str, Any]]:
    """One entry per workload: space-time's speed-up over the next best approach at every R in
    ``r_range`` and their geometric mean, and the same for the peer super-kernels measured."""
    grouped: dict[str, dict[int, dict[str, Mapping[str, Any]]]] = {}
    workloads: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        if row.get("status") != "ok" or row.get("checks", {}).get("correct") is False:
            continue  # a strategy that changed someone's numbers does not get a speed-up
        name = row["workload"]["name"]
        workloads[name] = row["workload"]
        grouped.setdefault(name, {}).setdefault(int(row["tenants"]), {})[row["strategy"]] = row
    table = []
    for name, by_r in grouped.items():
        per_r, winners = _speedups(by_r, SPACE_TIME, r_range)
        entry: dict[str, Any] = {
            "workload": dict(workloads[name]),
            "r_range": list(r_range),
            "speedup_geomean": geomean(p["speedup"] for p in per_r),
            "next_best": winners.most_common(1)[0][0] if winners else None,
            "next_best_counts": dict(winners),
            "significant": _significant(per_r),
            "per_tenants": per_r,
            "peers": {},
        }
        for peer in PEERS:
            peer_r, peer_winners = _speedups(by_r, peer, r_range)
            if peer_r:
                entry["peers"][peer] = {
                    "speedup_geomean": geomean(p["speedup"] for p in peer_r),
                    "next_best": peer_winners.most_common(1)[0][0],
                    "significant": _significant(peer_r),
                    "per_tenants": peer_r,
                }
        table.append(entry)
    return table


__all__ = ["MULTIPLEXERS", "R_RANGE", "geomean", "paired_gflops", "table1"]
