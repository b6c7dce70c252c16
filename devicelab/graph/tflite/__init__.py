"""TFLite flatbuffers (.tflite): read into the graph IR, and written from it.

Only subgraph 0 (the model's main function) is read. What the reader does with TFLite's ways:

* **Layout.** TFLite activations are NHWC; the IR is NCHW. Every 4-D activation shape becomes
  ``[N, C, H, W]``, and every axis attribute on a 4-D tensor (concat, split, pad, mean, softmax,
  transpose) is mapped with it (NHWC axis 1, 2, 3 -> NCHW axis 2, 3, 1). Tensors of other ranks
  keep their shape. Weights keep their TFLite layout: they are only read for their sizes.
* **Reshape.** A RESHAPE / SQUEEZE / EXPAND_DIMS becomes an IR ``reshape`` to the output tensor's
  shape after the rule above, so the element count is kept but, when a 4-D tensor is involved, not
  the element *order* (TFLite flattens H, W, C; the NCHW reshape flattens C, H, W). The IR carries
  no values, shapes and costs are the same, and adding the transposes a value-exact conversion needs
  would invent work that the device never does. The common classifier case, ``[1, 1, 1, C] ->
  [1, C]``, is exact either way.
* **Fused activations.** ``fused_activation_function`` becomes a separate IR operator named
  ``<op>/act`` that writes the TFLite output tensor; the operator itself writes ``<op>/pre_act``.
* **Names.** TFLite operators have no names, so an operator is named after its first output tensor,
  as TFLite's benchmark_model does. Empty or repeated tensor names get a ``_N`` suffix.
* **Weights and constants.** A tensor that is neither a subgraph input nor written by a live
  operator is a constant, whether or not its buffer holds data ("shape only" files work). Filters
  and biases become attributes (``out_channels``, ``kernel``, ``bias``...), a constant operand of
  ADD / SUB / MUL / DIV becomes ``const_shape`` (and ``const_value`` for a float scalar whose data is
  present). An operator that reads only constants (DEQUANTIZE of fp16 weights, say) is a constant
  subexpression: it is dropped and its output is a constant too.
* **Quantization.** QUANTIZE and DEQUANTIZE of activations become ``quantize_linear`` and
  ``dequantize_linear`` (one between float16 and float32 is dropped: its output is its input).
  Tensors keep their own dtype, so a fully-quantized model's CONV_2D, DEPTHWISE_CONV_2D and
  FULLY_CONNECTED are the IR's operators on ``int8`` (or ``uint8``) tensors, and their MACs count
  as int8 ones (``Graph.macs_by_dtype``).
* **Small constants that drive shapes** (MEAN axes, PAD paddings, SPLIT axis, TRANSPOSE perm) are
  read from their buffers; when a shape-only file leaves them empty they are inferred from the
  input and output shapes (for PAD, the padding is then split evenly with the odd one at the end).
  SPLIT sizes, RESHAPE targets and RESIZE sizes always come from the output tensors' shapes.
* **Dynamic shapes.** A -1 in the batch dimension (shape or shape_signature) reads as 1; a -1
  anywhere else is refused.
* **Bounds and products.** MAXIMUM / MINIMUM of an activation and a float scalar (float32, or
  float16 behind a DEQUANTIZE) read as a one-sided ``clip``; BATCH_MATMUL of two activations of
  rank other than 4 reads as ``matmul``.
* **Operators outside the IR.** A builtin without a handler (ARG_MAX, GATHER ...) or a custom
  operator becomes an ``opaque`` operator: its name (``op``), its computed inputs, its outputs with
  their declared shapes and dtypes, no MACs. A phone runs the file as uploaded and times it; a
  backend that executes the IR itself refuses such a model at submission (``unsupported_by_ir``).
  A builtin with a handler whose options the IR cannot express is still refused.
* **Not modelled.** Softmax ``beta``, resize ``half_pixel_centers``, quantization parameters.

The phases, one module each: ``wire`` decodes the flatbuffer (bounds-checked), ``importer``
walks subgraph 0 and ``mappers`` holds one handler per TFLite operator family.

Writing (``graph_to_tflite``, described in ``writer``): ``writer`` plans which batch norms and
activations fold into their producer and drives the export; ``emit`` is what an emitter sees of
it, ``emit_layers`` and ``emit_tensors`` hold one emitter per IR operator type, and ``encode``
serializes the records as a flatbuffer.
"""

from devicelab.graph.tflite.importer import graph_from_tflite_bytes
from devicelab.graph.tflite.writer import ExportedOp, TfliteExport, graph_to_tflite, graph_to_tflite_bytes

__all__ = ["ExportedOp", "TfliteExport", "graph_from_tflite_bytes", "graph_to_tflite", "graph_to_tflite_bytes"]
