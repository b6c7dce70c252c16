"""MobileNet-V2 (Sandler et al. 2018) as torchvision builds it, at width 1.0, 0.5 and 1.4.

The backbone builder is shared with the mobile DeepLab-V3 in ``deeplab_v3.py``, which needs
TensorFlow padding and atrous (dilated) depthwise convolutions past its output stride.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder, Padding
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, dw_bn_act, make_divisible
from devicelab.graph.zoo.registry import register

# (expansion t, output channels c, repeats n, first stride s): Table 2 of the paper.
INVERTED_RESIDUAL_SETTING = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def inverted_residual(
    b: GraphBuilder,
    x: str,
    out_channels: int,
    stride: int,
    expand: int,
    kernel: int = 3,
    dilation: int = 1,
    act: str = "relu6",
    pad: Padding = "same",
) -> str:
    """Expand 1x1, depthwise kxk, linear project 1x1; a skip when shapes allow it."""
    inp = b.channels(x)
    hidden = int(round(inp * expand))
    y = x
    if expand != 1:
        y = conv_bn_act(b, y, hidden, 1, act=act, pad=pad)
    y = dw_bn_act(b, y, kernel, stride=stride, dilation=dilation, act=act, pad=pad)
    y = conv_bn_act(b, y, out_channels, 1, act=None, pad=pad)
    if stride == 1 and inp == out_channels:
        y = b.add(x, y)
    return y


def mobilenet_v2_features(
    b: GraphBuilder,
    x: str,
    width: float = 1.0,
    output_stride: int | None = None,
    pad: Padding = "same",
    final_conv: bool = True,
) -> str:
    """Stem, the 17 inverted residual blocks and (optionally) the last 1x1 convolution.

    With ``output_stride`` the stride that would pass it is dropped and later depthwise
    convolutions are dilated instead, the way TF-slim's ``mobilenet_base`` does it for DeepLab.
    """
    stride_so_far, rate = 2, 1
    with b.scope("stem"):
        x = conv_bn_act(b, x, make_divisible(32 * width), 3, stride=2, act="relu6", pad=pad)
    block = 0
    for t, c, n, s in INVERTED_RESIDUAL_SETTING:
        out = make_divisible(c * width)
        for i in range(n):
            stride = s if i == 0 else 1
            layer_rate = rate
            if output_stride is not None and stride > 1 and stride_so_far >= output_stride:
                # Past the output stride: keep the resolution and dilate from the next layer on.
                layer_rate, rate, stride = rate, rate * stride, 1
            stride_so_far *= stride
            with b.scope(f"block{block}"):
                x = inverted_residual(b, x, out, stride, t, dilation=layer_rate, pad=pad)
            block += 1
    if final_conv:
        with b.scope("head"):
            # The last layer is never narrowed below 1280 (Section 6.1 of the paper).
            x = conv_bn_act(b, x, make_divisible(1280 * max(1.0, width)), 1, act="relu6", pad=pad)
    return x


def build_mobilenet_v2(name: str, width: float = 1.0, resolution: int = 224) -> Graph:
    """MobileNet-V2 classifier at a width multiplier (torchvision ``mobilenet_v2(width_mult=...)``)."""
    b = GraphBuilder(name, (1, 3, resolution, resolution))
    x = mobilenet_v2_features(b, b.input, width)
    return b.build(b.classifier(x, 1000))


_TV = "torchvision mobilenet_v2 (MobileNet_V2_Weights.IMAGENET1K_V1 meta: num_params, _ops in GMACs)"
_SLIM = "TF-slim research/slim/nets/mobilenet/README.md (Million MACs / Million Parameters)"


@register(
    "mobilenet_v2",
    "mobilenet_v2",
    (1, 3, 224, 224),
    params=3_504_872,
    macs=301_000_000,
    source=_TV,
    table1=True,
    top1=71.878,
    top5=90.286,
    accuracy_source="torchvision MobileNet_V2_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def mobilenet_v2() -> Graph:
    """MobileNet-V2 1.0 at 224 (ParallelFusion Table 1)."""
    return build_mobilenet_v2("mobilenet_v2", 1.0)


@register(
    "mobilenet_v2_0.5",
    "mobilenet_v2",
    (1, 3, 224, 224),
    params=1_950_000,
    macs=97_000_000,
    source=_SLIM + ": mobilenet_v2_0.5_224",
    top1=65.4,
    top5=86.4,
    accuracy_source="TF-slim research/slim/nets/mobilenet/README.md: mobilenet_v2_0.5_224 Top 1 / Top 5 Accuracy",
)
def mobilenet_v2_050() -> Graph:
    """MobileNet-V2 0.5 at 224."""
    return build_mobilenet_v2("mobilenet_v2_0.5", 0.5)


@register(
    "mobilenet_v2_1.4",
    "mobilenet_v2",
    (1, 3, 224, 224),
    params=6_060_000,
    macs=582_000_000,
    source=_SLIM + ": mobilenet_v2_1.4_224",
    top1=75.0,
    top5=92.5,
    accuracy_source="TF-slim research/slim/nets/mobilenet/README.md: mobilenet_v2_1.4_224 Top 1 / Top 5 Accuracy",
)
def mobilenet_v2_140() -> Graph:
    """MobileNet-V2 1.4 at 224."""
    return build_mobilenet_v2("mobilenet_v2_1.4", 1.4)
