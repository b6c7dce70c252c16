"""Profile records keep what predictors need and survive plain JSON."""

from __future__ import annotations

import json

import pytest

from devicelab.predict.cpu_learning import learn_cpu_deducer
from devicelab.predict.errors import PredictorError
from devicelab.predict.records import ProfileRecord


def test_record_round_trips_through_json(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    rec = cpu_records["synthetic"][0]
    again = ProfileRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert again.ops == rec.ops
    assert again.e2e == rec.e2e
    assert again.kernel_owner == rec.kernel_owner
    assert again.graph.operators == rec.graph.operators
    deducer = learn_cpu_deducer(cpu_records["synthetic"][:10])
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


def _profile_twice(graph_name: str = "mobilenet_v2") -> list[ProfileRecord]:
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings
    from devicelab.graph import zoo
    from devicelab.predict.records import record_from_result

    device = cpu.discover()[0]
    graph = zoo.build(graph_name)
    settings = ProfileSettings(threads=1, runs=2, warmup_runs=1)
    return [record_from_result(graph, cpu.profile(device, graph, settings)) for _ in range(2)]


def test_merged_rounds_keep_each_rows_fastest_round() -> None:
    from devicelab.predict.records import merge_rounds

    rounds = _profile_twice()
    merged = merge_rounds(rounds)
    assert merged.settings["rounds"] == 2
    assert merged.e2e.median == min(r.e2e.median for r in rounds)
    # ONNX Runtime names the reorders it inserts anew in every session: rows are matched by
    # operator, or by kernel and shapes, not by name
    reorders = [o for o in merged.ops if o.index is None]
    assert reorders, "mobilenet_v2 runs reorder kernels on this CPU"
    for row in merged.ops:
        same = [
            o
            for r in rounds
            for o in r.ops
            if (o.index, o.kernel, o.input_shapes) == (row.index, row.kernel, row.input_shapes)
            and (o.index is None or o.name == row.name)
        ]
        assert row in same
        if row.stats is not None and row.index is not None:
            assert row.stats.median == min(o.stats.median for o in same if o.stats is not None)
    assert merged.kernel_sum_ms() <= min(r.kernel_sum_ms() for r in rounds) + 1e-9
    # the merged record trains like any other
    deducer = learn_cpu_deducer([merged])
    assert deducer.samples([merged])[0].e2e_ms == merged.e2e.median


def test_rounds_of_different_graphs_or_kernels_are_refused() -> None:
    import dataclasses

    from devicelab.predict.records import merge_rounds

    a, b = _profile_twice("squeezenet_1_0")
    with pytest.raises(PredictorError, match="different graphs"):
        merge_rounds([a, dataclasses.replace(b, graph=dataclasses.replace(b.graph, name="other"))])
    with pytest.raises(PredictorError, match="different kernels"):
        merge_rounds([a, dataclasses.replace(b, ops=b.ops[:-1])])
    with pytest.raises(PredictorError, match="no rounds"):
        merge_rounds([])
