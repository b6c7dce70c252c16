"""The OpenCL backend's plan as predictor kernels, typed the same when deduced and when measured."""

from __future__ import annotations

import pytest

from devicelab.graph import nas, zoo
from devicelab.predict.deduce_opencl import OpenclDeducer
from devicelab.predict.features import feature_group
from devicelab.predict.records import ProfileRecord

pytest.importorskip("pyopencl")


def test_kernels_cover_the_plan() -> None:
    from devicelab.backends.opencl.plan import canonical, kernels_for_graph

    g = canonical(zoo.build("shufflenet_v2_x0_5"))
    kernels = OpenclDeducer().kernels(g)
    planned = kernels_for_graph(g)
    assert len(kernels) == len({k.anchor for k in planned})  # a concat's launches are one kernel
    covered = {i for k in kernels for i in k.ops}
    views = {i for i, o in enumerate(g.operators) if o.type in ("reshape", "flatten")}
    assert covered | views == set(range(len(g.operators)))
    for k in kernels:
        feature_group(k.type)  # every type has a Table 3 row


def test_measured_rows_get_the_deduced_types() -> None:
    from devicelab.backends.opencl.backend import op_timings
    from devicelab.backends.opencl.plan import canonical, kernels_for_graph
    from devicelab.measure.stats import summarize

    g = canonical(nas.sample("synthetic", 1, 3)[0])
    plan = kernels_for_graph(g)
    runs = [[0.1 + 0.01 * i for i in range(len(plan))] for _ in range(3)]
    rows = op_timings(g, plan, runs)
    record = ProfileRecord(g, tuple(rows), summarize([sum(r) + 0.5 for r in runs]))
    d = OpenclDeducer()
    measured = d.measured(record)
    deduced = d.kernels(g)
    assert [k.type for k in measured] == [k.type for k in deduced]
    assert sum(k.latency_ms or 0 for k in measured) == pytest.approx(sum(runs[0]))
