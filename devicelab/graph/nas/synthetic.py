"""The synthetic NAS space of the latency paper (001, section 4.3.2 and Figure 12), as a sampler.

A network is a stem, 9 blocks in sequence (MobileNetV2's sequential layout) and a head. Each
block's kind is drawn uniformly from five:

1. ``conv``: a KxK convolution (K in 3/5/7), grouped with probability 1/2;
2. ``dwsep``: depthwise separable convolution (KxK depthwise, then 1x1 pointwise);
3. ``bottleneck``: MobileNetV2's linear bottleneck (K in 3/5/7, expansion 1/3/6), with a
   squeeze-and-excite with probability 1/2;
4. ``pool``: average or max pooling with a 1x1 or 3x3 window;
5. ``split``: a channel split into 2/3/4 pieces, one element-wise op on each, and a concat.

Choices the paper leaves open, and what we chose (all in the module constants below):

* Stem: conv 3x3 stride 2 to 32 channels + BN + ReLU6, as in MobileNetV2. The 9 blocks have the
  output channels C1..C9 of the paper; the head is MobileNetV2's: conv 1x1 to C10 + BN + ReLU6,
  global average pool, flatten, fully connected to the classes.
* Downsampling: blocks 2, 3, 5 and 7 have stride 2, so with the stem a 224x224 input ends at 7x7
  (a total stride of 32, as MobileNetV2). A conv or pooling block applies the stride itself, a
  dwsep or bottleneck block in its depthwise conv; a split block has no spatial operator, so at a
  stride-2 position it starts with a 3x3 stride-2 max pool (the usual pooling downsample).
* Channels: C1..C5 uniform in [8, 80], C6..C9 in [80, 400], C10 in [1200, 1800], each on a step
  of 4 (the stem has 32). The step keeps every channel count a multiple of 4, so a grouped conv
  with 4 channels per group always exists. Pool and split blocks keep their input's channels, so
  for them C_i is the input's count and their spec records no ``out_channels``.
* Grouped conv: "group size 4k, 1 <= k <= 16" is read as 4k input channels per group. k is drawn
  uniformly among the values for which 4k divides the input channels with at least 2 groups; the
  output channels are then drawn among the multiples of lcm(4, groups) in the block's range.
* Every conv is followed by BN and ReLU6 (MobileNetV2), except a bottleneck's last 1x1, which is
  linear; a bottleneck adds its input back when its stride is 1 and channels are unchanged. The
  squeeze-and-excite squeezes to max(8, hidden // 4) channels (MobileNetV3's ratio) and gates
  with a sigmoid (as Hu et al.).
* Split pieces are as equal as possible; each piece's op is drawn from ``SPLIT_OPS``.

A sample is a plain JSON-ready *spec* (``sample_specs``) that ``build`` turns into a ``Graph``,
so a NAS tool can store, edit and rebuild an architecture. Sample ``i`` of seed ``s`` is drawn
from its own generator, so ``sample(n, s)`` is a prefix of ``sample(n + m, s)``.
"""

from __future__ import annotations

import math
import random
from typing import Any

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph

SPACE = "synthetic"
KINDS = ("conv", "dwsep", "bottleneck", "pool", "split")
KERNELS = (3, 5, 7)
EXPANSIONS = (1, 3, 6)
POOL_TYPES = ("avg", "max")
POOL_WINDOWS = (1, 3)
SPLITS = (2, 3, 4)
SPLIT_OPS = ("relu", "relu6", "sigmoid", "tanh", "hard_swish", "swish")
GROUP_SIZES = tuple(4 * k for k in range(1, 17))
NUM_BLOCKS = 9
STRIDES = (1, 2, 2, 1, 2, 1, 2, 1, 1)
BLOCK_CHANNELS = ((8, 80),) * 5 + ((80, 400),) * 4
FINAL_CHANNELS = (1200, 1800)
CHANNEL_STEP = 4
STEM_CHANNELS = 32
INPUT_SIZE = 224
NUM_CLASSES = 1000

Spec = dict[str, Any]


def _channel_choices(lo: int, hi: int, multiple: int) -> list[int]:
    return [c for c in range(lo, hi + 1) if c % multiple == 0]


def _sample_block(rng: random.Random, index: int, cin: int) -> Spec:
    kind = rng.choice(KINDS)
    lo, hi = BLOCK_CHANNELS[index]
    block: Spec = {"kind": kind, "stride": STRIDES[index]}
    if kind == "conv":
        block["kernel"] = rng.choice(KERNELS)
        block["group_size"] = None
        multiple = CHANNEL_STEP
        if rng.random() < 0.5:
            sizes = [g for g in GROUP_SIZES if cin % g == 0 and cin // g >= 2]
            if sizes:  # always true while channels are multiples of 4 and at least 8
                block["group_size"] = rng.choice(sizes)
                multiple = math.lcm(CHANNEL_STEP, cin // block["group_size"])
        block["out_channels"] = rng.choice(_channel_choices(lo, hi, multiple))
    elif kind == "dwsep":
        block["kernel"] = rng.choice(KERNELS)
        block["out_channels"] = rng.choice(_channel_choices(lo, hi, CHANNEL_STEP))
    elif kind == "bottleneck":
        block["kernel"] = rng.choice(KERNELS)
        block["expansion"] = rng.choice(EXPANSIONS)
        block["se"] = rng.random() < 0.5
        block["out_channels"] = rng.choice(_channel_choices(lo, hi, CHANNEL_STEP))
    elif kind == "pool":
        block["pool"] = rng.choice(POOL_TYPES)
        block["window"] = rng.choice(POOL_WINDOWS)
    else:
        splits = rng.choice(SPLITS)
        block["splits"] = splits
        block["ops"] = [rng.choice(SPLIT_OPS) for _ in range(splits)]
    return block


def sample_spec(seed: int, index: int, input_size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES) -> Spec:
    """The spec of sample ``index`` of ``seed``: reproducible, independent of how many are drawn."""
    # A string seed is hashed with SHA-512 by ``random``, so it is stable across runs and
    # Python versions (unlike ``hash()``), and each sample has its own stream.
    rng = random.Random(f"{SPACE}/{seed}/{index}")
    blocks: list[Spec] = []
    cin = STEM_CHANNELS
    for i in range(NUM_BLOCKS):
        block = _sample_block(rng, i, cin)
        blocks.append(block)
        cin = block.get("out_channels", cin)
    lo, hi = FINAL_CHANNELS
    return {
        "space": SPACE,
        "name": f"{SPACE}-{seed}-{index}",
        "input_size": input_size,
        "num_classes": num_classes,
        "stem_channels": STEM_CHANNELS,
        "blocks": blocks,
        "final_channels": rng.choice(_channel_choices(lo, hi, CHANNEL_STEP)),
    }


def sample_specs(n: int, seed: int, input_size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES) -> list[Spec]:
    """Specs of ``n`` architectures drawn uniformly from the space with ``seed``."""
    if not isinstance(n, int) or n < 0:
        raise GraphError(f"the number of samples must be a non-negative integer, got {n!r}")
    return [sample_spec(seed, i, input_size, num_classes) for i in range(n)]


def sample(n: int, seed: int, input_size: int = INPUT_SIZE, num_classes: int = NUM_CLASSES) -> list[Graph]:
    """``n`` graphs drawn uniformly from the space, named ``synthetic-<seed>-<i>``."""
    return [build(spec) for spec in sample_specs(n, seed, input_size, num_classes)]


# -- validation ----------------------------------------------------------------------------------


def _fail(reason: str, where: str | None = None) -> None:
    raise GraphError(reason, node=where)


def _get(d: Spec, key: str, where: str | None) -> Any:
    if key not in d:
        _fail(f"the spec has no {key!r}", where)
    return d[key]


def _int(
    d: Spec,
    key: str,
    where: str | None,
    choices: tuple[int, ...] | None = None,
    lo: int | None = None,
    hi: int | None = None,
) -> int:
    value = _get(d, key, where)
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(f"{key!r} must be an integer, got {value!r}", where)
    if choices is not None and value not in choices:
        _fail(f"{key!r} is {value}; the space allows {list(choices)}", where)
    if lo is not None and hi is not None and not lo <= value <= hi:
        _fail(f"{key!r} is {value}; the space allows [{lo}, {hi}]", where)
    return int(value)


def _check_keys(d: Spec, allowed: set[str], where: str | None) -> None:
    extra = sorted(set(d) - allowed)
    if extra:
        _fail(f"unknown spec keys {extra}; expected {sorted(allowed)}", where)


_BLOCK_KEYS = {
    "conv": {"kind", "stride", "kernel", "group_size", "out_channels"},
    "dwsep": {"kind", "stride", "kernel", "out_channels"},
    "bottleneck": {"kind", "stride", "kernel", "expansion", "se", "out_channels"},
    "pool": {"kind", "stride", "pool", "window"},
    "split": {"kind", "stride", "splits", "ops"},
}


# -- building ------------------------------------------------------------------------------------


def _conv_bn_act(
    b: GraphBuilder, x: str, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True
) -> str:
    y = b.bn(b.conv(x, cout, kernel, stride=stride, groups=groups, bias=False))
    return b.relu6(y) if act else y


def _build_block(b: GraphBuilder, x: str, block: Spec, index: int) -> str:
    where = f"block{index}"
    if not isinstance(block, dict):
        _fail(f"a block must be an object, got {block!r}", where)
    kind = _get(block, "kind", where)
    if kind not in KINDS:
        _fail(f"unknown block kind {kind!r}; the space has {list(KINDS)}", where)
    _check_keys(block, _BLOCK_KEYS[kind], where)
    stride = _int(block, "stride", where, choices=(1, 2))
    cin = b.channels(x)
    lo, hi = BLOCK_CHANNELS[index]
    if kind == "conv":
        kernel = _int(block, "kernel", where, choices=KERNELS)
        cout = _int(block, "out_channels", where, lo=lo, hi=hi)
        group_size = _get(block, "group_size", where)
        groups = 1
        if group_size is not None:
            group_size = _int(block, "group_size", where, choices=GROUP_SIZES)
            if cin % group_size:
                _fail(f"group_size {group_size} does not divide the {cin} input channels", where)
            groups = cin // group_size
            if cout % groups:
                _fail(f"out_channels {cout} is not divisible by the {groups} groups", where)
        return _conv_bn_act(b, x, cout, kernel, stride, groups)
    if kind == "dwsep":
        kernel = _int(block, "kernel", where, choices=KERNELS)
        cout = _int(block, "out_channels", where, lo=lo, hi=hi)
        y = b.relu6(b.bn(b.dwconv(x, kernel, stride=stride)))
        return _conv_bn_act(b, y, cout, 1)
    if kind == "bottleneck":
        kernel = _int(block, "kernel", where, choices=KERNELS)
        expansion = _int(block, "expansion", where, choices=EXPANSIONS)
        cout = _int(block, "out_channels", where, lo=lo, hi=hi)
        se = _get(block, "se", where)
        if not isinstance(se, bool):
            _fail(f"'se' must be true or false, got {se!r}", where)
        hidden = cin * expansion
        y = _conv_bn_act(b, x, hidden, 1) if expansion != 1 else x
        y = b.relu6(b.bn(b.dwconv(y, kernel, stride=stride)))
        if se:
            with b.scope("se"):
                s = b.global_avg_pool(y)
                s = b.relu(b.conv(s, max(8, hidden // 4), 1, bias=True))
                s = b.sigmoid(b.conv(s, hidden, 1, bias=True))
                y = b.mul(y, s)
        y = _conv_bn_act(b, y, cout, 1, act=False)
        return b.add(x, y) if stride == 1 and cin == cout else y
    if kind == "pool":
        pool = _get(block, "pool", where)
        if pool not in POOL_TYPES:
            _fail(f"'pool' is {pool!r}; the space allows {list(POOL_TYPES)}", where)
        window = _int(block, "window", where, choices=POOL_WINDOWS)
        pad = (window - 1) // 2
        if pool == "avg":
            return b.avg_pool(x, window, stride, pad=pad)
        return b.max_pool(x, window, stride, pad=pad)
    splits = _int(block, "splits", where, choices=SPLITS)
    ops = _get(block, "ops", where)
    if not isinstance(ops, list) or len(ops) != splits or any(op not in SPLIT_OPS for op in ops):
        _fail(f"'ops' must list {splits} element-wise ops from {list(SPLIT_OPS)}, got {ops!r}", where)
    if stride == 2:
        x = b.max_pool(x, 3, 2, pad=1, name="downsample")
    base, extra = divmod(cin, splits)
    sizes = [base + (1 if i < extra else 0) for i in range(splits)]
    pieces = b.split(x, sizes)
    return b.concat([b.act(p, op) for p, op in zip(pieces, ops, strict=True)])


def build(spec: Spec) -> Graph:
    """The graph of one architecture spec (as ``sample_specs`` gives); ``GraphError`` if invalid."""
    if not isinstance(spec, dict):
        _fail(f"a synthetic spec must be an object, got {type(spec).__name__}")
    _check_keys(spec, {"space", "name", "input_size", "num_classes", "stem_channels", "blocks", "final_channels"}, None)
    if spec.get("space", SPACE) != SPACE:
        _fail(f"'space' is {spec['space']!r}, expected {SPACE!r}")
    name = spec.get("name", SPACE)
    if not isinstance(name, str):
        _fail(f"'name' must be a string, got {name!r}")
    # 32 is the smallest size that survives the five stride-2 stages.
    input_size = _int(spec, "input_size", None, lo=32, hi=4096)
    num_classes = _int(spec, "num_classes", None, lo=1, hi=100_000)
    stem = _int(spec, "stem_channels", None, lo=1, hi=4096)
    final = _int(spec, "final_channels", None, lo=FINAL_CHANNELS[0], hi=FINAL_CHANNELS[1])
    blocks = _get(spec, "blocks", None)
    if not isinstance(blocks, list) or len(blocks) != NUM_BLOCKS:
        _fail(f"'blocks' must be a list of {NUM_BLOCKS} blocks")
    b = GraphBuilder(name, (1, 3, input_size, input_size))
    with b.scope("stem"):
        x = _conv_bn_act(b, b.input, stem, 3, stride=2)
    for i, block in enumerate(blocks):
        with b.scope(f"block{i}"):
            x = _build_block(b, x, block, i)
    with b.scope("head"):
        x = _conv_bn_act(b, x, final, 1)
        x = b.classifier(x, num_classes)
    return b.build(x)
