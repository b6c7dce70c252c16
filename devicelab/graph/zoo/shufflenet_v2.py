"""ShuffleNet-V2 (Ma et al. 2018) x1.0 and x0.5 as torchvision builds them.

A stride-1 unit splits the channels in half, transforms one half and concatenates; a stride-2
unit runs two branches on the whole input. Both end in a channel shuffle with two groups.
Convolutions are bias-free and followed by batch norm; the depthwise ones have no ReLU.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.registry import register

INPUT = (1, 3, 224, 224)
STAGE_REPEATS = (4, 8, 4)


def _conv_bn(b: GraphBuilder, x: str, out: int, relu: bool = True) -> str:
    y = b.bn(b.conv(x, out, 1, bias=False))
    return b.relu(y) if relu else y


def _dw_bn(b: GraphBuilder, x: str, stride: int) -> str:
    return b.bn(b.dwconv(x, 3, stride=stride, pad=1, bias=False))


def shuffle_unit(b: GraphBuilder, x: str, out: int, stride: int) -> str:
    """torchvision ``InvertedResidual`` of ShuffleNet-V2."""
    half = out // 2
    if stride == 1:
        keep, x2 = b.split(x, [b.channels(x) // 2, b.channels(x) - b.channels(x) // 2])
        right = _conv_bn(b, _dw_bn(b, _conv_bn(b, x2, half), 1), half)
        y = b.concat([keep, right])
    else:
        left = _conv_bn(b, _dw_bn(b, x, stride), half)
        right = _conv_bn(b, _dw_bn(b, _conv_bn(b, x, half), stride), half)
        y = b.concat([left, right])
    return b.shuffle(y, 2)


def build_shufflenet_v2(name: str, stage_out: tuple[int, int, int, int, int]) -> Graph:
    """ShuffleNet-V2 with torchvision's ``stages_out_channels``."""
    b = GraphBuilder(name, INPUT)
    with b.scope("stem"):
        x = b.relu(b.bn(b.conv(b.input, stage_out[0], 3, stride=2, pad=1, bias=False)))
        x = b.max_pool(x, 3, 2, pad=1)
    for stage, (repeats, out) in enumerate(zip(STAGE_REPEATS, stage_out[1:4], strict=True)):
        for i in range(repeats):
            with b.scope(f"stage{stage + 2}.{i}"):
                x = shuffle_unit(b, x, out, 2 if i == 0 else 1)
    with b.scope("conv5"):
        x = _conv_bn(b, x, stage_out[4])
    return b.build(b.classifier(x, 1000))


@register(
    "shufflenet_v2_x1_0",
    "shufflenet_v2",
    INPUT,
    params=2_278_604,
    macs=146_000_000,
    source="params: torchvision shufflenet_v2_x1_0 (ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1 "
    "num_params); MACs: ShuffleNet V2 paper Table 5, 146M FLOPs (multiply-adds)",
    top1=69.362,
    top5=88.316,
    accuracy_source="torchvision ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def shufflenet_v2_x1_0() -> Graph:
    """ShuffleNet-V2 1.0x."""
    return build_shufflenet_v2("shufflenet_v2_x1_0", (24, 116, 232, 464, 1024))


@register(
    "shufflenet_v2_x0_5",
    "shufflenet_v2",
    INPUT,
    params=1_366_792,
    macs=41_000_000,
    source="params: torchvision shufflenet_v2_x0_5 (ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1 "
    "num_params); MACs: ShuffleNet V2 paper Table 5, 41M FLOPs (multiply-adds)",
    top1=60.552,
    top5=81.746,
    accuracy_source="torchvision ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def shufflenet_v2_x0_5() -> Graph:
    """ShuffleNet-V2 0.5x."""
    return build_shufflenet_v2("shufflenet_v2_x0_5", (24, 48, 96, 192, 1024))
