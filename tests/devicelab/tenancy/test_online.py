"""The online scheduler: seeded Poisson traces (pure), and the three policies replaying one trace on
the OpenCL device, each request served exactly once with its tenant's exclusive output. Nothing
here asserts how fast a policy is: only what it served, in which order, with whom, and why."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.graph.ir import Graph
from devicelab.tenancy.arrivals import ArrivalTrace, Request, TenantLoad, poisson_trace, uniform_loads
from devicelab.tenancy.gemm import GemmShape
from devicelab.tenancy.gemm_strategies import SharedOperands, exclusive_results
from devicelab.tenancy.online import OnlineResult, OnlineWorkload, PolicyResult, run_online
from devicelab.tenancy.online_policies import LaunchRule, RequestRecord, ServiceEstimate
from devicelab.tenancy.online_servers import gemm_server

SHAPE = "48x20x72"  # odd sizes: partial tiles on both axes


# -- traces (no device) -------------------------------------------------------------------------


def test_a_seeded_trace_is_reproducible_and_survives_json() -> None:
    loads = uniform_loads(3, 90.0, 25.0)
    a = poisson_trace(loads, seed=11, duration_s=2.0)
    b = poisson_trace(loads, seed=11, duration_s=2.0)
    c = poisson_trace(loads, seed=12, duration_s=2.0)
    assert a.as_dict() == b.as_dict()
    assert a.as_dict() != c.as_dict()
    again = ArrivalTrace.from_dict(json.loads(json.dumps(a.as_dict())))
    assert again == a
    assert [r.id for r in a.requests] == list(range(len(a.requests)))
    assert all(x.arrival_s <= y.arrival_s for x, y in zip(a.requests, a.requests[1:]))
    assert all(0 <= r.arrival_s < 2.0 and r.target_ms == 25.0 for r in a.requests)


def test_inter_arrivals_are_exponential_with_the_tenants_rate() -> None:
    rate = 40.0
    trace = poisson_trace([TenantLoad(rate, 10.0), TenantLoad(4 * rate, 10.0)], seed=3, requests_per_tenant=20_000)
    for tenant, r in ((0, rate), (1, 4 * rate)):
        gaps = trace.inter_arrivals_s(tenant)
        mean = 1.0 / r
        # the sample mean of 20,000 exponential gaps has a standard error of 0.7 % of the mean
        assert abs(gaps.mean() - mean) < 0.03 * mean
        assert abs(gaps.std() / gaps.mean() - 1.0) < 0.05  # an exponential's coefficient of variation is 1
        assert abs(np.mean(gaps > mean) - np.exp(-1.0)) < 0.02  # P(gap > mean) = 1/e


def test_request_counts_over_a_window_average_rate_times_duration() -> None:
    counts = [len(poisson_trace([TenantLoad(50.0, 5.0)], seed=s, duration_s=1.0).requests) for s in range(200)]
    assert abs(np.mean(counts) - 50.0) < 2.5  # standard error of the mean of 200 Poisson(50) counts: 0.5
    assert abs(np.var(counts) / np.mean(counts) - 1.0) < 0.35  # Poisson: variance equals mean


def test_adding_a_tenant_keeps_the_others_arrivals() -> None:
    two = poisson_trace(uniform_loads(2, 60.0, 9.0), seed=5, duration_s=1.5)
    three = poisson_trace([*two.loads, TenantLoad(30.0, 9.0)], seed=5, duration_s=1.5)
    for t in (0, 1):
        assert [r.arrival_s for r in two.of_tenant(t)] == [r.arrival_s for r in three.of_tenant(t)]


def test_per_request_targets_are_drawn_from_the_tenants_choices() -> None:
    trace = poisson_trace([TenantLoad(200.0, 10.0, (5.0, 50.0))], seed=1, duration_s=1.0)
    targets = {r.target_ms for r in trace.requests}
    assert targets == {5.0, 50.0}
    same_arrivals = poisson_trace([TenantLoad(200.0, 10.0)], seed=1, duration_s=1.0)
    assert [r.arrival_s for r in trace.requests] == [r.arrival_s for r in same_arrivals.requests]


def test_bad_traces_are_refused() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        poisson_trace(uniform_loads(1, 10.0, 5.0), duration_s=1.0, requests_per_tenant=3)
    with pytest.raises(ValueError, match="rate"):
        poisson_trace([TenantLoad(0.0, 5.0)], duration_s=1.0)
    with pytest.raises(ValueError, match="target"):
        poisson_trace([TenantLoad(1.0, -5.0)], duration_s=1.0)
    data = poisson_trace(uniform_loads(2, 50.0, 5.0), seed=0, duration_s=1.0).as_dict()
    data["requests"][0][0] = 7
    with pytest.raises(ValueError, match="tenant 7"):
        ArrivalTrace.from_dict(data)


# -- the launch rule (no device) ----------------------------------------------------------------


def _requests(*arrivals_and_targets: tuple[float, float]) -> list[Request]:
    return [Request(i, i, a, t) for i, (a, t) in enumerate(arrivals_and_targets)]


def test_launch_rule_full_window_and_deadline() -> None:
    estimate = ServiceEstimate({1: 2.0, 4: 8.0}, 4)
    assert estimate(2) == pytest.approx(4.0) and estimate(4) == pytest.approx(8.0)
    rule = LaunchRule(window_ms=10.0, max_batch=3, margin=0.25, guard_ms=1.0)
    loose = _requests((0.000, 1000.0), (0.001, 1000.0))
    assert rule.decide(loose, 0.005, estimate) == (None, pytest.approx(0.010))
    assert rule.decide(loose, 0.010, estimate)[0] == "window"
    assert rule.decide(_requests((0.0, 1e3), (0.0, 1e3), (0.0, 1e3)), 0.0, estimate)[0] == "full"
    # tightest deadline 20 ms; two requests need est(2) * 1.25 + 1 = 6 ms: fire at 14 ms, before the window
    tight = LaunchRule(window_ms=100.0, max_batch=3, margin=0.25, guard_ms=1.0)
    batch = _requests((0.000, 50.0), (0.002, 18.0))
    reason, fire = tight.decide(batch, 0.005, estimate)
    assert reason is None and fire == pytest.approx(0.014)
    assert tight.decide(batch, 0.014, estimate)[0] == "deadline"


def test_the_estimate_follows_what_it_observes() -> None:
    estimate = ServiceEstimate({1: 2.0, 2: 4.0}, 2, smoothing=0.5)
    estimate.observe(2, 8.0)
    assert estimate(2) == pytest.approx(6.0) and estimate(1) == pytest.approx(2.0)


# -- on the device --------------------------------------------------------------------------------


def test_a_super_kernel_over_any_subset_gives_each_tenant_its_exclusive_bits(found: FoundDevice) -> None:
    shared = SharedOperands(found, GemmShape.parse(SHAPE), 4, seed=1)
    try:
        references = exclusive_results(shared)
        server = gemm_server("space_time", shared)
        try:
            for subset in ([3, 1], [2], [0, 3, 2, 1], [1, 2]):
                got = server.serve(subset)
                assert len(got.outputs) == len(subset)
                for out, t in zip(got.outputs, subset, strict=True):
                    assert np.array_equal(out.view(np.uint8), references[t].view(np.uint8)), (subset, t)
                assert got.device_start_ns is not None and got.device_end_ns is not None
                assert got.device_end_ns >= got.device_start_ns
        finally:
            server.release()
    finally:
        shared.release()


def _served_once(result: PolicyResult, trace: ArrivalTrace) -> list[RequestRecord]:
    records = result.records
    assert result.status == "ok", result.error
    assert [r.request.id for r in records] == [r.id for r in trace.requests]
    for rec in records:
        assert rec.start_s is not None and rec.finish_s is not None
        assert rec.request.arrival_s <= rec.start_s <= rec.finish_s
    return records


def _no_overlap(records: Sequence[RequestRecord]) -> bool:
    spans = sorted((r.start_s or 0.0, r.finish_s or 0.0) for r in records)
    return all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:]))


@pytest.fixture(scope="module")
def dense(found: FoundDevice) -> tuple[ArrivalTrace, OnlineResult]:
    """Three SGEMM tenants, about 600 requests/s for 0.8 s, every policy, a 20 ms window."""
    trace = poisson_trace(uniform_loads(3, 600.0, 500.0), seed=4, duration_s=0.8)
    return trace, run_online(found, OnlineWorkload.sgemm(SHAPE, seed=2), trace, window_ms=20.0)


def test_every_policy_serves_every_request_once_with_its_exclusive_output(
    dense: tuple[ArrivalTrace, OnlineResult],
) -> None:
    trace, result = dense
    assert [p.policy for p in result.policies] == ["time_only", "space_only", "space_time"]
    for policy in result.policies:
        _served_once(policy, trace)
        checks = policy.checks()
        assert checks["correct"] and checks["rule"] == "bitwise", (policy.policy, checks)
        assert checks["requests_checked"] == len(trace.requests)
    data = json.loads(json.dumps(result.as_dict()))
    assert [c["policy"] for c in data["comparison"]] == ["time_only", "space_only", "space_time"]
    assert all(c["outputs_correct"] and 0.0 <= c["attainment"] <= 1.0 for c in data["comparison"])
    assert ArrivalTrace.from_dict(data["trace"]) == trace
    overall = data["policies"]["space_only"]["overall"]
    assert overall["served"] == len(trace.requests) and overall["latency_ms"]["p99"] >= overall["latency_ms"]["p50"]
    assert sum(t["served"] for t in data["policies"]["time_only"]["per_tenant"]) == len(trace.requests)


def test_time_only_runs_one_request_at_a_time_first_come_first_served(
    dense: tuple[ArrivalTrace, OnlineResult],
) -> None:
    trace, result = dense
    records = result.policies[0].records
    assert _no_overlap(records)
    assert [r.request.id for r in sorted(records, key=lambda r: r.start_s or 0.0)] == [r.id for r in trace.requests]


def test_space_only_keeps_each_tenants_requests_in_order(dense: tuple[ArrivalTrace, OnlineResult]) -> None:
    trace, result = dense
    records = result.policies[1].records
    for t in range(trace.tenants):
        mine = [r for r in records if r.request.tenant == t]
        assert _no_overlap(mine)
        assert [r.request.id for r in sorted(mine, key=lambda r: r.start_s or 0.0)] == [
            r.id for r in trace.of_tenant(t)
        ]
    assert all(r.device_start_ns is not None for r in records)


def test_space_time_batches_dense_arrivals(dense: tuple[ArrivalTrace, OnlineResult]) -> None:
    trace, result = dense
    space_time = result.policies[2]
    batches = space_time.batches
    assert sum(len(b.requests) for b in batches) == len(trace.requests)
    assert max(len(b.requests) for b in batches) > 1
    assert (space_time.batch_summary() or {})["mean_size"] > 1.0
    for b in batches:
        assert len(set(b.tenants)) == len(b.tenants) <= trace.tenants  # one request per tenant per batch
        assert b.reason in ("full", "window", "deadline")
        for rid in b.requests:
            assert space_time.records[rid].batch == b.id and space_time.records[rid].batch_size == len(b.requests)
    spans = [(b.start_s, b.finish_s) for b in batches]
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:]))  # one batch at a time


def test_a_tight_target_launches_before_the_window(found: FoundDevice) -> None:
    # sparse arrivals, a window longer than the trace: only the deadlines (or a full batch) launch
    trace = poisson_trace(uniform_loads(2, 25.0, 40.0), seed=9, duration_s=1.0)
    result = run_online(found, OnlineWorkload.sgemm(SHAPE), trace, ["space_time"], window_ms=10_000.0)
    space_time = result.policies[0]
    _served_once(space_time, trace)
    reasons = [b.reason for b in space_time.batches]
    assert "window" not in reasons and "deadline" in reasons
    assert space_time.checks()["correct"]


def test_a_loose_target_waits_for_the_window(found: FoundDevice) -> None:
    trace = poisson_trace(uniform_loads(2, 25.0, 10_000.0), seed=9, duration_s=0.6)
    result = run_online(found, OnlineWorkload.sgemm(SHAPE), trace, ["space_time"], window_ms=30.0)
    reasons = {b.reason for b in result.policies[0].batches}
    assert reasons <= {"window", "full"} and "window" in reasons


def test_network_tenants_online(found: FoundDevice, tiny: Graph) -> None:
    trace = poisson_trace(uniform_loads(2, 120.0, 1000.0), seed=6, duration_s=0.5)
    result = run_online(found, OnlineWorkload.of_network("tiny", seed=3), trace, window_ms=15.0, graphs={"tiny": tiny})
    for policy in result.policies:
        _served_once(policy, trace)
        checks = policy.checks()
        assert checks["correct"], (policy.policy, checks)
        assert checks["rule"] == ("bitwise" if policy.policy != "space_time" else "relative error <= 0.001")
    assert [p.policy for p in result.policies] == ["time_only", "space_only", "space_time", "space_time_native"]
    for batching in result.policies[2:]:
        assert sum(len(b.requests) for b in batching.batches) == len(trace.requests)


def test_a_progress_callback_that_raises_stops_the_replay(found: FoundDevice) -> None:
    trace = poisson_trace(uniform_loads(2, 50.0, 100.0), seed=1, duration_s=5.0)

    class Stop(Exception):
        pass

    def progress(fraction: float, message: str) -> None:
        if "replaying" in message:
            raise Stop(message)

    with pytest.raises(Stop):
        run_online(found, OnlineWorkload.sgemm(SHAPE), trace, ["space_only"], progress=progress)


def test_bad_arguments_are_refused(found: FoundDevice) -> None:
    trace = poisson_trace(uniform_loads(1, 10.0, 5.0), seed=0, duration_s=0.1)
    with pytest.raises(ValueError, match="policies"):
        run_online(found, OnlineWorkload.sgemm(SHAPE), trace, ["fastest"])
    with pytest.raises(ValueError, match="network workloads only"):
        run_online(found, OnlineWorkload.sgemm(SHAPE), trace, ["space_time_native"])
    with pytest.raises(ValueError, match="window"):
        run_online(found, OnlineWorkload.sgemm(SHAPE), trace, window_ms=-1.0)
    with pytest.raises(ValueError, match="largest batch"):
        run_online(found, OnlineWorkload.sgemm(SHAPE), trace, max_batch=2)
    with pytest.raises(ValueError, match="MxNxK"):
        OnlineWorkload.sgemm("big")
