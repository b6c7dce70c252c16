"""MnasNet-B1 (Tan et al. 2019, without squeeze-excite) as torchvision builds it, at 1.0 and 0.5.

torchvision scales every stage depth, stem included, with ``_round_to_multiple_of(d * alpha, 8)``
(its model version 2); the last 1x1 convolution stays at 1280 channels.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, dw_bn_act
from devicelab.graph.zoo.mobilenet_v2 import inverted_residual
from devicelab.graph.zoo.registry import register

INPUT = (1, 3, 224, 224)
DEPTHS = (32, 16, 24, 40, 80, 96, 192, 320)
# (kernel, first stride, expansion, repeats) of the six stacks after the separable stem.
STACKS = ((3, 2, 3, 3), (5, 2, 3, 3), (5, 2, 6, 3), (3, 1, 6, 2), (5, 2, 6, 4), (3, 1, 6, 1))


def round_to_multiple_of(value: float, divisor: int = 8, round_up_bias: float = 0.9) -> int:
    """torchvision's ``_round_to_multiple_of``: nearest multiple, rounding up if it lost >10%."""
    new = max(divisor, int(value + divisor / 2) // divisor * divisor)
    return new if new >= round_up_bias * value else new + divisor


def build_mnasnet(name: str, alpha: float) -> Graph:
    """MnasNet classifier at a depth multiplier."""
    depths = [round_to_multiple_of(d * alpha) for d in DEPTHS]
    b = GraphBuilder(name, INPUT)
    with b.scope("stem"):
        x = conv_bn_act(b, b.input, depths[0], 3, stride=2, act="relu")
        x = dw_bn_act(b, x, 3, act="relu")
        x = conv_bn_act(b, x, depths[1], 1, act=None)
    for s, ((kernel, stride, expand, repeats), out) in enumerate(zip(STACKS, depths[2:], strict=True)):
        for i in range(repeats):
            with b.scope(f"stack{s}.{i}"):
                x = inverted_residual(b, x, out, stride if i == 0 else 1, expand, kernel=kernel, act="relu")
    with b.scope("head"):
        x = conv_bn_act(b, x, 1280, 1, act="relu")
    return b.build(b.classifier(x, 1000))


_TV = "torchvision {} (MNASNet{}_Weights.IMAGENET1K_V1 meta: num_params, _ops {} GMACs)"


@register(
    "mnasnet1_0",
    "mnasnet",
    INPUT,
    params=4_383_312,
    macs=314_000_000,
    source=_TV.format("mnasnet1_0", "1_0", "0.314"),
    top1=73.456,
    top5=91.51,
    accuracy_source="torchvision MNASNet1_0_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def mnasnet1_0() -> Graph:
    """MnasNet 1.0."""
    return build_mnasnet("mnasnet1_0", 1.0)


@register(
    "mnasnet0_5",
    "mnasnet",
    INPUT,
    params=2_218_512,
    macs=104_000_000,
    source=_TV.format("mnasnet0_5", "0_5", "0.104"),
    top1=67.734,
    top5=87.49,
    accuracy_source="torchvision MNASNet0_5_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def mnasnet0_5() -> Graph:
    """MnasNet 0.5."""
    return build_mnasnet("mnasnet0_5", 0.5)
