"""MobileNet-V1 (Howard et al. 2017) as TF-slim / Keras build it, at width 1.0, 0.5 and 0.25.

Table 1 of the paper: a 3x3 stem and 13 depthwise-separable blocks, each depthwise 3x3 and
pointwise 1x1 followed by batch norm and ReLU6; convolutions carry no bias. TensorFlow SAME
padding, since the released models (and ParallelFusion's copy of them) come from TensorFlow.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, dw_bn_act
from devicelab.graph.zoo.registry import register

# (pointwise output channels, depthwise stride) of the 13 separable blocks.
SEPARABLE_BLOCKS = (
    (64, 1),
    (128, 2),
    (128, 1),
    (256, 2),
    (256, 1),
    (512, 2),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (512, 1),
    (1024, 2),
    (1024, 1),
)


def build_mobilenet_v1(name: str, width: float = 1.0, resolution: int = 224) -> Graph:
    """MobileNet-V1 classifier; channel counts are ``int(c * width)`` as in Keras / TF-slim."""
    b = GraphBuilder(name, (1, 3, resolution, resolution))
    with b.scope("stem"):
        x = conv_bn_act(b, b.input, int(32 * width), 3, stride=2, act="relu6", pad="same_tf")
    for i, (c, s) in enumerate(SEPARABLE_BLOCKS):
        with b.scope(f"block{i}"):
            x = dw_bn_act(b, x, 3, stride=s, act="relu6", pad="same_tf")
            x = conv_bn_act(b, x, int(c * width), 1, act="relu6", pad="same_tf")
    return b.build(b.classifier(x, 1000))


# TF-slim's table counts 1001 classes; the paper (Table 6/14) gives 4.2M / 569M Mult-Adds for 1.0.
_SLIM = "TF-slim research/slim/nets/mobilenet_v1.md (Million MACs / Million Parameters)"


@register(
    "mobilenet_v1",
    "mobilenet_v1",
    (1, 3, 224, 224),
    params=4_240_000,
    macs=569_000_000,
    source=_SLIM + ": MobileNet_v1_1.0_224 (paper: 4.2M params, 569M Mult-Adds)",
    table1=True,
    top1=70.9,
    top5=89.9,
    accuracy_source="TF-slim research/slim/nets/mobilenet_v1.md: MobileNet_v1_1.0_224 Top-1 / Top-5 Accuracy",
)
def mobilenet_v1() -> Graph:
    """MobileNet-V1 1.0 at 224 (ParallelFusion Table 1)."""
    return build_mobilenet_v1("mobilenet_v1", 1.0)


@register(
    "mobilenet_v1_0.5",
    "mobilenet_v1",
    (1, 3, 224, 224),
    params=1_340_000,
    macs=150_000_000,
    source=_SLIM + ": MobileNet_v1_0.50_224",
    top1=63.3,
    top5=84.9,
    accuracy_source="TF-slim research/slim/nets/mobilenet_v1.md: MobileNet_v1_0.50_224 Top-1 / Top-5 Accuracy",
)
def mobilenet_v1_050() -> Graph:
    """MobileNet-V1 0.5 at 224."""
    return build_mobilenet_v1("mobilenet_v1_0.5", 0.5)


@register(
    "mobilenet_v1_0.25",
    "mobilenet_v1",
    (1, 3, 224, 224),
    params=470_000,
    macs=41_000_000,
    source=_SLIM + ": MobileNet_v1_0.25_224",
    top1=49.8,
    top5=74.2,
    accuracy_source="TF-slim research/slim/nets/mobilenet_v1.md: MobileNet_v1_0.25_224 Top-1 / Top-5 Accuracy",
)
def mobilenet_v1_025() -> Graph:
    """MobileNet-V1 0.25 at 224."""
    return build_mobilenet_v1("mobilenet_v1_0.25", 0.25)
