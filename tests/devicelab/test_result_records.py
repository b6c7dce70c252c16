"""The experiment boundary as a contract: each result record survives JSON exactly (as_dict, then
json, then from_dict gives the same record and the same JSON), and a payload with a key missing,
of the wrong type or unknown is refused with a message naming that key.

The results are the test factories' (devicelab's own dataclasses with made-up timings, and the
real planner for the plan), the same ones the server, API and page tests store."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.fusion.results import FusionPlanRecord, FusionSweepRecord
from devicelab.remote.results import RemoteRunRecord
from devicelab.tenancy.results import SharingSweepRecord
from devicelab.wire import PayloadError
from tests.server import fusion_factories, remote_factories, sharing_factories


def _fusion_sweep() -> dict[str, Any]:
    return fusion_factories.sweep_result(fusion_factories.realistic_rows())


RECORDS: list[tuple[str, Callable[[], dict[str, Any]], Any]] = [
    ("fusion sweep", _fusion_sweep, FusionSweepRecord),
    ("fusion plan", fusion_factories.plan_comparison, FusionPlanRecord),
    ("sharing sweep", sharing_factories.sharing_result, SharingSweepRecord),
    ("remote run", remote_factories.remote_result, RemoteRunRecord),
]


@pytest.mark.parametrize(("name", "build", "record"), RECORDS, ids=[r[0] for r in RECORDS])
def test_a_record_survives_json_exactly(name: str, build: Callable[[], dict[str, Any]], record: Any) -> None:
    plain = build()
    read = record.from_dict(json.loads(json.dumps(plain)))
    assert read.as_dict() == plain  # the stored JSON keeps its shape
    assert record.from_dict(json.loads(json.dumps(read.as_dict()))) == read


def _set(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    target: Any = out
    for key in path[:-1]:
        target = target[key]
    if value is _DROP:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return out


_DROP = object()

BAD: list[tuple[str, Callable[[], dict[str, Any]], Any, tuple[Any, ...], Any, str]] = [
    ("missing", _fusion_sweep, FusionSweepRecord, ("elapsed_s",), _DROP, "fusion sweep.elapsed_s is missing"),
    (
        "mistyped row",
        _fusion_sweep,
        FusionSweepRecord,
        ("rows", 2, "throughput"),
        "fast",
        "fusion sweep.rows[2].throughput must be a number",
    ),
    ("a bool for an int", _fusion_sweep, FusionSweepRecord, ("wave_size",), True, "fusion sweep.wave_size"),
    ("unknown", _fusion_sweep, FusionSweepRecord, ("speedup",), 2.0, "unknown key(s) ['speedup']"),
    (
        "environment",
        _fusion_sweep,
        FusionSweepRecord,
        ("environment", "device_wave_size"),
        "8",
        "fusion sweep.environment.device_wave_size must be an integer",
    ),
    (
        "plan timing",
        fusion_factories.plan_comparison,
        FusionPlanRecord,
        ("timing", "plan", "device", "median"),
        "fast",  # null is a statistic not reported (NaN): refused is what is not a number
        "fusion plan.timing.plan.device.median must be a number",
    ),
    (
        "plan ratio",
        fusion_factories.plan_comparison,
        FusionPlanRecord,
        ("ratios", "fuse_all"),
        _DROP,
        "fusion plan.ratios.fuse_all is missing",
    ),
    (
        "sharing row",
        sharing_factories.sharing_result,
        SharingSweepRecord,
        ("rows", 0, "straggler", "gap_ms"),
        _DROP,
        "sharing sweep.rows[0].straggler.gap_ms is missing",
    ),
    (
        "sharing spec",
        sharing_factories.sharing_result,
        SharingSweepRecord,
        ("spec", "runs"),
        0,
        "sharing sweep.spec is not a sharing spec",
    ),
    (
        "remote summary",
        remote_factories.remote_result,
        RemoteRunRecord,
        ("summaries", 1, "e2e", "p90"),
        "slow",
        "remote run.summaries[1].e2e.p90 must be a number",
    ),
]


@pytest.mark.parametrize(("case", "build", "record", "path", "value", "message"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_payload_is_refused_naming_its_key(
    case: str, build: Callable[[], dict[str, Any]], record: Any, path: tuple[Any, ...], value: Any, message: str
) -> None:
    with pytest.raises(PayloadError) as refused:
        record.from_dict(_set(build(), path, value))
    assert message in str(refused.value)


def test_a_payload_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(PayloadError, match="remote run must be a JSON object, got list"):
        RemoteRunRecord.from_dict([])
