"""SE-ResNet-50 as the SENet authors released it (Caffe), in the layout of Cadene's
``pretrainedmodels/models/senet.py`` (``SEResNetBottleneck``): the stride sits on the first 1x1
convolution, the stem max pool uses ceil mode, and the SE module is two biased 1x1 convolutions
with reduction 16 and a sigmoid gate.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, squeeze_excite
from devicelab.graph.zoo.registry import register


def se_resnet(name: str, layers: tuple[int, int, int, int], reduction: int = 16, num_classes: int = 1000) -> Graph:
    """SE-ResNet with bottleneck blocks (expansion 4) and ``layers`` blocks per stage."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    with b.scope("layer0"):
        x = b.relu(b.bn(b.conv(b.input, 64, 7, 2, pad=3)))
        x = b.max_pool(x, 3, 2, ceil_mode=True)
    for s, (planes, blocks) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
        for i in range(blocks):
            stride = 2 if i == 0 and s > 0 else 1
            with b.scope(f"layer{s + 1}/block{i}"):
                y = conv_bn_act(b, x, planes, 1, stride, act="relu")  # SENet puts the stride here
                y = conv_bn_act(b, y, planes, 3, act="relu")
                y = conv_bn_act(b, y, planes * 4, 1)
                y = squeeze_excite(b, y, planes * 4 // reduction, "relu", "sigmoid")
                shortcut = x
                if i == 0:
                    shortcut = conv_bn_act(b, x, planes * 4, 1, stride)
                x = b.relu(b.add(y, shortcut))
    x = b.flatten(b.avg_pool(x, 7, 1))  # AvgPool2d(7, stride=1) on the 7x7 map
    return b.build(b.fc(x, num_classes, name="last_linear"))


@register(
    "se_resnet50",
    "se_resnet",
    (1, 3, 224, 224),
    params=28_088_024,
    macs=3_870_000_000,
    source="params: pretrainedmodels se_resnet50 (28,088,024, = timm seresnet50); "
    "MACs: SENet paper (Hu et al., CVPR 2018) Table 2, SE-ResNet-50 3.87 GFLOPs",
)
def se_resnet50() -> Graph:
    """SE-ResNet-50: bottleneck blocks (3, 4, 6, 3)."""
    return se_resnet("se_resnet50", (3, 4, 6, 3))
