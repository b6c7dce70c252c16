"""Kernel deduction for the TFLite GPU delegate: fusion (Algorithm 3.1) and convolution kernel
selection (Algorithm 3.2) of the latency paper (001, sections 3.2 and 4.1), per GPU family.

The deduction runs on the graph the delegate would see, built from an IR graph the way the
TFLite converter writes it (``delegate_nodes``):

* a ``batch_norm`` right after a convolution or fully-connected layer (its sole reader) is
  folded into that layer's weights; any other ``batch_norm`` becomes a MUL and an ADD;
* an activation stays a node of its own: the converter fuses ReLU into the convolution, but
  the delegate splits a fused activation back into a node, and Algorithm 3.1 links it again;
* element-wise IR types the delegate has no single op for (swish, hard_sigmoid, gelu) are one
  linkable element-wise node each (their decompositions are element-wise chains as well).

Then ``merge_nodes`` is Algorithm 3.1, and each fused chain becomes one kernel whose kind is
chosen from its first node. Two of its rules follow the kernel names the qed phones recorded
(``../shared/data``) rather than the paper's text:

* a node links into its reader only once every other input of the reader is written (TFLite's
  ``IsReady``); a reader whose inputs all have one shape (a residual ADD) takes the producer of
  the input written *last*, whichever operand that is: in the ResNets' downsampling blocks the
  ADD and its ReLU went to the shortcut's 1x1 conv, launched after the main branch, on all six
  phones (``convolution_2d_11_linked_:_add_12_linked_:_relu_13`` in resnet10), while the IR's
  operand order puts the main branch first. A broadcasting reader (a squeeze-excitation MUL)
  still needs the chain as its first input;
* a Winograd kernel takes no linked nodes on Mali, PowerVR and Apple GPUs
  (``WINOGRAD_UNLINKED``): each such phone ran 170 Winograd kernels in the qed data and not one
  has a linked node; its activation or add runs as a kernel of its own (an element-wise kernel
  the qed files do not list). Adreno phones never chose Winograd there, so Adreno keeps the
  paper's rule.

Besides the paper's rules, two conversions are applied because the qed measurements show them on
every device:

* a 1x1 ``conv2d`` on a 1x1 input runs the ``fully_connected`` kernel (337 of 337 rows);
* an average pool whose window covers its whole unpadded input runs the ``mean`` kernel
  (12 of 12 rows);

and, on Apple GPUs only, TFLite's special kernel ``depthwise_conv_plus_1x1_conv`` takes a small
depthwise convolution (optionally followed by a ReLU) and the 1x1 convolution reading it
(``IsDepthwiseConvPlus1x1ConvSupported`` in TFLite's GPU selectors; 7 of 7 such pairs in the
qed data run it on both iPhones, and no other GPU does).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from devicelab.graph.ir import Graph
from devicelab.graph.ops import OPAQUE
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import op_kind, op_raw_features, raw_features
from devicelab.predict.kernels import Kernel

KIND = "tflite_gpu"
GPU_FAMILIES = ("adreno", "adreno6xx", "mali", "powervr", "apple", "amd", "other")

# Kernel labels as the TFLite GPU delegate names its kernels (what the qed data records).
KIND_LABEL = {
    "conv2d": "convolution_2d",
    "winograd": "convolution_winograd_4x4_6x6",
    "grouped_conv2d": "convolution_2d_grouped",
    "depthwise_conv2d": "depthwise_convolution",
    "dw_conv_plus_1x1": "depthwise_conv_plus_1x1_conv",
    "fully_connected": "fully_connected",
    "matmul": "batched_matmul",
    "mean": "mean",
    "pooling": "pooling_2d",
    "concat": "concat",
    "split": "split",
    "pad": "pad",
    "reshape": "reshape",
}
_LABEL_KIND = sorted(((lbl, kind) for kind, lbl in KIND_LABEL.items()), key=lambda p: -len(p[0]))

# The delegate's node type for each IR element-wise type (ReLU6 and leaky ReLU are its RELU op
# with a clip / slope; a clip from 0 is a ReLU too).
_ELEMENTWISE_LABEL = {
    "relu": "relu",
    "relu6": "relu",
    "leaky_relu": "relu",
    "clip": "relu",
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "hard_swish": "hard_swish",
    "hard_sigmoid": "hard_sigmoid",
    "swish": "swish",
    "gelu": "gelu",
    "elu": "elu",
    "add": "add",
    "sub": "sub",
    "mul": "mul",
    "div": "div",
    "batch_norm": "mul",  # a batch norm that cannot be folded: MUL then ADD
    "softmax": "softmax",
    "resize": "resize",
}
# Algorithm 3.1, ISLINKABLE (lines 24-26): activations and element-wise arithmetic.
LINKABLE = frozenset(
    {
        "relu",
        "sigmoid",
        "tanh",
        "hard_swish",
        "hard_sigmoid",
        "swish",
        "gelu",
        "elu",
        "copy",
        "add",
        "sub",
        "mul",
        "div",
        "exp",
        "log",
        "sqrt",
        "square",
        "abs",
        "neg",
        "pow",
        "equal",
        "greater",
        "less",
        "maximum",
        "minimum",
    }
)
_BN_FOLDERS = ("conv2d", "depthwise_conv2d", "fully_connected")
# GPU families whose Winograd kernels take no linked nodes (see the module docstring)
WINOGRAD_UNLINKED = frozenset({"mali", "powervr", "apple"})


def gpu_family(name: str) -> str:
    """The Algorithm 3.2 family of a GPU from its name ("Adreno 640" -> ``adreno6xx``)."""
    n = name.lower()
    if "adreno" in n:
        m = re.search(r"adreno\D*(\d{3})", n)
        return "adreno6xx" if m and 600 <= int(m.group(1)) < 700 else "adreno"
    if "mali" in n:
        return "mali"
    if "powervr" in n:
        return "powervr"
    if "apple" in n or "iphone" in n or "ipad" in n or re.search(r"\ba\d{1,2}\b", n):
        return "apple"
    if "amd" in n or "radeon" in n:
        return "amd"
    return "other"


def _check_family(family: str) -> str:
    if family not in GPU_FAMILIES:
        raise PredictorError(f"unknown GPU family {family!r}; the families are {list(GPU_FAMILIES)}")
    return family


# ---------------------------------------------------------------------------------------------
# Algorithm 3.2: convolution kernel selection


@dataclass(frozen=True)
class ConvInfo:
    """What Algorithm 3.2 reads of a convolution."""

    input_channels: int
    output_channels: int
    groups: int
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    output_hw: tuple[int, int]

    @classmethod
    def of(cls, attrs: dict[str, Any], input_shape: Sequence[int], output_shape: Sequence[int]) -> ConvInfo:
        """From a ``conv2d``'s canonical attrs and NCHW shapes."""
        dilation = attrs.get("dilation", [1, 1])
        return cls(
            int(input_shape[1]),
            int(attrs["out_channels"]),
            int(attrs.get("groups", 1)),
            (int(attrs["kernel"][0]), int(attrs["kernel"][1])),
            (int(attrs["stride"][0]), int(attrs["stride"][1])),
            (int(dilation[0]), int(dilation[1])),
            (int(output_shape[2]), int(output_shape[3])),
        )


def check_grouped_conv(family: str, info: ConvInfo) -> bool:
    """Algorithm 3.2 lines 6-11: the grouped-convolution kernel applies."""
    # The paper writes ``src_group_size = input_channel``; TFLite reads the weights' input
    # dimension, i.e. the channels of one group. The two agree on every grouped convolution of
    # the qed data, and the per-group count is what the kernel's layout needs.
    src_group_size = info.input_channels // info.groups
    dst_group_size = info.output_channels // info.groups
    return info.groups != 1 and src_group_size % 4 == 0 and dst_group_size % 4 == 0


def check_winograd(family: str, info: ConvInfo) -> bool:
    """Algorithm 3.2 lines 12-30: the Winograd 4x4-6x6 kernel applies."""
    if info.groups != 1 or info.kernel != (3, 3) or info.stride != (1, 1) or info.dilation != (1, 1):
        return False
    src_depth = math.ceil(info.input_channels / 4)
    dst_depth = math.ceil(info.output_channels / 4)
    adreno = family in ("adreno", "adreno6xx")  # an Adreno 6xx is an Adreno (line 17)
    if adreno:
        if src_depth < 32 or dst_depth < 32:
            return False
    elif family == "amd":
        if src_depth < 16 or dst_depth < 8:
            return False
    elif src_depth < 16 or dst_depth < 16:
        return False
    total_tiles = math.ceil(info.output_hw[0] / 4) * math.ceil(info.output_hw[1] / 4)
    if family == "adreno6xx":
        return total_tiles >= 128
    if adreno:
        return total_tiles >= 64
    return total_tiles >= 32


def select_conv_kernel(family: str, info: ConvInfo) -> str:
    """Algorithm 3.2 lines 1-5: ``grouped_conv2d``, ``winograd`` or ``conv2d``."""
    if check_grouped_conv(family, info):
        return "grouped_conv2d"
    if check_winograd(family, info):
        return "winograd"
    return "conv2d"


def anchor_kind(
    family: str,
    op_type: str,
    attrs: dict[str, Any],
    input_shapes: Sequence[Sequence[int]],
    output_shapes: Sequence[Sequence[int]],
) -> str:
    """The kernel kind the delegate picks for a chain that starts with this operator."""
    kind = op_kind(op_type, attrs, input_shapes)
    x = input_shapes[0]
    if op_type == "conv2d" and kind in ("conv2d", "grouped_conv2d"):
        if attrs["kernel"] == [1, 1] and len(x) == 4 and x[2] == 1 and x[3] == 1 and attrs.get("groups", 1) == 1:
            return "fully_connected"  # seen on every qed device: a 1x1 conv on a 1x1 input
        return select_conv_kernel(family, ConvInfo.of(attrs, x, output_shapes[0]))
    if op_type == "avg_pool2d" and attrs["kernel"] == [x[2], x[3]] and not any(attrs["pads"]):
        return "mean"  # a pool over the whole input runs the reduction kernel
    return kind


def dw_plus_1x1_supported(
    dw_attrs: dict[str, Any], dw_input: Sequence[int], conv_attrs: dict[str, Any], conv_input: Sequence[int]
) -> bool:
    """TFLite's ``IsDepthwiseConvPlus1x1ConvSupported``: a small depthwise conv and a small 1x1 conv.

    The limits are TFLite's for Apple GPUs in fp16, and the qed measurements (TFLite 2.9 era) bear
    them out on both iPhones: every pair inside them ran the special kernel and none outside. The
    depthwise conv's stride is not a limit (the kernel reads its input at ``X * stride``):
    fdmobilenet_wd4's stride-2 depthwise conv on 8 channels and its 8 -> 16 channel 1x1 conv ran
    ``depthwise_conv_plus_1x1_conv_3_4_5_linked_:_relu_6`` on both iPhones; the stride-2 pairs
    that did not (mobilenet_wd4, fdmobilenet_wd2, ghostnet) have a 1x1 conv to more than 16
    channels. Newer TFLite versions allow a larger 1x1 conv.
    """
    channels = int(dw_input[1])
    kh, kw = dw_attrs["kernel"]
    good_dw = dw_attrs.get("multiplier", 1) == 1 and dw_attrs.get("dilation", [1, 1]) == [1, 1]
    good_conv = (
        conv_attrs["kernel"] == [1, 1]
        and conv_attrs.get("dilation", [1, 1]) == [1, 1]
        and conv_attrs.get("groups", 1) == 1
        and conv_attrs["stride"] == [1, 1]
    )
    recommended_dw = channels <= 16 and channels * kh * kw <= 3 * 3 * 16
    cout = int(conv_attrs["out_channels"])
    recommended_conv = cout <= 16 and int(conv_input[1]) * cout <= 16 * 16
    return good_dw and good_conv and recommended_dw and recommended_conv


def combine_dw_plus_1x1(raw_dw: Sequence[float], raw_conv: Sequence[float]) -> tuple[float, ...]:
    """Features of a ``dw_conv_plus_1x1`` kernel: the depthwise conv's input and window, the 1x1
    conv's output, the weights and FLOPs of both."""
    r = list(raw_dw)
    # RAW_NAMES order: input_hw, input_channels, output_hw, output_channels, stride, kernel_hw,
    # filters, groups, input_size, output_size, kernel_size, param_size, padding_size, flops
    r[3] = raw_conv[3]
    r[6] = raw_conv[6]
    r[9] = raw_conv[9]
    r[10] = raw_dw[10] + raw_conv[10]
    r[11] = raw_dw[11] + raw_conv[11]
    r[13] = raw_dw[13] + raw_conv[13]
    return tuple(r)


# ---------------------------------------------------------------------------------------------
# The delegate's graph and Algorithm 3.1


@dataclass
class DelegateNode:
    """A node of the delegate's graph: the IR operators it stands for and its tensors."""

    id: int
    label: str  # the delegate's op name, e.g. "convolution_2d", "relu", "add"
    ops: list[int]  # IR operator indices; the first is the anchor
    src: list[str]
    dst: list[str]
    kind: str = ""  # kernel kind of a node that can start a kernel
    raw: tuple[float, ...] = ()  # set for a special kernel; chain heads get theirs in deduce_kernels
    extra_labels: list[str] = field(default_factory=list)  # a batch norm's ADD after its MUL
    takes_links: bool = True  # False: nothing links into its kernel (Winograd on ``WINOGRAD_UNLINKED``)
    same_shape_inputs: bool = False  # an element-wise node whose inputs all have one shape


def delegate_nodes(graph: Graph, family: str) -> list[DelegateNode]:
    """The nodes the TFLite GPU delegate builds for an IR graph (see the module docstring)."""
    ops = graph.operators
    tensors = graph.tensors
    readers: dict[str, int] = {}
    for o in ops:
        for t in o.inputs:
            readers[t] = readers.get(t, 0) + 1
    outputs = set(graph.outputs)
    nodes: list[DelegateNode] = []
    writer: dict[str, DelegateNode] = {}  # tensor -> the node that writes it
    alias: dict[str, str] = {}  # output of a removed reshape -> its input
    for i, o in enumerate(ops):
        if o.type == OPAQUE:
            continue  # the delegate leaves an operator it does not know to the CPU: no GPU kernel
        src = [alias.get(t, t) for t in o.inputs]
        if (
            o.type in ("flatten", "reshape")
            and src[0] in writer
            and _same_in_bhwc(tensors[o.inputs[0]].shape, tensors[o.outputs[0]].shape)
        ):
            # TFLite's RemoveIdentityReshape: a reshape that keeps the BHWC layout (a flatten
            # after a global mean) is no node; the qed phones run mean_26 then fully_connected_27
            writer[src[0]].ops.append(i)
            alias[o.outputs[0]] = src[0]
            continue
        if o.type == "batch_norm":
            p = writer.get(src[0])
            if (
                p is not None
                and ops[p.ops[0]].type in _BN_FOLDERS
                and len(p.ops) == 1
                and readers.get(src[0], 0) == 1
                and src[0] not in outputs
            ):
                p.ops.append(i)  # folded into the weights: no node of its own
                p.dst = list(o.outputs)
                writer[o.outputs[0]] = p
                continue
        ins = [tensors[t].shape for t in o.inputs]
        outs = [tensors[t].shape for t in o.outputs]
        if o.type in _ELEMENTWISE_LABEL:
            label, kind = _ELEMENTWISE_LABEL[o.type], "elementwise"
        else:
            kind = anchor_kind(family, o.type, o.attrs, ins, outs)
            label = KIND_LABEL.get(kind, o.type)
        node = DelegateNode(len(nodes), label, [i], src, list(o.outputs), kind)
        if o.type == "batch_norm":
            node.extra_labels.append("add")
        node.takes_links = not (kind == "winograd" and family in WINOGRAD_UNLINKED)
        node.same_shape_inputs = kind == "elementwise" and len(ins) > 1 and all(s == ins[0] for s in ins)
        nodes.append(node)
        for t in o.outputs:
            writer[t] = node
    if family == "apple":
        nodes = _fuse_dw_plus_1x1(graph, nodes)
    return nodes


def _bhwc(shape: Sequence[int]) -> tuple[int, ...] | None:
    """An NCHW or (N, C) shape as the GPU delegate lays it out (BHWC); None for other ranks."""
    if len(shape) == 4:
        return (shape[0], shape[2], shape[3], shape[1])
    if len(shape) == 2:
        return (shape[0], 1, 1, shape[1])
    return None


def _same_in_bhwc(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether a reshape from ``a`` to ``b`` leaves the delegate's BHWC tensor as it is."""
    x, y = _bhwc(a), _bhwc(b)
    return x is not None and x == y


def _fuse_dw_plus_1x1(graph: Graph, nodes: list[DelegateNode]) -> list[DelegateNode]:
    """Apple's special kernel: depthwise conv [+ ReLU] + 1x1 conv, each the sole reader of the last."""
    uses: dict[str, list[DelegateNode]] = {}
    for n in nodes:
        for t in n.src:
            uses.setdefault(t, []).append(n)
    outputs = set(graph.outputs)
    removed: set[int] = set()
    ops = graph.operators
    for n in nodes:
        if n.id in removed or ops[n.ops[0]].type != "depthwise_conv2d" or len(n.dst) != 1:
            continue
        chain = [n]
        cur = n
        for _ in range(2):
            readers = uses.get(cur.dst[0], [])
            if len(readers) != 1 or cur.dst[0] in outputs:
                chain = []
                break
            nxt = readers[0]
            chain.append(nxt)
            if nxt.label == "relu" and len(chain) == 2:
                cur = nxt
                continue
            break
        if len(chain) < 2 or chain[-1].id in removed:
            continue
        conv = chain[-1]
        conv_op = ops[conv.ops[0]]
        if conv_op.type != "conv2d" or conv.kind not in ("conv2d", "winograd", "grouped_conv2d"):
            continue
        dw_op = ops[n.ops[0]]
        tensors = graph.tensors
        if not dw_plus_1x1_supported(
            dw_op.attrs, tensors[dw_op.inputs[0]].shape, conv_op.attrs, tensors[conv_op.inputs[0]].shape
        ):
            continue
        # The special kernel replaces the nodes; it keeps the 1x1 conv's place and output.
        conv.ops = [i for c in chain for i in c.ops]
        conv.src = list(n.src)
        conv.label, conv.kind = KIND_LABEL["dw_conv_plus_1x1"], "dw_conv_plus_1x1"
        conv.raw = combine_dw_plus_1x1(op_raw_features(graph, dw_op), op_raw_features(graph, conv_op))
        conv.extra_labels = [str(c.id) for c in chain[1:]]  # named after every node it took
        conv.id = n.id
        removed.update(c.id for c in chain[:-1])
        for c in chain[:-1]:
            for s in c.src:
                if c in uses.get(s, []):
                    uses[s] = [conv if u is c else u for u in uses[s]]
    return [n for n in nodes if n.id not in removed or n.kind == "dw_conv_plus_1x1"]


def merge_nodes(nodes: list[DelegateNode]) -> list[list[DelegateNode]]:
    """Algorithm 3.1 (MERGENODES): fuse each node into its only reader when that reader is
    linkable, reads it as its first input (any input, for a reader of same-shaped inputs) and has
    every other input written already, and the node's kernel takes links (see the module
    docstring). Returns the fused chains in launch order."""
    uses: dict[str, list[tuple[int, int]]] = {}
    written_at: dict[str, int] = {}
    for pos, n in enumerate(nodes):
        for k, t in enumerate(n.src):
            uses.setdefault(t, []).append((pos, k))
        for t in n.dst:
            written_at[t] = pos
    chains: list[list[DelegateNode]] = [[n] for n in nodes]
    alive = [True] * len(nodes)
    for pos, cur in enumerate(nodes):
        if len(cur.dst) != 1 or not chains[pos][0].takes_links:  # line 5
            continue
        candidates = uses.get(cur.dst[0], [])  # lines 7-13
        if len(candidates) != 1:
            continue
        nxt, index = candidates[0]
        reader = nodes[nxt]
        if index != 0 and not reader.same_shape_inputs:  # line 14
            continue
        # lines 17-18: the reader's other inputs are ready (graph inputs and weights always are)
        ready = all(written_at.get(t, -1) < pos for t in reader.src if t != cur.dst[0])
        if ready and _is_linkable(reader):
            chains[nxt] = chains[pos] + chains[nxt]  # line 19: MERGE(cur_node, next_node)
            alive[pos] = False  # line 20
    return [c for c, a in zip(chains, alive) if a]


def _is_linkable(node: DelegateNode) -> bool:
    """Algorithm 3.1 ISLINKABLE (lines 22-26)."""
    return len(node.dst) == 1 and node.label in LINKABLE


def chain_name(chain: Sequence[DelegateNode]) -> str:
    """The delegate's name of a fused kernel: ``convolution_2d_3_linked_:_relu_4``."""
    head = chain[0]
    parts = [f"{head.label}_{head.id}"]
    if head.kind == "dw_conv_plus_1x1":
        parts = [f"{head.label}_{'_'.join([str(head.id), *head.extra_labels])}"]
    for n in chain[1:]:
        parts.append(f"{n.label}_{n.id}")
        if n.extra_labels and n.kind == "elementwise":
            parts.extend(f"{lbl}_{n.id}" for lbl in n.extra_labels)
    return "_linked_:_".join(parts)


def deduce_kernels(graph: Graph, family: str) -> list[Kernel]:
    """The kernels the TFLite GPU delegate runs for ``graph`` on a GPU of ``family``."""
    return [k for k, _ in sited_kernels(graph, family)]


def sited_kernels(graph: Graph, family: str) -> list[tuple[Kernel, int]]:
    """``deduce_kernels``, each with the operator that places it in launch order: the first
    operator of its chain's last node."""
    _check_family(family)
    kernels = []
    for chain in merge_nodes(delegate_nodes(graph, family)):
        head = chain[0]
        # Features only for the chain heads: most nodes are linked into one and need none.
        raw = head.raw or op_raw_features(graph, graph.operators[head.ops[0]])
        kernels.append(
            (Kernel(head.kind, tuple(i for n in chain for i in n.ops), raw, chain_name(chain)), chain[-1].ops[0])
        )
    return kernels


def kind_from_name(name: str) -> str:
    """The kernel kind of a delegate kernel name (``convolution_winograd_4x4_6x6_1`` -> ``winograd``)."""
    head = name.split("_linked_")[0]
    for label, kind in _LABEL_KIND:
        if head.startswith(label):
            return kind
    return "elementwise"


def linked_labels(name: str) -> list[str]:
    """The node types linked into a delegate kernel, in order (``..._linked_:_relu_2`` -> ``["relu"]``)."""
    return [re.sub(r"_\d+$", "", part) for part in name.split("_linked_:_")[1:]]


@dataclass(frozen=True)
class TfliteGpuDeducer:
    """Deduces TFLite GPU delegate kernels for one GPU family."""

    family: str
    kind: str = KIND

    def __post_init__(self) -> None:
        _check_family(self.family)

    def kernels(self, graph: Graph) -> list[Kernel]:
        """The kernels the delegate runs for ``graph``."""
        return deduce_kernels(graph, self.family)

    def sited_kernels(self, graph: Graph) -> list[tuple[Kernel, int]]:
        """``kernels``, each with the operator that places it in launch order."""
        return sited_kernels(graph, self.family)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the predictor artifact."""
        return {"kind": KIND, "family": self.family}


# ``raw_features`` is re-exported for the qed reader, which builds rows without a graph.
__all__ = [
    "GPU_FAMILIES",
    "ConvInfo",
    "DelegateNode",
    "WINOGRAD_UNLINKED",
    "TfliteGpuDeducer",
    "anchor_kind",
    "check_grouped_conv",
    "check_winograd",
    "combine_dw_plus_1x1",
    "deduce_kernels",
    "delegate_nodes",
    "dw_plus_1x1_supported",
    "gpu_family",
    "kind_from_name",
    "linked_labels",
    "merge_nodes",
    "raw_features",
    "select_conv_kernel",
    "sited_kernels",
]
