"""FBNet-C, following pytorchcv's ``fbnet_cb`` (itself ported from timm's ``fbnetc_100``).

Every block, including the expansion-1 block after the stem, has a 1x1 expansion convolution,
as in those references; activations are ReLU.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act
from devicelab.graph.zoo.registry import register

_EPS = 1e-3  # fbnet_cb is the bn_eps=1e-3 variant

# Per stage: (output channels, kernel, expansion) per block; each stage's first block has stride 2.
_FBNET_C = [
    [(24, 3, 6), (24, 3, 1), (24, 3, 1)],
    [(32, 5, 6), (32, 5, 3), (32, 5, 6), (32, 3, 6)],
    [(64, 5, 6), (64, 5, 3), (64, 5, 6), (64, 5, 6), (112, 5, 6), (112, 5, 6), (112, 5, 6), (112, 5, 3)],
    [(184, 5, 6), (184, 5, 6), (184, 5, 6), (184, 5, 6), (352, 3, 6)],
]


def _unit(b: GraphBuilder, x: str, cout: int, kernel: int, stride: int, expand: int) -> str:
    """FBNetUnit: 1x1 expand (ReLU), depthwise k x k (ReLU), 1x1 project, residual when shapes match."""
    cin = b.channels(x)
    mid = cin * expand
    y = conv_bn_act(b, x, mid, 1, act="relu", eps=_EPS)
    y = conv_bn_act(b, y, mid, kernel, stride, groups=mid, act="relu", eps=_EPS)
    y = conv_bn_act(b, y, cout, 1, eps=_EPS)
    return b.add(y, x) if cin == cout and stride == 1 else y


def fbnet(name: str, stages: list[list[tuple[int, int, int]]], first: int, last: int, num_classes: int = 1000) -> Graph:
    """FBNet: 3x3 stem and a k3/e1 unit, four searched stages, 1x1 head, 7x7 pool, linear."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    with b.scope("init_block"):
        x = conv_bn_act(b, b.input, first, 3, 2, act="relu", eps=_EPS)
        x = _unit(b, x, first, 3, 1, 1)
    for s, blocks in enumerate(stages):
        for i, (cout, kernel, expand) in enumerate(blocks):
            with b.scope(f"stage{s + 1}/unit{i + 1}"):
                x = _unit(b, x, cout, kernel, 2 if i == 0 else 1, expand)
    x = conv_bn_act(b, x, last, 1, act="relu", eps=_EPS)
    x = b.flatten(b.avg_pool(x, 7, 1))
    return b.build(b.fc(x, num_classes))


@register(
    "fbnet_c",
    "fbnet",
    (1, 3, 224, 224),
    params=5_572_200,
    macs=375_000_000,
    source="params: pytorchcv fbnet_cb (5,572,200); MACs: FBNet paper (Wu et al., CVPR 2019) "
    "Table 2, FBNet-C 375M FLOPs (multiply-adds)",
)
def fbnet_c() -> Graph:
    """FBNet-C: 16-channel stem, 1984-channel head."""
    return fbnet("fbnet_c", _FBNET_C, 16, 1984)
