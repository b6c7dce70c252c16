"""Zoo models written as TFLite (float32 and float16 weights) read back operator for operator and
run in LiteRT's interpreter with the IR's output shapes; a few compute what onnxruntime does. The
models are those that together hold every operator configuration of the zoo
(``tests/zoo_cover.py``); ``benchmarks/zoo_numerics.py`` exports and runs every zoo network."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from devicelab.graph import zoo
from devicelab.graph.onnx import graph_to_onnx_bytes
from devicelab.graph.tflite import graph_from_tflite_bytes, graph_to_tflite
from devicelab.graph.tflite.emit import to_nhwc
from tests.devicelab.graph.tflite_roundtrip import assert_reads_back, nhwc, random_feeds, run_litert
from tests.zoo_cover import representatives


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("name", representatives())
def test_zoo_model_reads_back_and_runs_in_litert(name: str, precision: str) -> None:
    graph = zoo.build(name)
    export = graph_to_tflite(graph, precision=precision)
    assert export.precision == precision
    assert_reads_back(graph, export, graph_from_tflite_bytes(export.data))
    outputs = run_litert(export.data, random_feeds(graph))
    assert [o.shape for o in outputs] == [tuple(to_nhwc(graph.tensors[t].shape)) for t in graph.outputs]
    assert all(np.isfinite(o).all() and np.abs(o).max() > 0 for o in outputs)


@pytest.mark.parametrize("name", ["mobilenet_v3_small", "googlenet", "shufflenet_v2_x0_5", "deeplab_v3_mnv2"])
def test_zoo_model_computes_what_onnxruntime_computes_with_the_same_weights(name: str) -> None:
    # Batch norms folded into convolutions, PyTorch's pads as PAD operators, ceil_mode pooling
    # and hard_sigmoid decomposed: all exact, so only float rounding separates the runtimes.
    graph = zoo.build(name)
    feeds = random_feeds(graph, seed=5)
    session = ort.InferenceSession(graph_to_onnx_bytes(graph, seed=7), providers=["CPUExecutionProvider"])
    expected = [nhwc(o) for o in session.run(None, feeds)]
    for precision, tol in (("fp32", 1e-4), ("fp16", 1e-2)):
        got = run_litert(graph_to_tflite(graph, precision=precision, seed=7).data, feeds)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=0, atol=tol * float(np.abs(e).max()))
