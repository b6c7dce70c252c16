"""A profile as it crosses the wire (``ProfileRecord``): what orjson writes of ``json_ready()`` is
``as_dict()``, statistics a runtime did not report travel as null and come back as NaN, and a
damaged operator is refused naming its path."""

from __future__ import annotations

import dataclasses
import math

import orjson
import pytest

from devicelab.backends.base import ColdStart, DeviceInfo, OpTiming, ProfileResult
from devicelab.backends.profile_record import ProfileRecord
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.measure.stats import from_aggregate, summarize
from devicelab.wire import PayloadError


def a_result(e2e_aggregate: bool = False) -> ProfileResult:
    """A profile of three operators: a timed conv, a ReLU fused into it, a runtime copy."""
    stats = summarize([1.0, 1.2, 1.1])
    ops = [
        OpTiming(0, "conv", "conv2d", "FusedConv", [[1, 3, 8, 8]], [[1, 4, 8, 8]], {"kernel": [3, 3]}, stats),
        OpTiming(1, "relu", "relu", "FusedConv", [[1, 4, 8, 8]], [[1, 4, 8, 8]], {}, None, fused_into="conv"),
        OpTiming(None, "copy", "runtime", "MemcpyToHost", [], [], {}, from_aggregate(3, 0.2)),
    ]
    samples = [2.0, 2.1, 2.2]
    return ProfileResult(
        device=DeviceInfo("cpu", "cpu:test", "test cpu", {"cpu_model": "x"}),
        settings=ProfileSettings(),
        e2e=from_aggregate(3, 2.1, std=0.1) if e2e_aggregate else summarize(samples),
        samples_ms=samples,
        cold=ColdStart(5.0, 3.0),
        ops=ops,
        environment={"runtime": "test"},
    )


@pytest.mark.parametrize("aggregate", [False, True])
def test_what_orjson_writes_of_json_ready_is_as_dict(aggregate: bool) -> None:
    record = ProfileRecord.of(a_result(aggregate))
    assert orjson.loads(orjson.dumps(record.json_ready())) == record.as_dict()


def test_unreported_statistics_travel_as_null_and_come_back_as_nan() -> None:
    record = ProfileRecord.of(a_result(e2e_aggregate=True))
    wire = orjson.loads(orjson.dumps(record.json_ready()))
    assert wire["e2e"]["median"] is None and wire["e2e"]["mean"] == 2.1
    assert wire["ops"][2]["stats"]["p90"] is None
    back = ProfileRecord.from_dict(wire)
    assert math.isnan(back.e2e.median) and math.isnan(back.ops[2].stats.p90)  # type: ignore[union-attr]
    assert back.e2e.std == pytest.approx(0.1) and back.ops[0] == record.ops[0]


def test_a_damaged_operator_is_refused_naming_its_path() -> None:
    wire = ProfileRecord.of(a_result()).as_dict()
    wire["ops"][1]["input_shapes"] = [[1, "4", 8, 8]]
    with pytest.raises(PayloadError, match=r"profile\.ops\[1\]\.input_shapes\[0\]\[1\] must be an integer"):
        ProfileRecord.from_dict(wire)
    wire = ProfileRecord.of(a_result()).as_dict()
    wire["ops"][0]["stats"]["mean"] = None
    with pytest.raises(PayloadError, match=r"profile\.ops\[0\]\.stats\.mean must be a number, got null"):
        ProfileRecord.from_dict(wire)


def test_a_record_read_back_equals_the_one_sent() -> None:
    record = ProfileRecord.of(a_result())
    back = ProfileRecord.from_dict(orjson.loads(orjson.dumps(record.json_ready())))
    # equal field by field, but for the runtime row's NaN statistics (NaN equals nothing)
    assert dataclasses.replace(back, ops=back.ops[:2]) == dataclasses.replace(record, ops=record.ops[:2])
    assert back.ops[2].stats is not None and back.ops[2].stats.mean == pytest.approx(0.2)
