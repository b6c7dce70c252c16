"""RegNetX-400MF and RegNetY-400MF, following torchvision's ``models/regnet.py``.

The per-stage widths and depths are derived from (depth, w_0, w_a, w_m, group width) exactly as
torchvision's ``BlockParams.from_init_params`` does, in float32 like its torch tensors, so the
quantized widths land on the same values.
"""

from __future__ import annotations

import math

import numpy as np

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, make_divisible, squeeze_excite
from devicelab.graph.zoo.registry import register


def regnet_stages(
    depth: int, w_0: int, w_a: float, w_m: float, group_width: int, bottleneck: float = 1.0
) -> list[tuple[int, int, int]]:
    """(width, depth, group width) per stage from RegNet's linear-then-quantized width rule."""
    quant = 8
    widths_cont = np.arange(depth, dtype=np.float32) * np.float32(w_a) + np.float32(w_0)
    capacity = np.round(np.log(widths_cont / np.float32(w_0)) / np.float32(math.log(w_m)))
    block_widths = np.round(np.float32(w_0) * np.power(np.float32(w_m), capacity) / quant) * quant
    block_widths_list = [int(w) for w in block_widths.astype(np.int32)]
    # a new stage starts wherever the width changes
    stage_widths: list[int] = []
    stage_depths: list[int] = []
    for w in block_widths_list:
        if stage_widths and stage_widths[-1] == w:
            stage_depths[-1] += 1
        else:
            stage_widths.append(w)
            stage_depths.append(1)
    # make the bottleneck widths divisible by the (possibly reduced) group width
    stages = []
    for w, d in zip(stage_widths, stage_depths, strict=True):
        w_bot = int(w * bottleneck)
        g = min(group_width, w_bot)
        stages.append((int(make_divisible(w_bot, g) / bottleneck), d, g))
    return stages


def regnet(
    name: str,
    stages: list[tuple[int, int, int]],
    se_ratio: float | None,
    stem_width: int = 32,
    bottleneck: float = 1.0,
    num_classes: int = 1000,
) -> Graph:
    """torchvision's RegNet trunk: simple stem, residual bottleneck stages, pool and fc."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    x = conv_bn_act(b, b.input, stem_width, 3, 2, act="relu")
    width_in = stem_width
    for s, (width_out, depth, group_width) in enumerate(stages):
        for i in range(depth):
            stride = 2 if i == 0 else 1
            w_in = width_in if i == 0 else width_out
            with b.scope(f"block{s + 1}-{i}"):
                w_b = int(round(width_out * bottleneck))
                y = conv_bn_act(b, x, w_b, 1, act="relu")
                y = conv_bn_act(b, y, w_b, 3, stride, groups=w_b // group_width, act="relu")
                if se_ratio:
                    # torchvision: the SE width is relative to the block's input width
                    y = squeeze_excite(b, y, int(round(se_ratio * w_in)), "relu", "sigmoid")
                y = conv_bn_act(b, y, width_out, 1)
                shortcut = x
                if w_in != width_out or stride != 1:
                    shortcut = conv_bn_act(b, x, width_out, 1, stride)
                x = b.relu(b.add(shortcut, y))
        width_in = width_out
    x = b.flatten(b.global_avg_pool(x))
    return b.build(b.fc(x, num_classes))


_TV_REGNET = "torchvision RegNet_{}_400MF_Weights.IMAGENET1K_V1 meta (num_params, _ops GMACs)"


@register(
    "regnetx_400mf",
    "regnet",
    (1, 3, 224, 224),
    params=5_495_976,
    macs=414_000_000,
    source=_TV_REGNET.format("X"),
    top1=72.834,
    top5=90.95,
    accuracy_source="torchvision RegNet_X_400MF_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def regnetx_400mf() -> Graph:
    """torchvision regnet_x_400mf: depth 22, w_0 24, w_a 24.48, w_m 2.54, group width 16."""
    return regnet("regnetx_400mf", regnet_stages(22, 24, 24.48, 2.54, 16), None)


@register(
    "regnety_400mf",
    "regnet",
    (1, 3, 224, 224),
    params=4_344_144,
    macs=402_000_000,
    source=_TV_REGNET.format("Y"),
    top1=74.046,
    top5=91.716,
    accuracy_source="torchvision RegNet_Y_400MF_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def regnety_400mf() -> Graph:
    """torchvision regnet_y_400mf: depth 16, w_0 48, w_a 27.89, w_m 2.09, group width 8, SE 0.25."""
    return regnet("regnety_400mf", regnet_stages(16, 48, 27.89, 2.09, 8), 0.25)
