"""MobileNetV3 Large and Small, following torchvision's ``models/mobilenetv3.py`` layer for layer."""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act, make_divisible, squeeze_excite
from devicelab.graph.zoo.registry import register

# -- MobileNetV3 -----------------------------------------------------------------------------

# (input, kernel, expanded, output, use_se, activation, stride), torchvision's bneck_conf rows.
_LARGE = [
    (16, 3, 16, 16, False, "RE", 1),
    (16, 3, 64, 24, False, "RE", 2),
    (24, 3, 72, 24, False, "RE", 1),
    (24, 5, 72, 40, True, "RE", 2),
    (40, 5, 120, 40, True, "RE", 1),
    (40, 5, 120, 40, True, "RE", 1),
    (40, 3, 240, 80, False, "HS", 2),
    (80, 3, 200, 80, False, "HS", 1),
    (80, 3, 184, 80, False, "HS", 1),
    (80, 3, 184, 80, False, "HS", 1),
    (80, 3, 480, 112, True, "HS", 1),
    (112, 3, 672, 112, True, "HS", 1),
    (112, 5, 672, 160, True, "HS", 2),
    (160, 5, 960, 160, True, "HS", 1),
    (160, 5, 960, 160, True, "HS", 1),
]
_SMALL = [
    (16, 3, 16, 16, True, "RE", 2),
    (16, 3, 72, 24, False, "RE", 2),
    (24, 3, 88, 24, False, "RE", 1),
    (24, 5, 96, 40, True, "HS", 2),
    (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 120, 48, True, "HS", 1),
    (48, 5, 144, 48, True, "HS", 1),
    (48, 5, 288, 96, True, "HS", 2),
    (96, 5, 576, 96, True, "HS", 1),
    (96, 5, 576, 96, True, "HS", 1),
]
_EPS = 1e-3  # torchvision: partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)


def mobilenet_v3(
    name: str,
    setting: list[tuple[int, int, int, int, bool, str, int]],
    last_channel: int,
    width: float = 1.0,
    num_classes: int = 1000,
) -> Graph:
    """torchvision's MobileNetV3 for a block table, a classifier width and a width multiplier."""

    def adjust(channels: int) -> int:
        return make_divisible(channels * width, 8)

    b = GraphBuilder(name, (1, 3, 224, 224))
    x = conv_bn_act(b, b.input, adjust(setting[0][0]), 3, 2, act="hard_swish", eps=_EPS)
    for i, (cin, kernel, expanded, cout, use_se, activation, stride) in enumerate(setting):
        cin, expanded, cout = adjust(cin), adjust(expanded), adjust(cout)
        act = "hard_swish" if activation == "HS" else "relu"
        with b.scope(f"block{i + 1}"):
            y = x
            if expanded != cin:
                y = conv_bn_act(b, y, expanded, 1, act=act, eps=_EPS)
            y = conv_bn_act(b, y, expanded, kernel, stride, groups=expanded, act=act, eps=_EPS)
            if use_se:
                # torchvision: _make_divisible(expanded // 4, 8), hard sigmoid gate
                y = squeeze_excite(b, y, make_divisible(expanded // 4, 8), "relu", "hard_sigmoid")
            y = conv_bn_act(b, y, cout, 1, eps=_EPS)
            if stride == 1 and cin == cout:
                y = b.add(y, x)
        x = y
    x = conv_bn_act(b, x, 6 * adjust(setting[-1][3]), 1, act="hard_swish", eps=_EPS)
    x = b.flatten(b.global_avg_pool(x))
    x = b.act(b.fc(x, adjust(last_channel)), "hard_swish")
    return b.build(b.fc(x, num_classes))  # dropout sits here in training; inference graphs omit it


_TV_MBV3 = "torchvision MobileNet_V3_{}_Weights.IMAGENET1K_V1 meta (num_params, _ops GMACs)"


@register(
    "mobilenet_v3_large",
    "mobilenet_v3",
    (1, 3, 224, 224),
    params=5_483_032,
    macs=217_000_000,
    source=_TV_MBV3.format("Large"),
    top1=74.042,
    top5=91.34,
    accuracy_source="torchvision MobileNet_V3_Large_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def mobilenet_v3_large() -> Graph:
    """torchvision mobilenet_v3_large (width 1.0)."""
    return mobilenet_v3("mobilenet_v3_large", _LARGE, 1280)


@register(
    "mobilenet_v3_small",
    "mobilenet_v3",
    (1, 3, 224, 224),
    params=2_542_856,
    macs=57_000_000,
    source=_TV_MBV3.format("Small"),
    top1=67.668,
    top5=87.402,
    accuracy_source="torchvision MobileNet_V3_Small_Weights.IMAGENET1K_V1 meta _metrics ImageNet-1K: acc@1, acc@5",
)
def mobilenet_v3_small() -> Graph:
    """torchvision mobilenet_v3_small (width 1.0)."""
    return mobilenet_v3("mobilenet_v3_small", _SMALL, 1024)
