"""ResNets: torchvision's ResNet-18/34/50 and ResNeXt-50 (32x4d), and Keras's ResNet-50 V2.

The v1 networks follow torchvision (He et al. 2016, with the stride of a bottleneck on its 3x3
convolution, "v1.5"). ResNet-50 V2 is the pre-activation network (He et al., "Identity Mappings
in Deep Residual Networks") exactly as ``keras.applications.ResNet50V2`` builds it, which follows
TF-slim's ``resnet_v2_50``: a biased 7x7 stem without batch norm, BN-ReLU before each unit, the
stride on the *last* unit of each stage (its shortcut a 1x1 max pool), biased convolutions where
no batch norm follows, and a final BN-ReLU.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.registry import register

INPUT = (1, 3, 224, 224)


def _conv_bn(
    b: GraphBuilder, x: str, out: int, kernel: int, stride: int = 1, groups: int = 1, relu: bool = True
) -> str:
    y = b.bn(b.conv(x, out, kernel, stride=stride, pad=kernel // 2, groups=groups, bias=False))
    return b.relu(y) if relu else y


def basic_block(b: GraphBuilder, x: str, planes: int, stride: int) -> str:
    """Two 3x3 convolutions with a skip (ResNet-18/34)."""
    y = _conv_bn(b, x, planes, 3, stride)
    y = _conv_bn(b, y, planes, 3, relu=False)
    skip = x
    if stride != 1 or b.channels(x) != planes:
        skip = _conv_bn(b, x, planes, 1, stride, relu=False)
    return b.relu(b.add(y, skip))


def bottleneck(b: GraphBuilder, x: str, planes: int, stride: int, groups: int = 1, base_width: int = 64) -> str:
    """1x1 reduce, 3x3 (strided, grouped for ResNeXt), 1x1 expand x4, with a skip."""
    width = int(planes * (base_width / 64.0)) * groups
    y = _conv_bn(b, x, width, 1)
    y = _conv_bn(b, y, width, 3, stride, groups=groups)
    y = _conv_bn(b, y, planes * 4, 1, relu=False)
    skip = x
    if stride != 1 or b.channels(x) != planes * 4:
        skip = _conv_bn(b, x, planes * 4, 1, stride, relu=False)
    return b.relu(b.add(y, skip))


def build_resnet_v1(name: str, block: str, layers: tuple[int, ...], groups: int = 1, base_width: int = 64) -> Graph:
    """torchvision ``ResNet``: 7x7/2 stem, 3x3/2 max pool, four stages, average pool, FC."""
    b = GraphBuilder(name, INPUT)
    with b.scope("stem"):
        x = _conv_bn(b, b.input, 64, 7, 2)
        x = b.max_pool(x, 3, 2, pad=1)
    for stage, (planes, blocks) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
        for i in range(blocks):
            stride = 2 if stage > 0 and i == 0 else 1
            with b.scope(f"layer{stage + 1}.{i}"):
                if block == "basic":
                    x = basic_block(b, x, planes, stride)
                else:
                    x = bottleneck(b, x, planes, stride, groups, base_width)
    return b.build(b.classifier(x, 1000))


def preact_bottleneck(b: GraphBuilder, x: str, filters: int, stride: int, conv_shortcut: bool) -> str:
    """Keras ``block2``: BN-ReLU, then 1x1, 3x3 (strided), biased 1x1 x4; shortcut from the pre-activation."""
    preact = b.relu(b.bn(x, epsilon=1.001e-5))
    if conv_shortcut:
        skip = b.conv(preact, 4 * filters, 1, stride=stride, bias=True)
    elif stride > 1:
        skip = b.max_pool(x, 1, stride)
    else:
        skip = x
    y = b.relu(b.bn(b.conv(preact, filters, 1, bias=False), epsilon=1.001e-5))
    y = b.relu(b.bn(b.conv(y, filters, 3, stride=stride, pad=1, bias=False), epsilon=1.001e-5))
    y = b.conv(y, 4 * filters, 1, bias=True)
    return b.add(skip, y)


def build_resnet_v2(name: str, layers: tuple[int, ...]) -> Graph:
    """Keras ``ResNet50V2`` (``stack2``: the first unit projects, the last one strides)."""
    b = GraphBuilder(name, INPUT)
    with b.scope("stem"):
        x = b.conv(b.input, 64, 7, stride=2, pad=3, bias=True)
        x = b.max_pool(x, 3, 2, pad=1)
    for stage, (filters, blocks) in enumerate(zip((64, 128, 256, 512), layers, strict=True)):
        last_stride = 1 if stage == len(layers) - 1 else 2
        for i in range(blocks):
            with b.scope(f"conv{stage + 2}_block{i + 1}"):
                x = preact_bottleneck(b, x, filters, last_stride if i == blocks - 1 else 1, conv_shortcut=i == 0)
    x = b.relu(b.bn(x, epsilon=1.001e-5, name="post_bn"), name="post_relu")
    return b.build(b.classifier(x, 1000))


_TV = "torchvision {} ({}_Weights.IMAGENET1K_V1 meta: num_params, _ops in GMACs)"


@register(
    "resnet18",
    "resnet",
    INPUT,
    params=11_689_512,
    macs=1_814_000_000,
    source=_TV.format("resnet18", "ResNet18"),
    top1=69.758,
    top5=89.078,
    accuracy_source="torchvision ResNet18_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def resnet18() -> Graph:
    """ResNet-18."""
    return build_resnet_v1("resnet18", "basic", (2, 2, 2, 2))


@register(
    "resnet34",
    "resnet",
    INPUT,
    params=21_797_672,
    macs=3_664_000_000,
    source=_TV.format("resnet34", "ResNet34"),
    top1=73.314,
    top5=91.42,
    accuracy_source="torchvision ResNet34_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def resnet34() -> Graph:
    """ResNet-34."""
    return build_resnet_v1("resnet34", "basic", (3, 4, 6, 3))


@register(
    "resnet50",
    "resnet",
    INPUT,
    params=25_557_032,
    macs=4_089_000_000,
    source=_TV.format("resnet50", "ResNet50"),
    top1=76.13,
    top5=92.862,
    accuracy_source="torchvision ResNet50_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def resnet50() -> Graph:
    """ResNet-50 (v1.5, torchvision)."""
    return build_resnet_v1("resnet50", "bottleneck", (3, 4, 6, 3))


@register(
    "resnext50_32x4d",
    "resnet",
    INPUT,
    params=25_028_904,
    macs=4_230_000_000,
    source=_TV.format("resnext50_32x4d", "ResNeXt50_32X4D"),
    top1=77.618,
    top5=93.698,
    accuracy_source="torchvision ResNeXt50_32X4D_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def resnext50_32x4d() -> Graph:
    """ResNeXt-50 32x4d."""
    return build_resnet_v1("resnext50_32x4d", "bottleneck", (3, 4, 6, 3), groups=32, base_width=4)


@register(
    "resnet_v2_50",
    "resnet",
    INPUT,
    params=25_613_800,
    macs=None,
    source="keras.applications.ResNet50V2 model summary: 25,613,800 total (25,568,360 trainable + 45,440 "
    "BN moving statistics; applications table: 25.6M); no MACs published",
    table1=True,
    top1=76.0,
    top5=93.0,
    accuracy_source="keras.io/api/applications table: ResNet50V2 Top-1 / Top-5 Accuracy",
)
def resnet_v2_50() -> Graph:
    """ResNet-50 V2, pre-activation (ParallelFusion Table 1's ResNet-V2)."""
    return build_resnet_v2("resnet_v2_50", (3, 4, 6, 3))
