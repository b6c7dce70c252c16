"""Whole graphs on OpenCL compute what onnxruntime computes on the same weights and inputs: the zoo
networks that together hold every operator configuration of the zoo (``tests/zoo_cover.py``) and
12 samples of the synthetic NAS space, fp32, relative error under 1e-3 (the largest difference
over the largest reference value, per output). ``benchmarks/zoo_numerics.py`` checks every zoo
network and 50 NAS samples the same way."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.backends.opencl.runner import GraphRunner
from devicelab.backends.opencl.tiling import KernelConfig
from devicelab.graph import zoo
from devicelab.graph.ir import Graph
from devicelab.graph.nas import synthetic
from devicelab.graph.onnx import graph_to_onnx_bytes
from devicelab.measure.inputs import make_inputs
from tests.zoo_cover import representatives

ort = pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.slow
TOLERANCE = 1e-3
NAS_SAMPLES = 12


def _reference(graph: Graph, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(graph_to_onnx_bytes(graph, seed=0), options, providers=["CPUExecutionProvider"])
    return session.run(list(graph.outputs), feeds)


def _check(found, graph: Graph, config: KernelConfig | None = None) -> None:
    runner = GraphRunner(found, graph, config=config)
    try:
        feeds = make_inputs(runner.graph)
        got = runner.run(feeds)
    finally:
        runner.release()
    for name, want in zip(graph.outputs, _reference(graph, feeds), strict=True):
        assert got[name].shape == want.shape
        assert np.isfinite(want).all()
        err = float(np.abs(got[name].astype(np.float64) - want).max() / np.abs(want).max())
        assert err < TOLERANCE, f"{graph.name} output {name}: relative error {err:.2e}"


@pytest.mark.parametrize("name", representatives())
def test_zoo_model_matches_onnxruntime(found, name: str) -> None:
    _check(found, zoo.build(name))


@pytest.fixture(scope="module")
def nas_graphs() -> list[Graph]:
    return synthetic.sample(NAS_SAMPLES, seed=0)


@pytest.mark.parametrize("index", range(NAS_SAMPLES))
def test_synthetic_nas_sample_matches_onnxruntime(found, nas_graphs: list[Graph], index: int) -> None:
    _check(found, nas_graphs[index])


@pytest.mark.parametrize(
    "name,vector_width,ocb",
    [("mobilenet_v3_small", 4, 4), ("shufflenet_v2_x0_5", 8, 3), ("deeplab_v3_mnv2", 4, 8), ("squeezenet_1_1", 8, 8)],
)
def test_other_tilings_match_onnxruntime(found, name: str, vector_width: int, ocb: int) -> None:
    """Narrower vectors (what a GPU gets) must compute the same whole networks."""
    _check(
        found,
        zoo.build(name),
        KernelConfig(vector_width=vector_width, out_channels_per_item=ocb, conv_out_channels_per_item=ocb),
    )
