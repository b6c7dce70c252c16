"""DenseNet-121, following torchvision's ``models/densenet.py`` (pre-activation dense layers)."""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.registry import register


def _bn_relu_conv(b: GraphBuilder, x: str, out_channels: int, kernel: int) -> str:
    """torchvision's norm -> relu -> conv (no bias) ordering inside dense and transition layers."""
    return b.conv(b.relu(b.bn(x)), out_channels, kernel)


def densenet(
    name: str, growth: int, block_config: tuple[int, ...], init_features: int, bn_size: int = 4, num_classes: int = 1000
) -> Graph:
    """torchvision's DenseNet for a growth rate, layers per block and stem width."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    x = b.relu(b.bn(b.conv(b.input, init_features, 7, 2, pad=3, name="conv0"), name="norm0"))
    x = b.max_pool(x, 3, 2, pad=1, name="pool0")
    for i, layers in enumerate(block_config):
        features = [x]
        for j in range(layers):
            with b.scope(f"denseblock{i + 1}/layer{j + 1}"):
                # each layer reads the concatenation of every earlier output in the block
                inp = features[0] if len(features) == 1 else b.concat(features)
                y = _bn_relu_conv(b, inp, bn_size * growth, 1)
                features.append(_bn_relu_conv(b, y, growth, 3))
        x = b.concat(features, name=f"denseblock{i + 1}/out")
        if i != len(block_config) - 1:
            with b.scope(f"transition{i + 1}"):
                x = b.avg_pool(_bn_relu_conv(b, x, b.channels(x) // 2, 1), 2, 2)
    x = b.relu(b.bn(x, name="norm5"))
    x = b.flatten(b.global_avg_pool(x))
    return b.build(b.fc(x, num_classes))


@register(
    "densenet121",
    "densenet",
    (1, 3, 224, 224),
    params=7_978_856,
    macs=2_834_000_000,
    source="torchvision DenseNet121_Weights.IMAGENET1K_V1 meta (num_params, _ops GMACs)",
    top1=74.434,
    top5=91.972,
    accuracy_source="torchvision DenseNet121_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def densenet121() -> Graph:
    """torchvision densenet121: growth 32, blocks (6, 12, 24, 16), 64 stem features."""
    return densenet("densenet121", 32, (6, 12, 24, 16), 64)
