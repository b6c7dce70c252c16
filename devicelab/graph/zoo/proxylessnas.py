"""ProxylessNAS (mobile), following the official mit-han-lab ``ProxylessNASNets`` and its
``proxyless_mobile.config`` (as transcribed in pytorchcv's ``proxylessnas.py``).

Searched "zero" layers with an identity shortcut are identities, so they add no operator.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act
from devicelab.graph.zoo.registry import register

_EPS = 1e-3  # the official nets call set_bn_param(momentum=0.1, eps=1e-3)

# Per stage: (output channels, kernel, expand ratio) per block; None is a searched zero layer.
_MOBILE: list[list[tuple[int, int, int] | None]] = [
    [(16, 3, 1)],
    [(32, 5, 3), (32, 3, 3), None, None],
    [(40, 7, 3), (40, 3, 3), (40, 5, 3), (40, 5, 3)],
    [(80, 7, 6), (80, 5, 3), (80, 5, 3), (80, 5, 3), (96, 5, 6), (96, 5, 3), (96, 5, 3), (96, 5, 3)],
    [(192, 7, 6), (192, 7, 6), (192, 7, 3), (192, 7, 3), (320, 7, 6)],
]


def proxylessnas(
    name: str, stages: list[list[tuple[int, int, int] | None]], first: int, last: int, num_classes: int = 1000
) -> Graph:
    """ProxylessNASNets: 3x3 stem, MBConv blocks (ReLU6), 1x1 feature mix, pool, linear."""
    b = GraphBuilder(name, (1, 3, 224, 224))
    x = conv_bn_act(b, b.input, first, 3, 2, act="relu6", eps=_EPS)
    for s, blocks in enumerate(stages):
        for i, block in enumerate(blocks):
            if block is None:
                continue
            cout, kernel, expand = block
            stride = 2 if i == 0 and s > 0 else 1
            cin = b.channels(x)
            with b.scope(f"stage{s + 1}/block{i + 1}"):
                mid = round(cin * expand)
                y = x if expand == 1 else conv_bn_act(b, x, mid, 1, act="relu6", eps=_EPS)
                y = conv_bn_act(b, y, mid, kernel, stride, groups=mid, act="relu6", eps=_EPS)
                y = conv_bn_act(b, y, cout, 1, eps=_EPS)
                # the config's identity shortcuts sit exactly where the shapes match
                if stride == 1 and cin == cout:
                    y = b.add(y, x)
            x = y
    x = conv_bn_act(b, x, last, 1, act="relu6", eps=_EPS)
    x = b.flatten(b.global_avg_pool(x))
    return b.build(b.fc(x, num_classes))


@register(
    "proxylessnas_mobile",
    "proxylessnas",
    (1, 3, 224, 224),
    params=4_080_512,
    macs=None,
    source="pytorchcv proxylessnas_mobile (weights from mit-han-lab/proxylessnas): 4,080,512 params; "
    "the paper and the official README give 4.1M. pytorchcv's 332.46M 'FLOPs/2' also counts "
    "element-wise work, so no MACs reference is held",
)
def proxylessnas_mobile() -> Graph:
    """ProxylessNAS searched for the Pixel 1 phone (mobile)."""
    return proxylessnas("proxylessnas_mobile", _MOBILE, 32, 1280)
