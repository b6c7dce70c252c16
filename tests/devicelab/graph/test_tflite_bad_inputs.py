"""Bad .tflite files: each gives a GraphError that says what and where, never a flatbuffers traceback."""

from __future__ import annotations

import importlib
import random

import flatbuffers
import numpy as np
import pytest

from devicelab.graph import GraphError, load_graph
from devicelab.graph.tflite import graph_from_tflite_bytes
from tests.devicelab.graph.test_tflite_import import mobilenet_like, se_model
from tests.devicelab.graph.tflite_writer import TFLiteWriter


def _error(data: bytes) -> GraphError:
    with pytest.raises(GraphError) as info:
        graph_from_tflite_bytes(data)
    return info.value


def test_empty_file():
    assert "empty" in str(_error(b""))


def test_too_short_file():
    assert "only 6 bytes" in str(_error(b"\x08\x00\x00\x00TF"))


def test_wrong_file_identifier():
    data = bytearray(mobilenet_like())
    data[4:8] = b"ONNX"
    err = _error(bytes(data))
    assert "file identifier" in err.reason and "TFL3" in err.reason


@pytest.mark.parametrize("fraction", [0.02, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
def test_truncated_file(fraction):
    data = mobilenet_like(with_weights=False)
    err = _error(data[: int(len(data) * fraction)])
    assert "corrupt or truncated" in err.reason


def test_every_truncation_of_a_small_model_is_a_graph_error():
    data = se_model(with_weights=False)
    for cut in range(8, len(data), 5):
        with pytest.raises(GraphError):
            graph_from_tflite_bytes(data[:cut])


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_with_the_tflite_identifier(seed):
    rng = random.Random(seed)
    data = bytearray(rng.randbytes(rng.randint(8, 5000)))
    data[4:8] = b"TFL3"
    if seed % 2:  # a root offset that points inside the file, so decoding goes further
        data[0:4] = rng.randrange(8, len(data)).to_bytes(4, "little")
    _error(bytes(data))


def test_corrupted_bytes_give_a_graph_or_a_graph_error():
    data = se_model(with_weights=False)
    rng = random.Random(7)
    errors = 0
    for _ in range(300):
        b = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        try:
            graph_from_tflite_bytes(bytes(b))  # a flip in a name or an unread byte still parses
        except GraphError:
            errors += 1
    assert errors > 100


def test_load_graph_reports_the_same_error():
    data = bytearray(mobilenet_like())
    with pytest.raises(GraphError, match="corrupt or truncated"):
        load_graph(bytes(data[:200]), filename="m.tflite")


def test_a_builtin_with_options_the_ir_cannot_express_is_still_refused():
    w = TFLiteWriter("sign")
    x = w.input("x", [1, 4, 4, 8])
    y = w.binary("ADD", x, x, act="SIGN_BIT", name="added")
    err = _error(w.to_bytes(outputs=[y]))
    assert (err.node, err.op) == ("added", "ADD") and "SIGN_BIT" in err.reason


def test_subgraph_with_no_operators():
    w = TFLiteWriter("empty")
    x = w.input("x", [1, 4, 4, 8])
    assert "no operators" in _error(w.to_bytes(outputs=[x])).reason


@pytest.mark.parametrize("field", ["signature", "shape"])
def test_dynamic_dimension_other_than_batch(field):
    w = TFLiteWriter("dyn")
    if field == "signature":
        x = w.input("image", [1, 1, 8, 3], signature=[1, -1, 8, 3])
    else:
        x = w.input("image", [1, 8, -1, 3])
    w.outputs = [w.unary("RELU", x, name="r")]
    err = _error(w.to_bytes())
    assert err.node == "image" and "dynamic dimension" in err.reason and "batch" in err.reason


def test_tensor_index_out_of_range():
    w = TFLiteWriter("oob")
    x = w.input("x", [1, 4, 4, 8])
    y = w.tensor("y", [1, 4, 4, 8])
    w.op("RELU", [x], [y])
    w.op("RELU", [y], [99])
    err = _error(w.to_bytes(outputs=[y]))
    assert "operator #1 refers to tensor 99" in err.reason


def test_conv_without_options():
    w = TFLiteWriter("noopts")
    x = w.input("x", [1, 4, 4, 8])
    f = w.const("f", [4, 3, 3, 8])
    y = w.tensor("y", [1, 4, 4, 4])
    w.op("CONV_2D", [x, f, -1], [y])
    err = _error(w.to_bytes(outputs=[y]))
    assert (err.node, err.op) == ("y", "CONV_2D") and "Conv2DOptions" in err.reason


def test_options_of_the_wrong_type():
    w = TFLiteWriter("wrong")
    x = w.input("x", [1, 4, 4, 8])
    f = w.const("f", [4, 3, 3, 8])
    y = w.tensor("y", [1, 4, 4, 4])
    w.op("CONV_2D", [x, f, -1], [y], ("Pool2DOptions", {"StrideW": 1, "StrideH": 1}))
    assert "carries Pool2DOptions" in _error(w.to_bytes(outputs=[y])).reason


def test_filter_computed_at_run_time():
    w = TFLiteWriter("runtime_filter")
    x = w.input("x", [1, 4, 4, 8])
    f = w.input("f", [4, 3, 3, 8])
    y = w.tensor("y", [1, 4, 4, 4])
    w.op("CONV_2D", [x, f, -1], [y], ("Conv2DOptions", {"StrideW": 1, "StrideH": 1}))
    err = _error(w.to_bytes(outputs=[y]))
    assert err.node == "y" and "filter is computed at run time" in err.reason


def test_sign_bit_fused_activation():
    w = TFLiteWriter("signbit")
    x = w.input("x", [1, 4, 4, 8])
    w.outputs = [w.conv2d(x, 4, 1, act="SIGN_BIT", name="c")]
    err = _error(w.to_bytes())
    assert err.node == "c" and "SIGN_BIT" in err.reason


def test_unsupported_tensor_type():
    w = TFLiteWriter("int16")
    x = w.input("x", [1, 4, 4, 8], dtype="int16")
    w.outputs = [w.unary("RELU", x, name="r")]
    err = _error(w.to_bytes())
    assert err.node == "x" and "INT16" in err.reason


def test_declared_shape_that_disagrees_with_the_operator():
    w = TFLiteWriter("badshape")
    x = w.input("x", [1, 8, 8, 4])
    y = w.conv2d(x, 4, 3, 2, "SAME", name="c")
    w.tensors[y].shape = [1, 5, 4, 4]  # SAME with stride 2 gives 4 x 4
    w.outputs = [y]
    err = _error(w.to_bytes())
    assert err.node == "c" and "declared" in err.reason


def test_vectors_shared_by_many_tables_cannot_make_decoding_quadratic():
    """3000 operator entries all point at one operator whose inputs vector has 3000 entries."""
    mod = {
        m: importlib.import_module(f"tflite.{m}")
        for m in ("Model", "SubGraph", "Operator", "Tensor", "OperatorCode", "Buffer")
    }
    n = 3000
    b = flatbuffers.Builder(1024)
    mod["OperatorCode"].OperatorCodeStart(b)
    mod["OperatorCode"].OperatorCodeAddDeprecatedBuiltinCode(b, 19)  # RELU
    code = mod["OperatorCode"].OperatorCodeEnd(b)
    mod["Buffer"].BufferStart(b)
    buf = mod["Buffer"].BufferEnd(b)
    shape = b.CreateNumpyVector(np.asarray([1, 4], np.int32))
    mod["Tensor"].TensorStart(b)
    mod["Tensor"].TensorAddShape(b, shape)
    tensor = mod["Tensor"].TensorEnd(b)
    ins = b.CreateNumpyVector(np.zeros(n, np.int32))
    outs = b.CreateNumpyVector(np.zeros(1, np.int32))
    mod["Operator"].OperatorStart(b)
    mod["Operator"].OperatorAddInputs(b, ins)
    mod["Operator"].OperatorAddOutputs(b, outs)
    op = mod["Operator"].OperatorEnd(b)

    def vec(start, items):
        start(b, len(items))
        for item in reversed(items):
            b.PrependUOffsetTRelative(item)
        return b.EndVector()

    ops = vec(mod["SubGraph"].SubGraphStartOperatorsVector, [op] * n)
    tensors = vec(mod["SubGraph"].SubGraphStartTensorsVector, [tensor])
    mod["SubGraph"].SubGraphStart(b)
    mod["SubGraph"].SubGraphAddTensors(b, tensors)
    mod["SubGraph"].SubGraphAddOperators(b, ops)
    sg = mod["SubGraph"].SubGraphEnd(b)
    codes = vec(mod["Model"].ModelStartOperatorCodesVector, [code])
    sgs = vec(mod["Model"].ModelStartSubgraphsVector, [sg])
    bufs = vec(mod["Model"].ModelStartBuffersVector, [buf])
    mod["Model"].ModelStart(b)
    mod["Model"].ModelAddVersion(b, 3)
    mod["Model"].ModelAddOperatorCodes(b, codes)
    mod["Model"].ModelAddSubgraphs(b, sgs)
    mod["Model"].ModelAddBuffers(b, bufs)
    b.Finish(mod["Model"].ModelEnd(b), file_identifier=b"TFL3")
    data = bytes(b.Output())
    assert len(data) < 30_000
    assert "overlap" in _error(data).reason
