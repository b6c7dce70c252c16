"""Profile records keep what predictors need and survive plain JSON."""

from __future__ import annotations

import json

import pytest

from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.records import ProfileRecord


def test_record_round_trips_through_json(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    rec = cpu_records["synthetic"][0]
    again = ProfileRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert again.ops == rec.ops
    assert again.e2e == rec.e2e
    assert again.kernel_owner == rec.kernel_owner
    assert again.graph.operators == rec.graph.operators
    deducer = CpuDeducer.learn(cpu_records["synthetic"][:10])
    assert deducer.measured(again) == deducer.measured(rec)


def test_consistency_compares_the_two_phases(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    rec = cpu_records["synthetic"][0]
    cv, ratio = rec.consistency()
    assert cv == rec.e2e.cv
    assert ratio == pytest.approx(rec.e2e.median / rec.kernel_sum_ms())
    assert rec.profiled_e2e_ms is not None and rec.profiled_e2e_ms > 0


def test_not_a_record_is_refused() -> None:
    with pytest.raises(PredictorError, match="not a profile record"):
        ProfileRecord.from_dict({"graph": {}})
