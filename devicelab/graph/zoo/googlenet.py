"""GoogLeNet (Inception-V1, Szegedy et al. 2015) as torchvision builds it, without aux heads.

torchvision details kept on purpose so the counts match its weights: bias-free convolutions
with batch norm (epsilon 1e-3), ceil-mode max pools, and a 3x3 (not 5x5) convolution in the
"5x5" branch, a long-standing quirk torchvision keeps for its pretrained weights.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.registry import register

INPUT = (1, 3, 224, 224)

# (ch1x1, ch3x3red, ch3x3, ch5x5red, ch5x5, pool_proj) per Inception module; ("pool", (k,)) is a
# kxk/2 ceil-mode max pool.
_PLAN: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("3a", (64, 96, 128, 16, 32, 32)),
    ("3b", (128, 128, 192, 32, 96, 64)),
    ("pool", (3,)),
    ("4a", (192, 96, 208, 16, 48, 64)),
    ("4b", (160, 112, 224, 24, 64, 64)),
    ("4c", (128, 128, 256, 24, 64, 64)),
    ("4d", (112, 144, 288, 32, 64, 64)),
    ("4e", (256, 160, 320, 32, 128, 128)),
    ("pool", (2,)),
    ("5a", (256, 160, 320, 32, 128, 128)),
    ("5b", (384, 192, 384, 48, 128, 128)),
)


def _cbr(b: GraphBuilder, x: str, out: int, kernel: int, stride: int = 1) -> str:
    """torchvision ``BasicConv2d``: conv (no bias), batch norm (eps 1e-3), ReLU."""
    return b.relu(b.bn(b.conv(x, out, kernel, stride=stride, pad=kernel // 2, bias=False), epsilon=1e-3))


def inception(b: GraphBuilder, x: str, c1: int, c3r: int, c3: int, c5r: int, c5: int, pool_proj: int) -> str:
    """One Inception module: four branches concatenated."""
    b1 = _cbr(b, x, c1, 1)
    b2 = _cbr(b, _cbr(b, x, c3r, 1), c3, 3)
    b3 = _cbr(b, _cbr(b, x, c5r, 1), c5, 3)  # 3x3, as in torchvision
    b4 = _cbr(b, b.max_pool(x, 3, 1, pad=1, ceil_mode=True), pool_proj, 1)
    return b.concat([b1, b2, b3, b4])


def build_googlenet(name: str) -> Graph:
    """GoogLeNet classifier at 224."""
    b = GraphBuilder(name, INPUT)
    with b.scope("stem"):
        x = _cbr(b, b.input, 64, 7, 2)
        x = b.max_pool(x, 3, 2, ceil_mode=True)
        x = _cbr(b, x, 64, 1)
        x = _cbr(b, x, 192, 3)
        x = b.max_pool(x, 3, 2, ceil_mode=True)
    for tag, numbers in _PLAN:
        if tag == "pool":
            x = b.max_pool(x, numbers[0], 2, ceil_mode=True)
        else:
            with b.scope(f"inception{tag}"):
                x = inception(b, x, *numbers)
    return b.build(b.classifier(x, 1000))


@register(
    "googlenet",
    "googlenet",
    INPUT,
    params=6_624_904,
    macs=1_498_000_000,
    source="torchvision googlenet (GoogLeNet_Weights.IMAGENET1K_V1: meta: num_params, _ops 1.498 GMACs)",
    top1=69.778,
    top5=89.53,
    accuracy_source="torchvision GoogLeNet_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def googlenet() -> Graph:
    """GoogLeNet (torchvision, aux heads dropped as in its pretrained inference model)."""
    return build_googlenet("googlenet")
