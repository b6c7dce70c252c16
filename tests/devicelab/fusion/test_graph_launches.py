"""Sub-kernels taken from a real graph run: the independent branches of one graph fused compute
what the graph runner computes, and dependent kernels are refused."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from devicelab.backends.opencl.runner import GraphRunner
from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import fuse
from devicelab.fusion.graph_launches import subkernels_for_graph_ops
from devicelab.fusion.run import device_span_ms, enqueue_launches, ready_fused, ready_subkernel
from devicelab.graph.builder import GraphBuilder
from devicelab.measure.inputs import make_inputs


def two_branches():
    b = GraphBuilder("branches", (1, 4, 9, 11))
    conv = b.relu6(b.conv(b.input, 6, 1, name="pw"), name="act")
    pool = b.max_pool(b.input, 3, stride=2, name="pool")
    return b.build([conv, pool])


@pytest.fixture
def branches(found):
    runner = GraphRunner(found, two_branches())
    yield runner
    runner.release()


def test_sub_kernels_are_the_runners_launches(branches) -> None:
    subs = subkernels_for_graph_ops(branches)
    assert [(s.name, s.label) for s in subs] == [("conv2d_1x1", "pw"), ("pool2d", "pool")]
    first = branches.launches[0]
    assert subs[0].args == first.args and subs[0].global_size == first.planned.global_size
    assert subs[0].local_size == first.local_size and subs[0].launch_size == first.global_size
    assert [s.label for s in subkernels_for_graph_ops(branches, ["act"])] == ["pw"]  # by an absorbed operator
    with pytest.raises(ValueError, match="no launch"):
        subkernels_for_graph_ops(branches, ["nothing"])


@pytest.mark.parametrize("rounding", [True, False])
def test_fused_branches_compute_what_the_runner_computes(found, queue, branches, rounding) -> None:
    feeds = make_inputs(branches.graph)
    want = branches.run(feeds)  # the runner's own launches, one after another
    fused = fuse(subkernels_for_graph_ops(branches), found.limits.wave_size, round_to_wave=rounding)
    for t in branches.graph.outputs:
        cl.enqueue_fill_buffer(queue, branches.buffers[t], np.float32(np.nan), 0, want[t].nbytes)
    for name, arr in feeds.items():
        cl.enqueue_copy(queue, branches.buffers[name], arr)
    events = enqueue_launches(queue, [ready_fused(found, fused)])
    for t in branches.graph.outputs:
        got = np.empty_like(want[t])
        cl.enqueue_copy(queue, got, branches.buffers[t])
        queue.finish()
        np.testing.assert_array_equal(got, want[t], err_msg=t)
    assert device_span_ms(events) > 0


def test_sequential_launches_are_timed_by_their_events(found, queue, branches) -> None:
    ready = [ready_subkernel(found, s) for s in subkernels_for_graph_ops(branches)]
    events = enqueue_launches(queue, ready)
    queue.finish()
    assert len(events) == 2
    assert device_span_ms(events) >= sum((e.profile.end - e.profile.start) / 1e6 for e in events) * 0.999
    assert device_span_ms([]) == 0.0


def test_dependent_kernels_are_refused(found) -> None:
    b = GraphBuilder("chain", (1, 4, 9, 11))
    graph = b.build(b.max_pool(b.conv(b.input, 6, 1, name="pw"), 3, stride=2, name="pool"))
    runner = GraphRunner(found, graph)
    try:
        with pytest.raises(FusionError, match="pw writes a buffer that pool uses"):
            fuse(subkernels_for_graph_ops(runner), found.limits.wave_size)
    finally:
        runner.release()
