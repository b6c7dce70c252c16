"""Inception-V3 (Szegedy et al. 2016) at 299x299, the inference graph without the auxiliary head.

The channel plan is the one torchvision's ``inception_v3`` and ``keras.applications.InceptionV3``
share: every convolution is bias-free and followed by batch norm (epsilon 1e-3) and ReLU. The
branch average pools exclude padding from the mean, as TensorFlow's SAME pooling does (Keras /
TF-slim; the Table-1 model is TensorFlow's), where torchvision's ``F.avg_pool2d`` would count it.
"""

from __future__ import annotations

from collections.abc import Sequence

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.registry import register

INPUT = (1, 3, 299, 299)


def _cbr(b: GraphBuilder, x: str, out: int, kernel: int | Sequence[int], stride: int = 1, pad: str = "same") -> str:
    """Conv (no bias), batch norm (eps 1e-3), ReLU: torchvision's ``BasicConv2d``."""
    return b.relu(b.bn(b.conv(x, out, kernel, stride=stride, pad=pad, bias=False), epsilon=1e-3))


def _pool_branch(b: GraphBuilder, x: str, out: int) -> str:
    return _cbr(b, b.avg_pool(x, 3, 1, pad=1, count_include_pad=False), out, 1)


def inception_a(b: GraphBuilder, x: str, pool_features: int) -> str:
    """35x35 module: 1x1, 5x5, double 3x3 and pool branches."""
    b1 = _cbr(b, x, 64, 1)
    b5 = _cbr(b, _cbr(b, x, 48, 1), 64, 5)
    b3 = _cbr(b, _cbr(b, _cbr(b, x, 64, 1), 96, 3), 96, 3)
    return b.concat([b1, b5, b3, _pool_branch(b, x, pool_features)])


def inception_b(b: GraphBuilder, x: str) -> str:
    """35 -> 17 grid reduction."""
    b3 = _cbr(b, x, 384, 3, 2, pad="valid")
    bd = _cbr(b, _cbr(b, _cbr(b, x, 64, 1), 96, 3), 96, 3, 2, pad="valid")
    return b.concat([b3, bd, b.max_pool(x, 3, 2)])


def inception_c(b: GraphBuilder, x: str, c7: int) -> str:
    """17x17 module with factorized 7x7 convolutions."""
    b1 = _cbr(b, x, 192, 1)
    b7 = _cbr(b, _cbr(b, _cbr(b, x, c7, 1), c7, (1, 7)), 192, (7, 1))
    bd = _cbr(b, x, c7, 1)
    for out, k in ((c7, (7, 1)), (c7, (1, 7)), (c7, (7, 1)), (192, (1, 7))):
        bd = _cbr(b, bd, out, k)
    return b.concat([b1, b7, bd, _pool_branch(b, x, 192)])


def inception_d(b: GraphBuilder, x: str) -> str:
    """17 -> 8 grid reduction."""
    b3 = _cbr(b, _cbr(b, x, 192, 1), 320, 3, 2, pad="valid")
    b7 = _cbr(b, _cbr(b, _cbr(b, x, 192, 1), 192, (1, 7)), 192, (7, 1))
    b7 = _cbr(b, b7, 192, 3, 2, pad="valid")
    return b.concat([b3, b7, b.max_pool(x, 3, 2)])


def inception_e(b: GraphBuilder, x: str) -> str:
    """8x8 module with expanded 1x3 / 3x1 filter banks."""
    b1 = _cbr(b, x, 320, 1)
    b3 = _cbr(b, x, 384, 1)
    b3 = b.concat([_cbr(b, b3, 384, (1, 3)), _cbr(b, b3, 384, (3, 1))])
    bd = _cbr(b, _cbr(b, x, 448, 1), 384, 3)
    bd = b.concat([_cbr(b, bd, 384, (1, 3)), _cbr(b, bd, 384, (3, 1))])
    return b.concat([b1, b3, bd, _pool_branch(b, x, 192)])


def build_inception_v3(name: str) -> Graph:
    """Inception-V3 classifier at 299x299."""
    b = GraphBuilder(name, INPUT)
    with b.scope("stem"):
        x = _cbr(b, b.input, 32, 3, 2, pad="valid")
        x = _cbr(b, x, 32, 3, pad="valid")
        x = _cbr(b, x, 64, 3)
        x = b.max_pool(x, 3, 2)
        x = _cbr(b, x, 80, 1, pad="valid")
        x = _cbr(b, x, 192, 3, pad="valid")
        x = b.max_pool(x, 3, 2)
    for i, pool_features in enumerate((32, 64, 64)):
        with b.scope(f"mixed_5{'bcd'[i]}"):
            x = inception_a(b, x, pool_features)
    with b.scope("mixed_6a"):
        x = inception_b(b, x)
    for i, c7 in enumerate((128, 160, 160, 192)):
        with b.scope(f"mixed_6{'bcde'[i]}"):
            x = inception_c(b, x, c7)
    with b.scope("mixed_7a"):
        x = inception_d(b, x)
    for tag in "bc":
        with b.scope(f"mixed_7{tag}"):
            x = inception_e(b, x)
    return b.build(b.classifier(x, 1000))


@register(
    "inception_v3",
    "inception",
    INPUT,
    params=23_851_784,
    macs=5_713_000_000,
    source="params: keras.applications.InceptionV3 (include_top, no aux head), 23,851,784 "
    "(table: 23.9M); MACs: torchvision Inception_V3_Weights meta _ops 5.713 GMACs (eval: aux head not run)",
    table1=True,
    top1=77.9,
    top5=93.7,
    accuracy_source="keras.io/api/applications table: InceptionV3 Top-1 / Top-5 Accuracy (the zoo's model is "
    "Keras' InceptionV3; torchvision's Inception_V3_Weights.IMAGENET1K_V1 publishes 77.294 / 93.450)",
)
def inception_v3() -> Graph:
    """Inception-V3 at 299 (ParallelFusion Table 1)."""
    return build_inception_v3("inception_v3")
