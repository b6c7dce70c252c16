"""Fixtures for the OpenCL backend tests: the first OpenCL device, and running one-operator graphs.

Without pyopencl or an OpenCL platform every test here is skipped (the runtime is missing, not
wrong); with them, a kernel that computes a wrong number fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

pytest.importorskip("pyopencl", reason="pyopencl is not installed")

from devicelab.backends.opencl import devices  # noqa: E402
from devicelab.backends.opencl.runner import GraphRunner  # noqa: E402
from devicelab.backends.opencl.tiling import KernelConfig  # noqa: E402
from devicelab.graph.builder import GraphBuilder  # noqa: E402
from devicelab.graph.ir import Graph  # noqa: E402
from devicelab.graph.onnx import operator_weights  # noqa: E402
from devicelab.measure.inputs import make_inputs  # noqa: E402


@pytest.fixture(scope="session")
def found() -> devices.FoundDevice:
    """The first OpenCL device of this machine (skips when there is none)."""
    try:
        all_devices = devices.list_devices()
    except Exception as e:  # no ICD / no platform
        pytest.skip(f"no OpenCL platform: {e}")
    if not all_devices:
        pytest.skip("no OpenCL device")
    return next(iter(all_devices.values()))


@dataclass
class SingleRun:
    """A graph run once on the device, with what a numpy reference needs."""

    graph: Graph
    inputs: dict[str, np.ndarray]
    weights: dict[str, dict[str, np.ndarray]]
    outputs: dict[str, np.ndarray]
    runner: GraphRunner

    @property
    def out(self) -> np.ndarray:
        """The graph's first output."""
        return self.outputs[self.graph.outputs[0]]

    @property
    def x(self) -> np.ndarray:
        """The graph's first input."""
        return self.inputs[self.graph.inputs[0]]


@pytest.fixture
def run_graph(found: devices.FoundDevice) -> Callable[[Graph], SingleRun]:
    """Run a graph once on the device with seeded inputs and the exporter's weights."""

    def run(graph: Graph, inputs: dict[str, np.ndarray] | None = None, config: KernelConfig | None = None) -> SingleRun:
        runner = GraphRunner(found, graph, config=config)
        feeds = inputs if inputs is not None else make_inputs(runner.graph)
        try:
            outputs = runner.run(feeds)
        finally:
            runner.release()
        return SingleRun(runner.graph, feeds, operator_weights(runner.graph), outputs, runner)

    return run


def one_op(
    input_shape: tuple[int, ...], build: Callable[[GraphBuilder, str], str | list[str]], name: str = "case"
) -> Graph:
    """A graph of the operators ``build`` adds to a builder with one input."""
    b = GraphBuilder(name, input_shape)
    out = build(b, b.input)
    return b.build(out)


def assert_close(got: np.ndarray, want: np.ndarray, rtol: float = 1e-4) -> None:
    """Same shape, and the largest difference small relative to the largest reference value."""
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    scale = max(float(np.abs(want).max()), 1e-6)
    err = float(np.abs(got.astype(np.float64) - want).max()) / scale
    assert err < rtol, f"relative error {err:.2e} >= {rtol:.0e}"
