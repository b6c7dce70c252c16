"""Fixtures for the sharing tests: the OpenCL backend tests' device (without an OpenCL platform
these tests skip), a tiny network whose steps cover what space-time batches and what it does not."""

from __future__ import annotations

import pytest

pytest.importorskip("pyopencl", reason="pyopencl is not installed")

from devicelab.graph.builder import GraphBuilder  # noqa: E402
from devicelab.graph.ir import Graph  # noqa: E402
from tests.devicelab.backends.opencl.conftest import found  # noqa: E402,F401  (the device fixture)


def tiny_network() -> Graph:
    """A strided 3x3 convolution (im2col), 1x1 convolutions (direct GEMM) with relu6 and without an
    activation, a depthwise convolution and an add (per tenant), a dilated 3x3 convolution, a
    global pool and a fully connected layer (a matrix-vector GEMM), on an odd-sized image."""
    b = GraphBuilder("tiny", (1, 3, 19, 17))
    x = b.relu(b.bn(b.conv(b.input, 8, 3, stride=2, pad=1)))
    y = b.relu6(b.bn(b.conv(x, 12, 1)))
    z = b.relu6(b.bn(b.dwconv(y, 3)))
    w = b.bn(b.conv(z, 12, 1))
    s = b.add(w, y)
    t = b.relu(b.bn(b.conv(s, 16, 3, pad="same", dilation=2)))
    return b.build(b.fc(b.flatten(b.global_avg_pool(t)), 10))


@pytest.fixture(scope="session")
def tiny() -> Graph:
    """The tiny network."""
    return tiny_network()
