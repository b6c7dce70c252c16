"""Probe graphs: small networks profiled once per scenario to show the CPU runtime's fusions.

Profiling them (through the CPU backend, which runs ONNX Runtime) is the caller's job; this
module only builds them, so the server and the benchmark can list and recognize them without
loading a runtime.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph

PROBE_FOLLOWERS = (
    "relu",
    "relu6",
    "hard_swish",
    "hard_sigmoid",
    "sigmoid",
    "swish",
    "tanh",
    "gelu",
    "leaky_relu",
    "elu",
    "batch_norm",
    "add",
    "mul",
    "bn_relu",
    "add_relu",
)
PROBE_CHANNELS = (32, 36)  # one count aligned to every block size, one that is not


def probe_graphs(size: int = 14) -> list[Graph]:
    """Small graphs that show the runtime's fusions (nn-Meter's idea of test cases for fusion
    rules): for each anchor type, one branch per follower type, and behind each follower a 1x1
    convolution (a fully-connected layer for 2-D tensors) whose output is the graph output.

    The consumer matters: ONNX Runtime fuses a tensor into the kernel before it only when the
    tensor is not a graph output, so a follower must feed another operator, as inside a network
    (a HardSwish that is a graph output runs as HardSigmoid + Mul; inside MobileNet-V3 it is the
    activation of the convolution before it).

    Profiling them once per scenario lets ``learn_cpu_deducer`` see operator pairs a training
    set of NAS samples lacks (an ``add`` after a convolution, a ReLU after an ``add``); they
    teach rules only and are never latency training data.
    """
    graphs = []
    anchors = (
        "conv3x3",
        "conv1x1",
        "grouped_conv",
        "dwconv",
        "avg_pool",
        "max_pool",
        "add",
        "mul",
        "concat",
        "batch_norm",
        "global_avg_pool",
        "fc",
    )
    for c in PROBE_CHANNELS:
        for anchor_type in anchors:
            b = GraphBuilder(f"probe-{anchor_type}-{c}", (1, c, size, size))
            x = b.input
            outs = []
            for f in PROBE_FOLLOWERS:
                with b.scope(f):
                    if anchor_type == "conv3x3":
                        y = b.conv(x, c, 3)
                    elif anchor_type == "conv1x1":
                        y = b.conv(x, c, 1)
                    elif anchor_type == "grouped_conv":
                        y = b.conv(x, c, 3, groups=2 if c % 32 == 0 else 4)  # 16 or 9 channels a group
                    elif anchor_type == "dwconv":
                        y = b.dwconv(x, 3)
                    elif anchor_type == "avg_pool":
                        y = b.avg_pool(x, 3, 1, pad=1)
                    elif anchor_type == "max_pool":
                        y = b.max_pool(x, 3, 1, pad=1)
                    elif anchor_type in ("add", "mul"):
                        y = b.op(anchor_type, [b.conv(x, c, 1), b.conv(x, c, 1)])
                    elif anchor_type == "concat":
                        y = b.concat([b.conv(x, c // 2, 1), b.conv(x, c - c // 2, 1)])
                    elif anchor_type == "batch_norm":
                        y = b.bn(b.add(b.conv(x, c, 1), x))
                    elif anchor_type == "global_avg_pool":
                        y = b.global_avg_pool(b.conv(x, c, 1))
                    else:
                        y = b.fc(b.flatten(b.global_avg_pool(x)), c)
                    other = b.conv(x, c, 1) if b.shape(y) == b.shape(x) else y
                    if f == "bn_relu":
                        y = b.relu(b.bn(y))
                    elif f == "add_relu":
                        y = b.relu(b.add(y, other))
                    elif f in ("add", "mul"):
                        y = b.op(f, [y, other])
                    elif f == "batch_norm":
                        y = b.bn(y)
                    else:
                        y = b.act(y, f)
                    outs.append(b.conv(y, c, 1) if len(b.shape(y)) == 4 else b.fc(y, c))
            graphs.append(b.build(outs))
    return graphs


__all__ = ["PROBE_CHANNELS", "PROBE_FOLLOWERS", "probe_graphs"]
