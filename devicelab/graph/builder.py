"""A small builder that writes IR graphs operator by operator, inferring every shape.

The zoo and the NAS samplers describe networks with it::

    b = GraphBuilder("tiny", (1, 3, 32, 32))
    x = b.conv(b.input, 16, 3, stride=2, bias=False)
    x = b.relu(b.bn(x))
    graph = b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from devicelab.graph import ops
from devicelab.graph.ir import Graph, Operator, Tensor
from devicelab.graph.ops import Shape

Padding = str | int | Sequence[int]


def conv_pads(
    size: tuple[int, int], kernel: tuple[int, int], stride: tuple[int, int], dilation: tuple[int, int], pad: Padding
) -> list[int]:
    """[top, left, bottom, right] pads for a padding rule.

    ``"same"`` pads ``dilation * (k - 1) / 2`` on both sides (PyTorch style, odd kernels);
    ``"same_tf"`` is TensorFlow's SAME (output ceil(in / stride), extra pad at bottom/right);
    ``"valid"`` is no padding; an int pads every side; four ints are taken as they are.
    """
    if isinstance(pad, str):
        if pad == "valid":
            return [0, 0, 0, 0]
        eff = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
        if pad == "same":
            half = [(e - 1) // 2 for e in eff]
            rest = [e - 1 - h for e, h in zip(eff, half)]
            return [half[0], half[1], rest[0], rest[1]]
        if pad == "same_tf":
            totals = []
            for n, e, s in zip(size, eff, stride):
                out = -(-n // s)
                totals.append(max((out - 1) * s + e - n, 0))
            return [totals[0] // 2, totals[1] // 2, totals[0] - totals[0] // 2, totals[1] - totals[1] // 2]
        raise ValueError(f"unknown padding rule {pad!r}")
    if isinstance(pad, int):
        return [pad] * 4
    return [int(p) for p in pad]


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    a, b = v
    return (int(a), int(b))


class GraphBuilder:
    """Accumulates operators and tensors; every call returns the name of the tensor it wrote."""

    def __init__(self, name: str, input_shape: Shape, input_name: str = "input", dtype: str = "float32") -> None:
        self.name = name
        self.input = input_name
        self._tensors: dict[str, Tensor] = {input_name: Tensor(input_name, tuple(input_shape), dtype)}
        self._ops: list[Operator] = []
        self._op_names: set[str] = set()
        self._inputs = [input_name]
        self._counts: Counter[str] = Counter()
        self._scope: list[str] = []
        self._last = input_name

    # -- plumbing ----------------------------------------------------------------------------

    @contextmanager
    def scope(self, prefix: str) -> Iterator[None]:
        """Prefix the names of operators created inside the block with ``prefix/``."""
        self._scope.append(prefix)
        try:
            yield
        finally:
            self._scope.pop()

    def shape(self, tensor: str) -> Shape:
        """Shape of a tensor written so far."""
        return self._tensors[tensor].shape

    def channels(self, tensor: str) -> int:
        """Channel count (axis 1) of a tensor."""
        return self._tensors[tensor].shape[1]

    def add_input(self, name: str, shape: Shape, dtype: str = "float32") -> str:
        """Declare another graph input."""
        self._tensors[name] = Tensor(name, tuple(shape), dtype)
        self._inputs.append(name)
        return name

    def _unique(self, op_type: str, name: str | None) -> str:
        base = name or f"{op_type}_{self._counts[op_type]}"
        self._counts[op_type] += 1
        full = "/".join([*self._scope, base])
        taken = self._op_names
        candidate, i = full, 1
        while candidate in taken or (candidate in self._tensors and candidate not in taken):
            candidate, i = f"{full}_{i}", i + 1
        return candidate

    def op_multi(self, op_type: str, inputs: Sequence[str], name: str | None = None, **attrs: Any) -> list[str]:
        """Append any operator; return the names of all its output tensors."""
        op_name = self._unique(op_type, name)
        shapes = [self._tensors[t].shape for t in inputs]
        canonical, out_shapes = ops.normalize_and_infer(op_type, attrs, shapes, op_name)
        dtype = ops.output_dtype(op_type, canonical, [self._tensors[t].dtype for t in inputs], op_name)
        outs = [op_name] if len(out_shapes) == 1 else [f"{op_name}:{i}" for i in range(len(out_shapes))]
        for t, s in zip(outs, out_shapes):
            self._tensors[t] = Tensor(t, s, dtype)
        self._ops.append(Operator(op_name, op_type, list(inputs), outs, canonical))
        self._op_names.add(op_name)
        self._last = outs[-1]
        return outs

    def op(self, op_type: str, inputs: Sequence[str], name: str | None = None, **attrs: Any) -> str:
        """Append a single-output operator; return its output tensor."""
        outs = self.op_multi(op_type, inputs, name, **attrs)
        if len(outs) != 1:
            raise ValueError(f"{op_type} has {len(outs)} outputs; use op_multi")
        return outs[0]

    def build(self, outputs: str | Sequence[str] | None = None) -> Graph:
        """The finished, checked graph. Outputs default to the last tensor written."""
        if outputs is None:
            outputs = [self._last]
        elif isinstance(outputs, str):
            outputs = [outputs]
        return Graph(self.name, dict(self._tensors), list(self._inputs), list(outputs), list(self._ops)).check(
            infer=False
        )

    # -- layers ------------------------------------------------------------------------------

    def conv(
        self,
        x: str,
        out_channels: int,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        pad: Padding = "same",
        groups: int = 1,
        dilation: int | Sequence[int] = 1,
        bias: bool = False,
        name: str | None = None,
    ) -> str:
        """Convolution; ``groups == in_channels == out_channels`` still gives a conv2d (use dwconv)."""
        k, s, d = _pair(kernel), _pair(stride), _pair(dilation)
        size = self.shape(x)[2:4]
        return self.op(
            "conv2d",
            [x],
            name,
            out_channels=out_channels,
            kernel=list(k),
            stride=list(s),
            pads=conv_pads((size[0], size[1]), k, s, d, pad),
            dilation=list(d),
            groups=groups,
            bias=bias,
        )

    def dwconv(
        self,
        x: str,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] = 1,
        pad: Padding = "same",
        dilation: int | Sequence[int] = 1,
        multiplier: int = 1,
        bias: bool = False,
        name: str | None = None,
    ) -> str:
        """Depthwise convolution."""
        k, s, d = _pair(kernel), _pair(stride), _pair(dilation)
        size = self.shape(x)[2:4]
        return self.op(
            "depthwise_conv2d",
            [x],
            name,
            kernel=list(k),
            stride=list(s),
            pads=conv_pads((size[0], size[1]), k, s, d, pad),
            dilation=list(d),
            multiplier=multiplier,
            bias=bias,
        )

    def fc(self, x: str, out_features: int, bias: bool = True, name: str | None = None) -> str:
        """Fully connected layer over the last axis."""
        return self.op("fully_connected", [x], name, out_features=out_features, bias=bias)

    def bn(self, x: str, epsilon: float = 1e-5, name: str | None = None) -> str:
        """Batch norm."""
        return self.op("batch_norm", [x], name, epsilon=epsilon)

    def act(self, x: str, kind: str, name: str | None = None, **attrs: Any) -> str:
        """Any activation by its IR type name (``relu``, ``hard_swish``, ...)."""
        return self.op(kind, [x], name, **attrs)

    def relu(self, x: str, name: str | None = None) -> str:
        """ReLU."""
        return self.op("relu", [x], name)

    def relu6(self, x: str, name: str | None = None) -> str:
        """ReLU6."""
        return self.op("relu6", [x], name)

    def sigmoid(self, x: str, name: str | None = None) -> str:
        """Sigmoid."""
        return self.op("sigmoid", [x], name)

    def add(self, a: str, b: str, name: str | None = None) -> str:
        """Element-wise sum."""
        return self.op("add", [a, b], name)

    def mul(self, a: str, b: str, name: str | None = None) -> str:
        """Element-wise product."""
        return self.op("mul", [a, b], name)

    def concat(self, xs: Sequence[str], axis: int = 1, name: str | None = None) -> str:
        """Concatenate along an axis."""
        return self.op("concat", list(xs), name, axis=axis)

    def split(self, x: str, sizes: Sequence[int], axis: int = 1, name: str | None = None) -> list[str]:
        """Split into pieces."""
        return self.op_multi("split", [x], name, axis=axis, sizes=list(sizes))

    def max_pool(
        self,
        x: str,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        pad: Padding = 0,
        ceil_mode: bool = False,
        name: str | None = None,
    ) -> str:
        """Max pooling; stride defaults to the kernel size."""
        return self._pool("max_pool2d", x, kernel, stride, pad, ceil_mode, name, {})

    def avg_pool(
        self,
        x: str,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        pad: Padding = 0,
        ceil_mode: bool = False,
        count_include_pad: bool = False,
        name: str | None = None,
    ) -> str:
        """Average pooling; stride defaults to the kernel size."""
        return self._pool(
            "avg_pool2d", x, kernel, stride, pad, ceil_mode, name, {"count_include_pad": count_include_pad}
        )

    def _pool(
        self,
        op_type: str,
        x: str,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] | None,
        pad: Padding,
        ceil_mode: bool,
        name: str | None,
        extra: dict[str, Any],
    ) -> str:
        k = _pair(kernel)
        s = k if stride is None else _pair(stride)
        size = self.shape(x)[2:4]
        return self.op(
            op_type,
            [x],
            name,
            kernel=list(k),
            stride=list(s),
            pads=conv_pads((size[0], size[1]), k, s, (1, 1), pad),
            ceil_mode=ceil_mode,
            **extra,
        )

    def global_avg_pool(self, x: str, name: str | None = None) -> str:
        """Global average pooling to N x C x 1 x 1."""
        return self.op("global_avg_pool", [x], name)

    def flatten(self, x: str, axis: int = 1, name: str | None = None) -> str:
        """Flatten to 2-D."""
        return self.op("flatten", [x], name, axis=axis)

    def reshape(self, x: str, shape: Sequence[int], name: str | None = None) -> str:
        """Reshape."""
        return self.op("reshape", [x], name, shape=list(shape))

    def softmax(self, x: str, axis: int = -1, name: str | None = None) -> str:
        """Softmax."""
        return self.op("softmax", [x], name, axis=axis)

    def shuffle(self, x: str, groups: int, name: str | None = None) -> str:
        """Channel shuffle."""
        return self.op("channel_shuffle", [x], name, groups=groups)

    def resize(
        self, x: str, size: Sequence[int], mode: str = "linear", align_corners: bool = False, name: str | None = None
    ) -> str:
        """Resize H and W to ``size``."""
        return self.op("resize", [x], name, size=list(size), mode=mode, align_corners=align_corners)

    def classifier(self, x: str, num_classes: int = 1000, softmax: bool = False) -> str:
        """Global average pool, flatten, fully connected (and softmax)."""
        y = self.fc(self.flatten(self.global_avg_pool(x)), num_classes)
        return self.softmax(y) if softmax else y
