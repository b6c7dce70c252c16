"""Building blocks that several zoo families share: channel rounding, conv-BN-act, SE."""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder, Padding


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of ``divisor``, never dropping more than 10%.

    The rule of torchvision's and TF-slim's MobileNets (``_make_divisible``).
    """
    min_value = divisor if min_value is None else min_value
    new = max(min_value, int(value + divisor / 2) // divisor * divisor)
    if new < 0.9 * value:
        new += divisor
    return new


def conv_bn_act(
    b: GraphBuilder,
    x: str,
    out_channels: int,
    kernel: int,
    stride: int = 1,
    groups: int = 1,
    act: str | None = None,
    eps: float = 1e-5,
    pad: Padding = "same",
) -> str:
    """Conv (no bias) + batch norm + optional activation, PyTorch padding ``(k - 1) // 2``.

    A convolution with one group per input channel is written as ``depthwise_conv2d`` (with a
    channel multiplier when it widens), which is how the IR and the latency predictors see it.
    """
    cin = b.channels(x)
    if groups > 1 and groups == cin and out_channels % cin == 0:
        y = b.dwconv(x, kernel, stride, pad=pad, multiplier=out_channels // cin)
    else:
        y = b.conv(x, out_channels, kernel, stride, pad=pad, groups=groups)
    y = b.bn(y, epsilon=eps)
    return b.act(y, act) if act else y


def dw_bn_act(
    b: GraphBuilder,
    x: str,
    kernel: int,
    stride: int = 1,
    dilation: int = 1,
    act: str | None = None,
    pad: Padding = "same",
) -> str:
    """Depthwise convolution without bias, batch norm, then an activation (or none)."""
    y = b.bn(b.dwconv(x, kernel, stride=stride, dilation=dilation, pad=pad, bias=False))
    return b.act(y, act) if act else y


def squeeze_excite(b: GraphBuilder, x: str, squeeze_channels: int, act: str = "relu", gate: str = "sigmoid") -> str:
    """Squeeze-and-excitation as torchvision writes it: pool, 1x1 conv (bias), act, 1x1 conv (bias), gate, scale."""
    channels = b.channels(x)
    with b.scope("se"):
        s = b.global_avg_pool(x)
        s = b.act(b.conv(s, squeeze_channels, 1, bias=True, name="fc1"), act)
        s = b.act(b.conv(s, channels, 1, bias=True, name="fc2"), gate)
        return b.mul(x, s)
