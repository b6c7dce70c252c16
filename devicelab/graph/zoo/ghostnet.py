"""GhostNet 1.0x, following the official huawei-noah ``ghostnet_pytorch/ghostnet.py``."""

from __future__ import annotations

import math

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, make_divisible, squeeze_excite
from devicelab.graph.zoo.registry import register

# Per stage: (kernel, expansion size, output, SE ratio, stride) per bottleneck, the official cfgs.
_CFGS: list[list[tuple[int, int, int, float, int]]] = [
    [(3, 16, 16, 0, 1)],
    [(3, 48, 24, 0, 2)],
    [(3, 72, 24, 0, 1)],
    [(5, 72, 40, 0.25, 2)],
    [(5, 120, 40, 0.25, 1)],
    [(3, 240, 80, 0, 2)],
    [(3, 200, 80, 0, 1), (3, 184, 80, 0, 1), (3, 184, 80, 0, 1), (3, 480, 112, 0.25, 1), (3, 672, 112, 0.25, 1)],
    [(5, 672, 160, 0.25, 2)],
    [(5, 960, 160, 0, 1), (5, 960, 160, 0.25, 1), (5, 960, 160, 0, 1), (5, 960, 160, 0.25, 1)],
]


def _ghost_module(b: GraphBuilder, x: str, out: int, relu: bool, ratio: int = 2, dw_size: int = 3) -> str:
    """Primary 1x1 conv, cheap depthwise conv on its output, concat, keep the first ``out`` channels."""
    init = math.ceil(out / ratio)
    act = "relu" if relu else None
    with b.scope("ghost"):
        x1 = conv_bn_act(b, x, init, 1, act=act)
        x2 = conv_bn_act(b, x1, init * (ratio - 1), dw_size, groups=init, act=act)
        y = b.concat([x1, x2])
        if b.channels(y) != out:  # odd widths: the official code slices out[:, :oup]
            y = b.split(y, [out, b.channels(y) - out])[0]
        return y


def _bottleneck(b: GraphBuilder, x: str, mid: int, out: int, kernel: int, stride: int, se_ratio: float) -> str:
    """GhostBottleneck: ghost (ReLU), depthwise when strided, SE, ghost (linear), shortcut."""
    cin = b.channels(x)
    y = _ghost_module(b, x, mid, relu=True)
    if stride > 1:
        y = conv_bn_act(b, y, mid, kernel, stride, groups=mid)
    if se_ratio > 0:
        # official SqueezeExcite: _make_divisible(mid * ratio, 4), ReLU, hard sigmoid gate
        y = squeeze_excite(b, y, make_divisible(mid * se_ratio, 4), "relu", "hard_sigmoid")
    y = _ghost_module(b, y, out, relu=False)
    if cin == out and stride == 1:
        shortcut = x
    else:
        with b.scope("shortcut"):
            shortcut = conv_bn_act(b, x, cin, kernel, stride, groups=cin)
            shortcut = conv_bn_act(b, shortcut, out, 1)
    return b.add(y, shortcut)


def ghostnet(name: str, width: float = 1.0, num_classes: int = 1000) -> Graph:
    """The official GhostNet for a width multiplier."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    x = conv_bn_act(b, b.input, make_divisible(16 * width, 4), 3, 2, act="relu")
    exp_size = 0
    for s, cfg in enumerate(_CFGS):
        for i, (kernel, exp_size, c, se_ratio, stride) in enumerate(cfg):
            with b.scope(f"blocks{s}/{i}"):
                x = _bottleneck(
                    b, x, make_divisible(exp_size * width, 4), make_divisible(c * width, 4), kernel, stride, se_ratio
                )
    x = conv_bn_act(b, x, make_divisible(exp_size * width, 4), 1, act="relu")
    x = b.global_avg_pool(x)
    x = b.relu(b.conv(x, 1280, 1, bias=True, name="conv_head"))
    x = b.flatten(x)
    return b.build(b.fc(x, num_classes, name="classifier"))


@register(
    "ghostnet_1.0",
    "ghostnet",
    (1, 3, 224, 224),
    params=5_180_840,
    macs=141_000_000,
    source="params: pytorchcv ghostnet (5,180,840; the paper rounds to 5.2M); "
    "MACs: GhostNet paper (Han et al., CVPR 2020) Table 7, GhostNet 1.0x 141M FLOPs",
)
def ghostnet_1_0() -> Graph:
    """GhostNet at width 1.0."""
    return ghostnet("ghostnet_1.0")
