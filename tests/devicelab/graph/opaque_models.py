"""Two real .tflite files with operators outside the graph IR, written with the test writer:
a classifier ending in ARG_MAX (a common last operator) and a model with a custom operator."""

from __future__ import annotations

from tests.devicelab.graph.tflite_writer import TFLiteWriter


def argmax_model() -> bytes:
    """conv -> relu -> ARG_MAX over the channels (int64 indices): the graph output is the ARG_MAX's."""
    w = TFLiteWriter("argmax_net")
    x = w.input("image", [1, 16, 16, 3])
    y = w.conv2d(x, 8, 3, act="RELU", name="conv")
    axis = w.const("axis", [1], [3], dtype="int32")
    out = w.tensor("classes", [1, 16, 16], "int64")
    w.op("ARG_MAX", [y, axis], [out], ("ArgMaxOptions", {"OutputType": 4}))
    return w.to_bytes(outputs=[out])


def custom_op_model() -> bytes:
    """conv -> a custom operator ``MyLab_Upsample`` (two outputs) -> relu on its first output."""
    w = TFLiteWriter("custom_net")
    x = w.input("image", [1, 8, 8, 3])
    y = w.conv2d(x, 4, 3, name="conv")
    up = w.tensor("upsampled", [1, 16, 16, 4])
    mask = w.tensor("mask", [1, 16, 16], "int32")
    w.op("custom:MyLab_Upsample", [y], [up, mask])
    out = w.unary("RELU", up, name="head")
    return w.to_bytes(outputs=[out, mask])
