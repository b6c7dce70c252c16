"""A GraphRunner on a private context: its queue, buffers and programs live there, it gives the
shared-context run's bits, and the program cache keeps the two contexts' programs apart."""

from __future__ import annotations

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.programs import PROGRAMS
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.measure.inputs import make_inputs


def small_net() -> Graph:
    """A convolution with batch norm and relu, a depthwise block with a residual add, a pool and
    a classifier: several kernels and programs."""
    b = GraphBuilder("private_ctx", (1, 3, 15, 13))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2, pad=1)))
    y = b.bn(b.conv(b.relu6(b.bn(b.dwconv(x, 3))), 8, 1))
    return b.build(b.classifier(b.add(x, y), 10))


def test_private_context_runs_the_shared_contexts_bits(found: FoundDevice) -> None:
    graph = small_net()
    shared = GraphRunner(found, graph, weight_seed=3)
    ctx = cl.Context([found.device])
    private = GraphRunner(found, graph, weight_seed=3, context=ctx)
    try:
        assert shared.ctx == context_for(found)
        assert private.ctx is ctx and private.ctx != shared.ctx
        assert private.queue.context == ctx
        assert all(buf.context == ctx for buf in private.buffers.values())
        assert all(launch.kernel.get_info(cl.kernel_info.CONTEXT) == ctx for launch in private.launches)
        assert private.load.programs_built == len(private.options)  # none came from the shared context
        feeds = make_inputs(shared.graph, seed=3)
        want, got = shared.run(feeds), private.run(feeds)
        assert list(got) == list(want)
        for name in want:
            assert got[name].dtype == want[name].dtype
            assert np.array_equal(got[name], want[name]), name  # bit for bit
            assert np.isfinite(got[name]).all() and np.abs(got[name]).sum() > 0
    finally:
        shared.release()
        private.release()
    again = GraphRunner(found, graph, context=ctx)  # the private context's programs are cached
    try:
        assert again.load.programs_built == 0
    finally:
        again.release()
    assert PROGRAMS.forget(ctx) == len(private.options)
    assert PROGRAMS.forget(ctx) == 0
