"""One small graph per kernel of the OpenCL backend's library, each planned as exactly one launch,
with odd shapes so that no work size is a multiple of a wave (rounding has something to do)."""

from __future__ import annotations

from collections.abc import Callable

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph


def _one(shape: tuple[int, ...], build: Callable[[GraphBuilder, str], str], name: str) -> Graph:
    b = GraphBuilder(name, shape)
    return b.build(build(b, b.input))


def _two(a: tuple[int, ...], b_shape: tuple[int, ...], op: str, name: str) -> Graph:
    b = GraphBuilder(name, a)
    other = b.add_input("other", b_shape)
    return b.build(b.op(op, [b.input, other], name=name))


CASES: dict[str, Callable[[], Graph]] = {
    "activation": lambda: _one((1, 3, 7, 9), lambda b, x: b.act(x, "hard_swish", name="act"), "activation"),
    "binary": lambda: _two((2, 3, 5, 7), (1, 3, 1, 7), "add", "binary"),
    "channel_shuffle": lambda: _one((1, 6, 5, 7), lambda b, x: b.shuffle(x, 3, name="shuffle"), "channel_shuffle"),
    "conv2d": lambda: _one((1, 3, 11, 13), lambda b, x: b.conv(x, 5, 3, stride=2, name="conv"), "conv2d"),
    "conv2d_1x1": lambda: _one((1, 5, 7, 9), lambda b, x: b.relu(b.conv(x, 6, 1, name="pw")), "conv2d_1x1"),
    "conv2d_flat": lambda: _one((1, 4, 9, 11), lambda b, x: b.conv(x, 5, 3, name="conv"), "conv2d_flat"),
    "copy_slice": lambda: _one((1, 3, 5, 7), lambda b, x: b.reshape(x, [1, 105], name="view"), "copy_slice"),
    "depthwise_conv2d": lambda: _one((1, 6, 13, 29), lambda b, x: b.dwconv(x, 3, stride=2, name="dw"), "dw"),
    "depthwise_conv2d_flat": lambda: _one((1, 6, 7, 7), lambda b, x: b.dwconv(x, 3, name="dw"), "dw_flat"),
    "fully_connected": lambda: _one((3, 37), lambda b, x: b.fc(x, 11, name="fc"), "fully_connected"),
    "global_pool": lambda: _one((2, 5, 7, 9), lambda b, x: b.global_avg_pool(x, name="gap"), "global_pool"),
    "matmul": lambda: _two((3, 5, 7), (7, 9), "matmul", "matmul"),
    "pad": lambda: _one(
        (1, 3, 5, 7), lambda b, x: b.op("pad", [x], name="pad", pads=[0, 0, 1, 2, 0, 0, 2, 1], value=0.5), "pad"
    ),
    "pool2d": lambda: _one((1, 4, 11, 13), lambda b, x: b.max_pool(x, 3, stride=2, name="pool"), "pool2d"),
    "reduce": lambda: _one(
        (2, 5, 7, 9), lambda b, x: b.op("reduce_mean", [x], name="red", axes=[2, 3], keepdims=True), "reduce"
    ),
    "resize": lambda: _one((1, 3, 5, 7), lambda b, x: b.resize(x, [9, 13], name="resize"), "resize"),
    "scale_shift": lambda: _one((1, 5, 7, 9), lambda b, x: b.bn(x, name="bn"), "scale_shift"),
    "softmax": lambda: _one((3, 17), lambda b, x: b.softmax(x, name="softmax"), "softmax"),
    "transpose": lambda: _one((2, 3, 5, 7), lambda b, x: b.op("transpose", [x], name="t", perm=[0, 2, 3, 1]), "t"),
}
