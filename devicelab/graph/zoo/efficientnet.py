"""EfficientNet B0 and B1, following torchvision's ``models/efficientnet.py`` (MBConv, SiLU, SE)."""

from __future__ import annotations

import math

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, make_divisible, squeeze_excite
from devicelab.graph.zoo.registry import register

# (expand_ratio, kernel, stride, input, output, layers), torchvision's bneck_conf rows for B0.
_STAGES = [
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
]


def efficientnet(name: str, width: float, depth: float, resolution: int, num_classes: int = 1000) -> Graph:
    """torchvision's EfficientNet (v1) for a width multiplier, depth multiplier and input size."""

    def adjust(channels: int) -> int:
        return make_divisible(channels * width, 8)

    b = GraphBuilder(name, (1, 3, resolution, resolution))
    x = conv_bn_act(b, b.input, adjust(_STAGES[0][3]), 3, 2, act="swish")
    for s, (expand, kernel, stride, cin, cout, layers) in enumerate(_STAGES):
        cin, cout = adjust(cin), adjust(cout)
        for i in range(int(math.ceil(layers * depth))):
            block_in, block_stride = (cin, stride) if i == 0 else (cout, 1)
            expanded = make_divisible(block_in * expand, 8)
            with b.scope(f"stage{s + 1}/block{i + 1}"):
                y = x
                if expanded != block_in:
                    y = conv_bn_act(b, y, expanded, 1, act="swish")
                y = conv_bn_act(b, y, expanded, kernel, block_stride, groups=expanded, act="swish")
                # torchvision: squeeze_channels = max(1, input_channels // 4), SiLU inside, sigmoid gate
                y = squeeze_excite(b, y, max(1, block_in // 4), "swish", "sigmoid")
                y = conv_bn_act(b, y, cout, 1)
                if block_stride == 1 and block_in == cout:
                    y = b.add(y, x)  # stochastic depth is training-only
            x = y
    x = conv_bn_act(b, x, 4 * adjust(_STAGES[-1][4]), 1, act="swish")
    x = b.flatten(b.global_avg_pool(x))
    return b.build(b.fc(x, num_classes))


_TV_EFF = "torchvision EfficientNet_{}_Weights.IMAGENET1K_V1 meta (num_params, _ops GMACs at {}px)"


@register(
    "efficientnet_b0",
    "efficientnet",
    (1, 3, 224, 224),
    params=5_288_548,
    macs=386_000_000,
    source=_TV_EFF.format("B0", 224),
    top1=77.692,
    top5=93.532,
    accuracy_source="torchvision EfficientNet_B0_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def efficientnet_b0() -> Graph:
    """torchvision efficientnet_b0 at 224x224."""
    return efficientnet("efficientnet_b0", 1.0, 1.0, 224)


@register(
    "efficientnet_b1",
    "efficientnet",
    (1, 3, 240, 240),
    params=7_794_184,
    macs=687_000_000,
    source=_TV_EFF.format("B1", 240),
    top1=78.642,
    top5=94.186,
    accuracy_source="torchvision EfficientNet_B1_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def efficientnet_b1() -> Graph:
    """torchvision efficientnet_b1 at its native 240x240."""
    return efficientnet("efficientnet_b1", 1.0, 1.1, 240)
