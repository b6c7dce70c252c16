"""Stored timings become the same profile records the CPU backend's results make directly."""

from __future__ import annotations

import math
from typing import Any

import pytest

from devicelab.predict.records import record_from_result
from tests.server.predictor_data import cpu_profiles, store_profiles

pytestmark = pytest.mark.django_db


def test_records_from_stored_timings_match_the_measured_results(member: Any, make_device: Any) -> None:
    from server.predictors.records import count_networks, scenario_records

    device = make_device("cpu")
    profiles = cpu_profiles()[:3]
    store_profiles(member.team, device, profiles)

    stored = scenario_records(member.team, device, threads=1)
    assert stored.networks == 3 and not stored.skipped
    assert count_networks(member.team, device, threads=1) == 3
    by_name = {s.record.graph.name: s.record for s in stored.records}
    for graph, result in profiles:
        direct = record_from_result(graph, result)
        rebuilt = by_name[graph.name]
        assert rebuilt.graph.name == graph.name and len(rebuilt.graph.operators) == len(graph.operators)
        assert rebuilt.e2e == direct.e2e
        assert rebuilt.settings == direct.settings
        assert rebuilt.runtime == direct.runtime and rebuilt.runtime
        assert rebuilt.kernel_owner == direct.kernel_owner
        assert rebuilt.profiled_e2e_ms == direct.profiled_e2e_ms
        assert len(rebuilt.ops) == len(direct.ops)
        for a, b in zip(rebuilt.ops, direct.ops):
            assert (a.index, a.name, a.type, a.kernel, a.fused_into) == (
                b.index,
                b.name,
                b.type,
                b.kernel,
                b.fused_into,
            )
            assert a.input_shapes == b.input_shapes and a.output_shapes == b.output_shapes
            if b.stats is None:
                assert a.stats is None
                continue
            assert a.stats is not None
            assert (a.stats.n, a.stats.mean, a.stats.median, a.stats.std) == (
                b.stats.n,
                b.stats.mean,
                b.stats.median,
                b.stats.std,
            )
            # Not stored per operator: missing, not invented.
            assert math.isnan(a.stats.p90) and math.isnan(a.stats.min)
        assert rebuilt.kernel_sum_ms("median") == pytest.approx(direct.kernel_sum_ms("median"))


def test_records_belong_to_one_team_scenario(make_member: Any, make_device: Any) -> None:
    from server.predictors.records import scenario_records

    a, b = make_member(), make_member()
    device, other_device = make_device("cpu"), make_device("cpu")
    profiles = cpu_profiles()[:2]
    store_profiles(a.team, device, profiles)
    assert scenario_records(b.team, device, threads=1).networks == 0
    assert scenario_records(a.team, other_device, threads=1).networks == 0
    assert scenario_records(a.team, device, threads=2).networks == 0
    assert scenario_records(a.team, device, threads=1, cores=[0]).networks == 0
    assert scenario_records(a.team, device, threads=1).networks == 2


def test_only_the_newest_runtime_is_one_scenario(member: Any, make_device: Any) -> None:
    from server.predictors.records import scenario_records
    from server.profiling.models import JobResult

    device = make_device("cpu")
    jobs = store_profiles(member.team, device, cpu_profiles()[:3])
    JobResult.objects.filter(job=jobs[0]).update(environment={"runtime": "onnxruntime 0.1 (old)"})
    stored = scenario_records(member.team, device, threads=1)
    assert stored.networks == 2
    assert list(stored.skipped.values()) == [1] and "0.1 (old)" in next(iter(stored.skipped))


def test_repeated_jobs_of_a_network_train_as_merged_rounds(member: Any, make_device: Any) -> None:
    import dataclasses

    from devicelab.measure.stats import SampleStats
    from server.predictors.records import is_probe, merged_by_network, scenario_records

    def scaled(s: SampleStats, f: float) -> SampleStats:
        return dataclasses.replace(s, mean=s.mean * f, median=s.median * f, min=s.min * f, max=s.max * f)

    device = make_device("cpu")
    profiles = cpu_profiles()[:3]
    store_profiles(member.team, device, profiles)
    graph, first = profiles[0]
    # a later round of the first network: whole runs faster, every operator slower
    later = dataclasses.replace(
        first,
        e2e=scaled(first.e2e, 0.8),
        ops=[o if o.stats is None else dataclasses.replace(o, stats=scaled(o.stats, 1.25)) for o in first.ops],
    )
    store_profiles(member.team, device, [(graph, later)])
    stored = scenario_records(member.team, device, threads=1)
    assert len(stored.records) == 4 and stored.networks == 3
    merged = {s.record.graph.name: s.record for s in merged_by_network(stored.records) if not is_probe(s.record)}
    assert len(merged) == 3
    rec = merged[graph.name]
    assert rec.settings["rounds"] == 2
    assert rec.e2e.median == pytest.approx(first.e2e.median * 0.8)
    assert rec.kernel_sum_ms() == pytest.approx(record_from_result(graph, first).kernel_sum_ms())
