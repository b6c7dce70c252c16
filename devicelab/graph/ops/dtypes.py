"""Dtype rules: an operator's output dtype from its inputs' dtypes and its canonical attributes.

Most operators keep their input's dtype: a ``conv2d`` that reads ``int8`` writes ``int8``, which is
how the IR says "quantized convolution" (ONNX ``QLinearConv``, a TFLite int8 ``CONV_2D``). Only the
operators that change the number format have a rule of their own: ``quantize_linear`` writes its
``dtype`` attribute, ``dequantize_linear`` writes float32, and the integer-accumulator operators
(``conv_integer``, ``matmul_integer``) write int32.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from devicelab.graph.ops.common import Attrs, need

# (input dtypes, canonical attributes) -> the output dtype (one dtype for every output).
DtypeRule = Callable[[Sequence[str], Attrs], str]

FLOATS = ("float32", "float16")
QUANTIZED = ("int8", "uint8")  # the dtypes of quantized activations


def same(dtypes: Sequence[str], a: Attrs) -> str:
    """The first input's dtype (float32 for an operator without inputs)."""
    return dtypes[0] if dtypes else "float32"


def quantize(dtypes: Sequence[str], a: Attrs) -> str:
    """quantize_linear: the ``dtype`` attribute, from a float (or, requantizing, a quantized) input."""
    need(
        not dtypes or dtypes[0] in FLOATS + QUANTIZED,
        f"quantize_linear reads float or int8/uint8 tensors, not {dtypes[0] if dtypes else None}",
    )
    return str(a["dtype"])


def dequantize(dtypes: Sequence[str], a: Attrs) -> str:
    """dequantize_linear: float32, from an int8, uint8 or int32 input."""
    need(
        not dtypes or dtypes[0] in (*QUANTIZED, "int32"),
        f"dequantize_linear reads int8, uint8 or int32 tensors, not {dtypes[0] if dtypes else None}",
    )
    return "float32"


def integer_accumulator(dtypes: Sequence[str], a: Attrs) -> str:
    """conv_integer / matmul_integer: int32 sums of int8 or uint8 products."""
    for d in dtypes:
        need(d in QUANTIZED, f"an integer-accumulator operator reads int8 or uint8 tensors, not {d}")
    return "int32"


def is_quantized_dtype(dtype: str) -> bool:
    """Whether tensors of this dtype hold quantized values (int8 or uint8)."""
    return dtype in QUANTIZED


def declared(dtypes: Sequence[str], a: Attrs) -> str:
    """opaque: the first output's declared dtype (``output_dtypes`` gives each output's)."""
    return str(a["output_dtypes"][0])
