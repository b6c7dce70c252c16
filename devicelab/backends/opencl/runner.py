"""Running a graph on one OpenCL device: programs, buffers, weights, launches and their timing.

A ``GraphRunner`` does all set-up once (the cold start): it plans the kernels, gets each
program from the per-device cache (building it the first time; one per kernel and compile-time
tiling), allocates one buffer per tensor a kernel writes (views share their input's; each ends
in zeroed slack as long as the plan's farthest vector load reads past a tensor), uploads the
weights in the kernels' layouts, and creates one ``cl.Kernel`` per launch with its arguments
already set. It keeps every buffer referenced for as long as it lives: OpenCL kernel arguments
do not keep the Python buffer objects alive. A run uploads the inputs, enqueues every kernel in topological order on a
profiling-enabled in-order queue, and downloads the outputs.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.base import BackendError
from devicelab.backends.opencl.devices import FoundDevice, context_for
from devicelab.backends.opencl.fusion import ACTIVATIONS, BINARY_OPS
from devicelab.backends.opencl.plan import (
    PlanError,
    PlannedKernel,
    as_rank4,
    broadcast_layout,
    canonical,
    concat_geometry,
    kernels_for_graph,
    numel,
)
from devicelab.backends.opencl.programs import PROGRAMS, build_options
from devicelab.backends.opencl.tiling import KernelConfig, choose_local_size
from devicelab.backends.opencl.weights import bn_scale_shift, conv_blocked, fc_blocked, fold_batch_norm
from devicelab.graph.ir import Graph, Operator
from devicelab.measure.inputs import make_inputs

HOST_DTYPES: dict[str, np.dtype[Any]] = {"fp32": np.dtype(np.float32), "fp16": np.dtype(np.float16)}
WEIGHT_SEED = 0


@dataclass(frozen=True)
class Launch:
    """One planned kernel ready to enqueue: its kernel object with arguments set, and sizes."""

    planned: PlannedKernel
    kernel: cl.Kernel
    global_size: tuple[int, int]
    local_size: tuple[int, int]
    args: tuple[Any, ...] = ()  # the values set on ``kernel``, in order (``devicelab.fusion`` binds them again)


@dataclass(frozen=True)
class RunTiming:
    """One timed run: host wall time, device span and each launch's kernel time (ms)."""

    wall_ms: float
    span_ms: float  # first kernel start to last kernel end, on the device clock
    kernel_ms: list[float]  # per launch, in launch order


@dataclass(frozen=True)
class LoadReport:
    """What the set-up did and cost."""

    programs_built: int
    programs_cached: int
    build_ms: float
    buffer_bytes: int
    weight_bytes: int


def _epilogue(chain: list[Operator]) -> tuple[np.int32, np.float32, np.float32]:
    """(activation code, alpha, beta) of the activation absorbed into a kernel, or none."""
    act = next((o for o in chain if o.type in ACTIVATIONS), None)
    if act is None:
        return np.int32(0), np.float32(0), np.float32(0)
    alpha, beta = 0.0, 0.0
    if act.type in ("leaky_relu", "elu"):
        alpha = act.attrs["alpha"]
    elif act.type == "clip":
        lo, hi = act.attrs["min"], act.attrs["max"]
        alpha = -np.inf if lo is None else lo
        beta = np.inf if hi is None else hi
    return np.int32(ACTIVATIONS[act.type]), np.float32(alpha), np.float32(beta)


def _i(*values: int) -> list[np.int32]:
    return [np.int32(v) for v in values]


class GraphRunner:
    """A graph loaded on one OpenCL device, ready to run (see the module docstring)."""

    def __init__(
        self,
        found: FoundDevice,
        graph: Graph,
        precision: str = "fp32",
        weight_seed: int = WEIGHT_SEED,
        config: KernelConfig | None = None,
        context: cl.Context | None = None,
    ) -> None:
        """``context``: where the programs, queue and buffers live; default the device's shared
        one (a private context is the caller's: it outlives the runner, see ``ProgramCache.forget``)."""
        from devicelab.graph.onnx import operator_weights

        limits = found.limits
        if precision not in HOST_DTYPES:
            raise BackendError(f"opencl backend: precision {precision!r} is not supported (fp32 or fp16)")
        if precision == "fp16" and not limits.fp16:
            raise BackendError(
                f"opencl backend: device {limits.name!r} does not support fp16 "
                "(no cl_khr_fp16 extension); run it in fp32"
            )
        quantized = graph.quantized_operators()
        if quantized:
            first = quantized[0]
            raise BackendError(
                f"opencl backend cannot run graph {graph.name!r}: it has {len(quantized)} quantized operators "
                f"(the first: {first.name!r}, {first.type} on {graph.compute_dtype(first)}) and LatencyLab's "
                "OpenCL kernels are fp32 / fp16; profile a quantized model on a cpu device"
            )
        self.found = found
        self.precision = precision
        self.dtype = HOST_DTYPES[precision]
        self.graph = canonical(graph)
        self.config = config or KernelConfig.for_device(limits)
        try:
            planned = kernels_for_graph(self.graph, limits, self.config)
        except PlanError as e:
            raise BackendError(f"opencl backend cannot run graph {graph.name!r}: {e}") from e
        self.ops = {o.name: o for o in self.graph.operators}
        self.ctx = context_for(found) if context is None else context
        self.queue = cl.CommandQueue(self.ctx, found.device, properties=cl.command_queue_properties.PROFILING_ENABLE)
        # one program per kernel and compile-time tiling (its variant)
        self.options: dict[tuple[str, str], tuple[str, ...]] = {}
        for k in planned:
            self.options.setdefault((k.kernel, k.attrs["variant"]), build_options(precision, k.attrs))
        # every activation buffer ends in zeroed slack that the farthest vector load reaches
        self.slack = max([int(k.attrs.get("overread", 0)) for k in planned] + [0])

        built = cached = 0
        build_ms = 0.0
        programs = {}
        for variant, options in self.options.items():
            program, fresh = PROGRAMS.get(found, variant[0], options, precision, self.ctx)
            programs[variant] = program
            built += fresh
            cached += not fresh
            build_ms += program.build_ms if fresh else 0.0

        self._weights = operator_weights(self.graph, seed=weight_seed)
        self.buffers: dict[str, cl.Buffer] = {}
        self._owned: list[cl.Buffer] = []  # every buffer, referenced for the runner's whole life
        self._buffer_bytes = 0
        self._weight_bytes = 0
        self._allocate_activations(planned)

        self.launches: list[Launch] = []
        for pk in planned:
            program = programs[(pk.kernel, pk.attrs["variant"])]
            local = choose_local_size(
                pk.global_size,
                program.limits.preferred_multiple,
                program.limits.max_work_group_size,
                limits.max_work_item_sizes,
                limits.compute_units,
            )
            pk = dataclasses.replace(pk, local_size=local)
            kernel = cl.Kernel(program.program, pk.kernel)
            args = self._args(pk)
            try:
                kernel.set_args(*args)
            except cl.Error as e:
                raise BackendError(
                    f"opencl backend: arguments of kernel {pk.name!r} ({pk.kernel}) were refused: {e}"
                ) from e
            self.launches.append(Launch(pk, kernel, pk.launch_size, local, tuple(args)))
        self.plan: list[PlannedKernel] = [launch.planned for launch in self.launches]  # kept after release()
        self.queue.finish()  # weight uploads done: they belong to the set-up, not to the first run
        self.load = LoadReport(built, cached, build_ms, self._buffer_bytes, self._weight_bytes)

    # -- buffers -----------------------------------------------------------------------------

    def _new_buffer(self, nbytes: int, what: str) -> cl.Buffer:
        limit = self.found.limits.max_mem_alloc_size
        if nbytes > limit:
            raise BackendError(
                f"opencl backend: {what} needs {nbytes} bytes, more than the device's largest "
                f"allocation ({limit} bytes)"
            )
        try:
            buf = cl.Buffer(self.ctx, cl.mem_flags.READ_WRITE, size=max(nbytes, 4))
        except cl.Error as e:
            raise BackendError(f"opencl backend: could not allocate {nbytes} bytes for {what}: {e}") from e
        self._owned.append(buf)
        return buf

    def _allocate_activations(self, planned: list[PlannedKernel]) -> None:
        """One buffer per graph input and per tensor a kernel writes; a view that runs no kernel
        shares its input's buffer (the same bytes, another shape)."""
        written: set[str] = set(self.graph.inputs)
        in_kernel = {o for k in planned for o in k.ops}
        for k in planned:
            written.update(self.ops[k.ops[-1]].outputs)
        for t in self.graph.inputs:
            self.buffers[t] = self._activation(t)
        for op in self.graph.topological_order():
            if op.type in ("reshape", "flatten") and op.name not in in_kernel:
                self.buffers[op.outputs[0]] = self.buffers[op.inputs[0]]
                continue
            for t in op.outputs:
                if t in written and t not in self.buffers:
                    self.buffers[t] = self._activation(t)

    def _activation(self, tensor: str) -> cl.Buffer:
        nbytes = numel(self.graph.tensors[tensor].shape) * self.dtype.itemsize
        slack = self.slack * self.dtype.itemsize
        self._buffer_bytes += nbytes + slack
        buf = self._new_buffer(nbytes + slack, f"tensor {tensor!r}")
        if slack:
            cl.enqueue_fill_buffer(self.queue, buf, np.zeros(1, self.dtype), nbytes, slack)
        return buf

    def _upload(self, array: np.ndarray, what: str) -> cl.Buffer:
        data = np.ascontiguousarray(array, dtype=self.dtype)
        buf = self._new_buffer(data.nbytes, what)
        cl.enqueue_copy(self.queue, buf, data, is_blocking=True)
        self._weight_bytes += data.nbytes
        return buf

    # -- arguments of each kernel --------------------------------------------------------------

    def _chain(self, pk: PlannedKernel) -> list[Operator]:
        return [self.ops[o] for o in pk.ops]

    def _shape(self, tensor: str) -> tuple[int, ...]:
        return tuple(self.graph.tensors[tensor].shape)

    def _args(self, pk: PlannedKernel) -> list[Any]:
        chain = self._chain(pk)
        op = chain[0]
        head = _i(*pk.global_size)
        out = self.buffers[chain[-1].outputs[0]] if pk.kernel != "copy_slice" or op.type != "split" else None
        binder: Callable[[PlannedKernel, list[Operator], Operator, Any], list[Any]] = getattr(
            self, f"_args_{pk.kernel}"
        )
        return head + binder(pk, chain, op, out)

    def _conv_weights(self, chain: list[Operator], op: Operator) -> tuple[np.ndarray, np.ndarray]:
        """The operator's weight (cout, cin_g, kh, kw) and bias with any batch norm folded in."""
        w = self._weights[op.name]
        bn = next((o for o in chain if o.type == "batch_norm"), None)
        bn_w = self._weights[bn.name] if bn is not None else None
        eps = bn.attrs["epsilon"] if bn is not None else 0.0
        return fold_batch_norm(w["weight"], w.get("bias"), bn_w, eps)

    def _conv_blocks(self, pk: PlannedKernel, chain: list[Operator], op: Operator) -> tuple[Any, Any, int]:
        """The weight and bias buffers of a conv2d kernel (blocked by its OCB) and its block count."""
        cout, groups, ocb = op.attrs["out_channels"], op.attrs["groups"], int(pk.attrs["out_channels_per_item"])
        rows_outer = pk.kernel in ("conv2d", "conv2d_flat")  # their loops: kernel rows, then channels
        weight, bias = conv_blocked(*self._conv_weights(chain, op), groups, ocb, self.dtype, rows_outer)
        return (
            self._upload(weight, f"weights of {op.name!r}"),
            self._upload(bias, f"bias of {op.name!r}"),
            -(-(cout // groups) // ocb),
        )

    def _args_conv2d_1x1(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        n, cin, h, w_ = self._shape(op.inputs[0])
        cout, groups = op.attrs["out_channels"], op.attrs["groups"]
        wbuf, bbuf, nblk = self._conv_blocks(pk, chain, op)
        return [
            self.buffers[op.inputs[0]],
            wbuf,
            bbuf,
            out,
            *_i(cin // groups, h * w_, groups, cout // groups, nblk),
            *_epilogue(chain),
        ]

    def _args_conv2d_flat(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        n, cin, ih, iw = self._shape(op.inputs[0])
        _, cout, oh, ow = self._shape(op.outputs[0])
        a = op.attrs
        groups = a["groups"]
        wbuf, bbuf, nblk = self._conv_blocks(pk, chain, op)
        return [
            self.buffers[op.inputs[0]],
            wbuf,
            bbuf,
            out,
            *_i(
                cin // groups,
                ih,
                iw,
                groups,
                cout // groups,
                nblk,
                oh,
                a["kernel"][0],
                a["pads"][0],
                a["pads"][1],
                *a["dilation"],
            ),
            *_epilogue(chain),
        ]

    def _args_conv2d(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        n, cin, ih, iw = self._shape(op.inputs[0])
        _, cout, oh, ow = self._shape(op.outputs[0])
        a = op.attrs
        groups = a["groups"]
        wbuf, bbuf, nblk = self._conv_blocks(pk, chain, op)
        xtiles = -(-ow // (pk.attrs["vector_width"] * pk.attrs["pixel_vectors"]))
        return [
            self.buffers[op.inputs[0]],
            wbuf,
            bbuf,
            out,
            *_i(
                cin // groups,
                ih,
                iw,
                groups,
                cout // groups,
                nblk,
                oh,
                ow,
                xtiles,
                a["kernel"][0],
                a["stride"][0],
                a["pads"][0],
                a["pads"][1],
                *a["dilation"],
            ),
            *_epilogue(chain),
        ]

    def _depthwise_weights(self, chain: list[Operator], op: Operator, cout: int) -> tuple[Any, Any]:
        weight, bias = self._conv_weights(chain, op)
        return self._upload(weight.reshape(cout, -1), f"weights of {op.name!r}"), self._upload(
            bias, f"bias of {op.name!r}"
        )

    def _args_depthwise_conv2d_flat(
        self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer
    ) -> list[Any]:
        n, cin, ih, iw = self._shape(op.inputs[0])
        _, cout, oh, ow = self._shape(op.outputs[0])
        a = op.attrs
        return [
            self.buffers[op.inputs[0]],
            *self._depthwise_weights(chain, op, cout),
            out,
            *_i(cin, cout // cin, ih, iw, oh, a["kernel"][0], a["pads"][0], a["pads"][1], *a["dilation"]),
            *_epilogue(chain),
        ]

    def _args_depthwise_conv2d(
        self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer
    ) -> list[Any]:
        n, cin, ih, iw = self._shape(op.inputs[0])
        _, cout, oh, ow = self._shape(op.outputs[0])
        a = op.attrs
        xtiles = -(-ow // (pk.attrs["vector_width"] * pk.attrs["pixel_vectors"]))
        return [
            self.buffers[op.inputs[0]],
            *self._depthwise_weights(chain, op, cout),
            out,
            *_i(cin, cout // cin, ih, iw, oh, ow, xtiles, a["pads"][0], a["pads"][1]),
            *_epilogue(chain),
        ]

    def _args_fully_connected(
        self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer
    ) -> list[Any]:
        xs = self._shape(op.inputs[0])
        k, nout = xs[-1], op.attrs["out_features"]
        w = self._weights[op.name]
        weight = w["weight"] if len(xs) == 2 else w["weight"].T  # Gemm (out, in) or MatMul (in, out)
        bn = next((o for o in chain if o.type == "batch_norm"), None)
        folded_w, folded_b = fold_batch_norm(
            weight, w.get("bias"), self._weights[bn.name] if bn else None, bn.attrs["epsilon"] if bn else 0.0
        )
        vw = int(pk.attrs["vector_width"])
        wp, bp = fc_blocked(folded_w, folded_b, vw, self.dtype)
        return [
            self.buffers[op.inputs[0]],
            self._upload(wp, f"weights of {op.name!r}"),
            self._upload(bp, f"bias of {op.name!r}"),
            out,
            *_i(k, nout),
            *_epilogue(chain),
        ]

    def _args_matmul(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        sa, sb, so = self._shape(op.inputs[0]), self._shape(op.inputs[1]), self._shape(op.outputs[0])
        if len(so) > 4:
            raise BackendError(f"opencl backend: matmul {op.name!r} has {len(so) - 2} batch axes; at most 2 run")
        m, k, n = sa[-2], sa[-1], sb[-1]
        batch = (1,) * (4 - len(so)) + so[:-2]

        def batch_strides(shape: tuple[int, ...]) -> list[int]:
            b = (1,) * (2 - len(shape[:-2])) + shape[:-2]
            per = shape[-2] * shape[-1]
            return [0 if b[0] == 1 else b[1] * per, 0 if b[1] == 1 else per]

        return [
            self.buffers[op.inputs[0]],
            self.buffers[op.inputs[1]],
            out,
            *_i(m, k, n, batch[1], *batch_strides(sa), *batch_strides(sb)),
        ]

    def _args_pool2d(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        _, _, ih, iw = self._shape(op.inputs[0])
        _, _, oh, ow = self._shape(op.outputs[0])
        a = op.attrs
        is_avg = op.type == "avg_pool2d"
        xtiles = -(-ow // (pk.attrs["vector_width"] * pk.attrs["pixel_vectors"]))
        n, c = self._shape(op.inputs[0])[:2]
        return [
            self.buffers[op.inputs[0]],
            out,
            *_i(
                n * c,
                ih,
                iw,
                oh,
                ow,
                xtiles,
                *a["pads"],
                int(is_avg and a["count_include_pad"]),
            ),
        ]

    def _args_global_pool(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        _, _, h, w_ = self._shape(op.inputs[0])
        return [self.buffers[op.inputs[0]], out, *_i(h * w_, int(op.type == "global_avg_pool"))]

    def _args_binary(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        if len(op.inputs) == 2:
            a, b = self.buffers[op.inputs[0]], self.buffers[op.inputs[1]]
            sa, sb = self._shape(op.inputs[0]), self._shape(op.inputs[1])
        else:
            const = self._weights[op.name]["const"]
            cbuf = self._upload(const, f"constant of {op.name!r}")
            x, sx, sc = self.buffers[op.inputs[0]], self._shape(op.inputs[0]), tuple(op.attrs["const_shape"])
            a, b, sa, sb = (cbuf, x, sc, sx) if op.attrs["const_first"] else (x, cbuf, sx, sc)
        dims, stra, strb = broadcast_layout(self._shape(op.outputs[0]), sa, sb, op)
        return [a, b, out, *_i(dims[1], dims[2], dims[3], *stra, *strb, BINARY_OPS[op.type]), *_epilogue(chain)]

    def _args_activation(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        return [self.buffers[op.inputs[0]], out, *_i(numel(self._shape(op.inputs[0]))), *_epilogue(chain)]

    def _args_scale_shift(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        xs = self._shape(op.inputs[0])
        scale, shift = bn_scale_shift(self._weights[op.name], op.attrs["epsilon"])
        return [
            self.buffers[op.inputs[0]],
            self._upload(scale, f"scale of {op.name!r}"),
            self._upload(shift, f"shift of {op.name!r}"),
            out,
            *_i(xs[1], numel(xs[2:])),
            *_epilogue(chain),
        ]

    def _args_copy_slice(
        self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer | None
    ) -> list[Any]:
        if op.type in ("reshape", "flatten"):
            total = numel(self._shape(op.inputs[0]))
            return [self.buffers[op.inputs[0]], out, *_i(total, total, 0, total, 0)]
        outer, inner, sizes = concat_geometry(self.graph, op)
        whole = sum(sizes) * inner
        offset = sum(sizes[: pk.part]) * inner
        part = sizes[pk.part] * inner
        if op.type == "concat":
            return [self.buffers[op.inputs[pk.part]], out, *_i(part, part, 0, whole, offset)]
        return [self.buffers[op.inputs[0]], self.buffers[op.outputs[pk.part]], *_i(part, whole, offset, part, 0)]

    def _args_pad(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        xs, ys = self._shape(op.inputs[0]), self._shape(op.outputs[0])
        d, o = as_rank4(xs, "input", op), as_rank4(ys, "output", op)
        begins = list(op.attrs["pads"][: len(xs)])
        p = [0] * (4 - len(xs)) + begins
        mode = {"constant": 0, "reflect": 1, "edge": 2}[op.attrs["mode"]]
        return [self.buffers[op.inputs[0]], out, *_i(*d, o[1], o[2], o[3], *p, mode), np.float32(op.attrs["value"])]

    def _args_reduce(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        xs = self._shape(op.inputs[0])
        d = as_rank4(xs, "input", op)
        shift = 4 - len(xs)
        mask = sum(1 << (a + shift) for a in op.attrs["axes"])
        code = {"reduce_mean": 0, "reduce_max": 1, "reduce_sum": 2}[op.type]
        return [self.buffers[op.inputs[0]], out, *_i(*d, mask, code)]

    def _args_transpose(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        xs, ys = self._shape(op.inputs[0]), self._shape(op.outputs[0])
        o = as_rank4(ys, "output", op)
        strides = [numel(xs[i + 1 :]) for i in range(len(xs))]  # contiguous, in elements
        s = [0] * (4 - len(xs)) + [strides[p] for p in op.attrs["perm"]]
        return [self.buffers[op.inputs[0]], out, *_i(o[1], o[2], o[3], *s)]

    def _args_softmax(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        xs = self._shape(op.inputs[0])
        axis = op.attrs["axis"]
        return [self.buffers[op.inputs[0]], out, *_i(xs[axis], numel(xs[axis + 1 :]))]

    def _args_channel_shuffle(
        self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer
    ) -> list[Any]:
        _, c, h, w_ = self._shape(op.inputs[0])
        return [self.buffers[op.inputs[0]], out, *_i(c, op.attrs["groups"], h * w_)]

    def _args_resize(self, pk: PlannedKernel, chain: list[Operator], op: Operator, out: cl.Buffer) -> list[Any]:
        _, _, ih, iw = self._shape(op.inputs[0])
        _, _, oh, ow = self._shape(op.outputs[0])
        a = op.attrs
        # ONNX Runtime derives the scales from the requested sizes in float32: keep its rounding.
        return [
            self.buffers[op.inputs[0]],
            out,
            *_i(ih, iw, oh, ow, int(a["mode"] == "linear"), int(a["align_corners"])),
            np.float32(oh) / np.float32(ih),
            np.float32(ow) / np.float32(iw),
        ]

    # -- running -------------------------------------------------------------------------------

    def _host_inputs(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        arrays = {}
        for name in self.graph.inputs:
            if name not in feeds:
                raise BackendError(f"opencl backend: no value given for graph input {name!r}")
            arr = np.ascontiguousarray(feeds[name], dtype=self.dtype)
            if arr.shape != self._shape(name):
                raise BackendError(
                    f"opencl backend: input {name!r} has shape {list(arr.shape)}, the graph "
                    f"declares {list(self._shape(name))}"
                )
            arrays[name] = arr
        return arrays

    def _execute(self, feeds: Mapping[str, np.ndarray]) -> tuple[dict[str, np.ndarray], list[cl.Event], float]:
        host = self._host_inputs(feeds)  # converted before the clock starts
        outputs = {t: np.empty(self._shape(t), dtype=self.dtype) for t in self.graph.outputs}
        events: list[cl.Event] = []
        t0 = time.perf_counter_ns()
        try:
            for name, arr in host.items():
                cl.enqueue_copy(self.queue, self.buffers[name], arr, is_blocking=False)
            for launch in self.launches:
                events.append(
                    cl.enqueue_nd_range_kernel(self.queue, launch.kernel, launch.global_size, launch.local_size)
                )
            for name, arr in outputs.items():
                cl.enqueue_copy(self.queue, arr, self.buffers[name], is_blocking=False)
            self.queue.finish()
        except cl.Error as e:
            where = self.launches[len(events)].planned.name if len(events) < len(self.launches) else "a transfer"
            raise BackendError(f"opencl backend: running graph {self.graph.name!r} failed at {where}: {e}") from e
        wall_ms = (time.perf_counter_ns() - t0) / 1e6
        return outputs, events, wall_ms

    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run once; the graph outputs by name."""
        outputs, _, _ = self._execute(feeds)
        return outputs

    def run_timed(self, feeds: Mapping[str, np.ndarray]) -> RunTiming:
        """Run once and read the device's timestamps of every kernel."""
        _, events, wall_ms = self._execute(feeds)
        if not events:
            return RunTiming(wall_ms, 0.0, [])
        starts = [ev.profile.start for ev in events]
        ends = [ev.profile.end for ev in events]
        kernel_ms = [max(0, e - s) / 1e6 for s, e in zip(starts, ends, strict=True)]
        return RunTiming(wall_ms, max(0, max(ends) - min(starts)) / 1e6, kernel_ms)

    def release(self) -> None:
        """Drop the kernels and buffers (the programs stay cached for the device)."""
        self.queue.finish()
        self.launches.clear()
        self.buffers.clear()
        for buf in self._owned:
            buf.release()
        self._owned.clear()


def run_graph(
    found: FoundDevice,
    graph: Graph,
    feeds: Mapping[str, np.ndarray] | None = None,
    precision: str = "fp32",
    weight_seed: int = WEIGHT_SEED,
) -> dict[str, np.ndarray]:
    """Load and run a graph once on a device (inputs from ``make_inputs`` unless given)."""
    runner = GraphRunner(found, graph, precision=precision, weight_seed=weight_seed)
    try:
        return runner.run(feeds if feeds is not None else make_inputs(runner.graph))
    finally:
        runner.release()
