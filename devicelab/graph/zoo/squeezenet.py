"""SqueezeNet 1.0 and 1.1 (Iandola et al. 2016) as torchvision builds them.

Fire modules: a 1x1 squeeze, then 1x1 and 3x3 expands concatenated; every convolution has a
bias and a ReLU, and there is no batch norm. Max pools use ``ceil_mode`` as in torchvision.
The classifier is a 1x1 convolution to 1000 channels, ReLU, and a global average pool.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.registry import register

# Fire settings (squeeze, expand1x1, expand3x3), with "M" for a 3x3/2 ceil-mode max pool.
_FIRES_1_0: tuple[tuple[int, int, int] | str, ...] = (
    (16, 64, 64),
    (16, 64, 64),
    (32, 128, 128),
    "M",
    (32, 128, 128),
    (48, 192, 192),
    (48, 192, 192),
    (64, 256, 256),
    "M",
    (64, 256, 256),
)
_FIRES_1_1: tuple[tuple[int, int, int] | str, ...] = (
    (16, 64, 64),
    (16, 64, 64),
    "M",
    (32, 128, 128),
    (32, 128, 128),
    "M",
    (48, 192, 192),
    (48, 192, 192),
    (64, 256, 256),
    (64, 256, 256),
)


def fire(b: GraphBuilder, x: str, squeeze: int, e1: int, e3: int) -> str:
    """One Fire module."""
    s = b.relu(b.conv(x, squeeze, 1, bias=True))
    left = b.relu(b.conv(s, e1, 1, bias=True))
    right = b.relu(b.conv(s, e3, 3, pad=1, bias=True))
    return b.concat([left, right])


def build_squeezenet(name: str, version: str) -> Graph:
    """SqueezeNet ``"1_0"`` (7x7/2 stem, 96 channels) or ``"1_1"`` (3x3/2 stem, 64 channels)."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    if version == "1_0":
        x = b.relu(b.conv(b.input, 96, 7, stride=2, pad=0, bias=True))
        fires = _FIRES_1_0
    else:
        x = b.relu(b.conv(b.input, 64, 3, stride=2, pad=0, bias=True))
        fires = _FIRES_1_1
    x = b.max_pool(x, 3, 2, ceil_mode=True)
    for i, setting in enumerate(fires):
        if setting == "M":
            x = b.max_pool(x, 3, 2, ceil_mode=True)
            continue
        with b.scope(f"fire{i}"):
            x = fire(b, x, *setting)
    with b.scope("classifier"):
        x = b.relu(b.conv(x, 1000, 1, bias=True))
        x = b.flatten(b.global_avg_pool(x))
    return b.build(x)


_TV = "torchvision {} (SqueezeNet{}_Weights.IMAGENET1K_V1 meta: num_params, _ops in GMACs)"


@register(
    "squeezenet_1_0",
    "squeezenet",
    (1, 3, 224, 224),
    params=1_248_424,
    macs=819_000_000,
    source=_TV.format("squeezenet1_0", "1_0"),
    table1=True,
    top1=58.092,
    top5=80.42,
    accuracy_source="torchvision SqueezeNet1_0_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def squeezenet_1_0() -> Graph:
    """SqueezeNet 1.0 (ParallelFusion Table 1's SqueezeNet-V1)."""
    return build_squeezenet("squeezenet_1_0", "1_0")


@register(
    "squeezenet_1_1",
    "squeezenet",
    (1, 3, 224, 224),
    params=1_235_496,
    macs=349_000_000,
    source=_TV.format("squeezenet1_1", "1_1"),
    top1=58.178,
    top5=80.624,
    accuracy_source="torchvision SqueezeNet1_1_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def squeezenet_1_1() -> Graph:
    """SqueezeNet 1.1."""
    return build_squeezenet("squeezenet_1_1", "1_1")
