"""TensorFlow Lite's op-profiling summaries, formatted as ``benchmark_model`` writes them.

This mirrors ``tsl::Stat`` / ``StatsCalculator`` (``stats_calculator.cc``) and the
``ProfileSummary{Default,CSV,Proto}Formatter`` (``profile_summary_formatter.cc``): a "Run Order"
table, the ten slowest nodes, a summary by node type, then the short summary ("Timings
(microseconds): ...", "Memory (bytes): count=0", "N nodes observed"). Text tables are
tab-separated fixed-width columns with 3 decimals; CSV rows are ``, ``-separated with C++'s
default number formatting and the node name's commas turned into tabs. The LiteRT layout has no
``start`` column (node type width 40); the TensorFlow 2.8 one has it (node type width 24).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, field

import numpy as np

from tests.adb_double.tflite_model import ModelOp

RUN_HEADER = "Operator-wise Profiling Info for Regular Benchmark Runs:"
INIT_HEADER = "Profiling Info for Benchmark Initialization:"
TIME_LIMIT = 10  # StatSummarizerOptions::time_limit: rows of "Top by Computation Time"


def g(value: float) -> str:
    """A double as ``std::ostream`` prints it by default (``%g``, 6 significant digits)."""
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


class Stat:
    """``tsl::Stat<int64_t>``: first, newest, min, max, count, sum, sum of squares."""

    def __init__(self, samples: np.ndarray | list[int] | None = None) -> None:
        values = np.asarray(samples if samples is not None else [], dtype=np.int64)
        self.values = values
        self.count = int(values.size)
        self.first = int(values[0]) if self.count else 0
        self.newest = int(values[-1]) if self.count else 0
        self.min = int(values.min()) if self.count else 0
        self.max = int(values.max()) if self.count else 0
        self.sum = int(values.sum()) if self.count else 0
        self.squared_sum = float(np.square(values.astype(np.float64)).sum()) if self.count else 0.0

    def avg(self) -> float:
        """Mean as a double; 0 when empty (``quiet_NaN`` of an int64 is 0)."""
        return self.sum / self.count if self.count else 0.0

    def all_same(self) -> bool:
        """True when empty or every sample is equal."""
        return self.count == 0 or self.min == self.max

    def std_deviation(self) -> int:
        """Population standard deviation, truncated to int64 as ``Stat<int64_t>`` returns it."""
        if self.all_same():
            return 0
        variance = int(self.squared_sum / self.count - self.avg() * self.avg())
        return int(math.sqrt(max(variance, 0)))

    def percentile(self, p: int) -> int:
        """``StatWithPercentiles::percentile``: the element at size*p/100 of the sorted samples."""
        if not self.count:
            return 0
        ordered = np.sort(self.values)
        return int(ordered[-1] if p == 100 else ordered[self.count * p // 100])

    def output(self, percentiles: bool = False) -> str:
        """``OutputToStream``: ``count=.. first=.. curr=.. min=.. max=.. avg=.. std=..``."""
        if not self.count:
            text = "count=0"
        elif self.all_same():
            text = f"count={self.count} curr={self.newest}" + ("(all same)" if self.count > 1 else "")
        else:
            text = (
                f"count={self.count} first={self.first} curr={self.newest} min={self.min} max={self.max} "
                f"avg={g(self.avg())} std={self.std_deviation()}"
            )
        if percentiles:
            text += f" p5={self.percentile(5)} median={self.percentile(50)} p95={self.percentile(95)}"
        return text


@dataclass
class Detail:
    """One node of a summary: its samples (µs), start offsets (µs), memory (bytes)."""

    name: str
    type: str
    run_order: int
    elapsed: Stat
    start: Stat
    mem: Stat
    times_called: int


@dataclass
class Event:
    """One profiler event: a node's type and name, when it started in its run, how long it took."""

    type: str
    name: str
    elapsed_us: int
    start_us: int = 0
    mem_bytes: int = 0


@dataclass
class StatsCalculator:
    """Accumulates the events of one or more runs and formats them like ``tsl::StatsCalculator``."""

    csv: bool
    with_start: bool
    details: dict[str, Detail] = field(default_factory=dict)
    run_totals: list[int] = field(default_factory=list)

    @classmethod
    def from_runs(cls, runs: list[list[Event]], csv: bool, with_start: bool) -> StatsCalculator:
        """Build the summary of these runs (each a list of events in the order they happened)."""
        calc = cls(csv, with_start)
        order: dict[str, tuple[str, int]] = {}
        samples: dict[str, list[int]] = {}
        starts: dict[str, list[int]] = {}
        mems: dict[str, list[int]] = {}
        for run in runs:
            for node_num, ev in enumerate(run):
                if ev.name not in order:
                    order[ev.name] = (ev.type, node_num)
                samples.setdefault(ev.name, []).append(ev.elapsed_us)
                starts.setdefault(ev.name, []).append(ev.start_us)
                mems.setdefault(ev.name, []).append(ev.mem_bytes)
            calc.run_totals.append(sum(ev.elapsed_us for ev in run))
        for name, (kind, run_order) in order.items():
            calc.details[name] = Detail(
                name, kind, run_order, Stat(samples[name]), Stat(starts[name]), Stat(mems[name]), len(samples[name])
            )
        return calc

    @classmethod
    def from_matrix(
        cls, types: list[str], names: list[str], times: np.ndarray, csv: bool, with_start: bool
    ) -> StatsCalculator:
        """The summary of runs that each produced the same events: ``times[run, event]`` in µs.

        Events sharing a name (XNNPACK operators of two partitions) are one node, called twice a
        run; a node's start is its offset in the run (events 1 µs apart, the first at 5 µs).
        """
        calc = cls(csv, with_start)
        if times.size == 0:
            return calc
        starts = np.cumsum(times + 1, axis=1) - (times + 1) + 5
        columns: dict[str, list[int]] = {}
        for k, name in enumerate(names):
            columns.setdefault(name, []).append(k)
        for name, cols in columns.items():
            elapsed = times[:, cols].reshape(-1)
            calc.details[name] = Detail(
                name,
                types[cols[0]],
                cols[0],
                Stat(elapsed),
                Stat(starts[:, cols].reshape(-1)),
                Stat(np.zeros(elapsed.size, np.int64)),
                int(elapsed.size),
            )
        calc.run_totals = times.sum(axis=1).tolist()
        return calc

    @property
    def num_runs(self) -> int:
        """How many runs were summarized."""
        return len(self.run_totals)

    # -- formatting -------------------------------------------------------------------------------

    @property
    def type_width(self) -> int:
        return 24 if self.with_start else 40

    @staticmethod
    def _field(value: object, width: int) -> str:
        text = f"{value:.3f}" if isinstance(value, float) else str(value)
        return "\t" + text.rjust(width)

    def _header(self, title: str) -> str:
        line = f"============================== {title} ==============================\n"
        if self.csv:
            start = "start, " if self.with_start else ""
            return line + f"node type, {start}first, avg_ms, %, cdf%, mem KB, times called, name"
        f = self._field
        cols = f("[node type]", self.type_width) + (f("[start]", 17) if self.with_start else "")
        cols += f("[first]", 9) + f("[avg ms]", 9) + f("[%]", 8) + f("[cdf%]", 8) + f("[mem KB]", 10)
        return line + cols + f("[times called]", 9) + "\t[Name]"

    def _row(self, d: Detail, cumulative: int, total: int) -> str:
        first_ms = d.elapsed.first / 1000.0
        avg_ms = d.elapsed.avg() / 1000.0
        percent = d.elapsed.sum * 100.0 / total if total else float("nan")
        cdf = float(np.float32(cumulative) * np.float32(100.0) / np.float32(total)) if total else float("nan")
        mem_kb = d.mem.newest / 1000.0
        times = d.times_called // self.num_runs if self.num_runs else 0
        start_ms = d.start.avg() / 1000.0
        if self.csv:
            name = d.name.replace(",", "\t")
            start = f"{g(start_ms)}, " if self.with_start else ""
            return (
                f"{d.type}, {start}{g(first_ms)}, {g(avg_ms)}, {g(percent)}%, {g(cdf)}%, {g(mem_kb)}, {times}, {name}"
            )
        f = self._field
        row = f(d.type, self.type_width) + (f(start_ms, 17) if self.with_start else "")
        row += f(first_ms, 9) + f(avg_ms, 9) + f(percent, 7) + "%" + f(cdf, 7) + "%" + f(mem_kb, 10)
        return row + f(times, 9) + "\t" + d.name

    def _by_metric(self, title: str, by_time: bool, limit: int) -> str:
        details = list(self.details.values())
        if by_time:
            # Sorted on "%20.10f" of the average, largest first (ties: later-inserted first).
            details.sort(key=lambda d: (f"{d.elapsed.avg():20.10f}", d.run_order), reverse=True)
        else:
            details.sort(key=lambda d: d.run_order)
        total = sum(self.run_totals)
        lines = [self._header(title)]
        cumulative = 0
        for k, d in enumerate(details):
            if limit > 0 and k >= limit:
                break
            cumulative += d.elapsed.sum
            lines.append(self._row(d, cumulative, total))
        return "\n".join(lines) + "\n\n"

    def _by_node_type(self) -> str:
        runs = self.num_runs or 1
        count: dict[str, int] = {}
        time_us: dict[str, int] = {}
        called: dict[str, int] = {}
        mem: dict[str, int] = {}
        accumulated = 0
        for d in self.details.values():
            per_run = d.elapsed.sum // runs
            accumulated += per_run
            count[d.type] = count.get(d.type, 0) + 1
            time_us[d.type] = time_us.get(d.type, 0) + per_run
            called[d.type] = called.get(d.type, 0) + d.times_called // runs
            mem[d.type] = mem.get(d.type, 0) + d.mem.newest
        out = [f"Number of nodes executed: {len(self.details)}"]
        out.append("============================== Summary by node type ==============================")
        f = self._field
        if self.csv:
            out.append("node type, count, avg_ms, avg %, cdf %, mem KB, times called")
        else:
            out.append(
                f("[Node type]", self.type_width)
                + f("[count]", 9)
                + f("[avg ms]", 10)
                + f("[avg %]", 11)
                + f("[cdf %]", 11)
                + f("[mem KB]", 10)
                + f("[times called]", 10)
            )
        cdf = np.float32(0.0)
        for kind in sorted(time_us, key=lambda k: (time_us[k], k), reverse=True):
            ms = float(np.float32(time_us[kind]) / np.float32(1000.0))
            pct = np.float32(time_us[kind]) / np.float32(accumulated) * np.float32(100.0) if accumulated else 0.0
            cdf = np.float32(cdf + pct)
            mem_kb = float(np.float32(mem[kind]) / np.float32(1000.0))
            if self.csv:
                out.append(
                    f"{kind}, {count[kind]}, {g(ms)}, {g(float(pct))}%, {g(float(cdf))}%, {g(mem_kb)}, {called[kind]}"
                )
            else:
                out.append(
                    f(kind, self.type_width)
                    + f(count[kind], 9)
                    + f(ms, 10)
                    + f(float(pct), 10)
                    + "%"
                    + f(float(cdf), 10)
                    + "%"
                    + f(mem_kb, 10)
                    + f(called[kind], 9)
                )
        return "\n".join(out) + "\n\n"

    def short_summary(self) -> str:
        """``GetShortSummary``: the run totals, the (never updated) memory stat, the node count."""
        return (
            f"Timings (microseconds): {Stat(self.run_totals).output()}\n"
            "Memory (bytes): count=0\n"
            f"{len(self.details)} nodes observed\n"
        )

    def output_string(self) -> str:
        """``GetOutputString`` with the formatters' options: run order, top by time, by type."""
        return (
            self._by_metric("Run Order", False, 0)
            + self._by_metric("Top by Computation Time", True, TIME_LIMIT)
            + self._by_node_type()
        )

    def report(self) -> str:
        """``ProfileSummaryDefaultFormatter::GetOutputString`` for subgraph 0 alone."""
        if not self.num_runs:
            return ""
        return self.output_string() + self.short_summary() + "\n"


def sections(init: StatsCalculator, run: StatsCalculator) -> str:
    """``HandleOutput``'s text: each non-empty section as its header line then its report."""
    out = ""
    for header, calc in ((INIT_HEADER, init), (RUN_HEADER, run)):
        report = calc.report()
        if report:
            out += f"{header}\n{report}\n"
    return out


# -- proto mode ------------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field_bytes(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _field_int(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _field_float(number: int, value: float) -> bytes:
    return _varint(number << 3 | 5) + struct.pack("<f", value)


def _op_stat(stat: Stat, scale: float) -> bytes:
    variance = 0.0 if stat.all_same() else stat.squared_sum / stat.count - stat.avg() ** 2
    return b"".join(
        [
            _field_int(1, int(stat.first / scale)),
            _field_int(2, int(stat.newest / scale)),
            _field_int(3, int(stat.avg() / scale)),
            _field_float(4, math.sqrt(max(variance, 0.0)) / scale),
            _field_float(5, variance / scale / scale),
            _field_int(6, int(stat.min / scale)),
            _field_int(7, int(stat.max / scale)),
            _field_int(8, int(stat.sum / scale)),
            _field_int(9, stat.count),
        ]
    )


def _model_profile(calc: StatsCalculator, subgraph_name: str) -> bytes:
    ops = b""
    for d in sorted(calc.details.values(), key=lambda d: d.run_order):
        ops += _field_bytes(
            3,
            _field_bytes(1, d.type.encode())
            + _field_bytes(2, _op_stat(d.elapsed, 1.0))
            + _field_bytes(3, _op_stat(d.mem, 1000.0))
            + _field_int(4, d.times_called // max(calc.num_runs, 1))
            + _field_bytes(5, d.name.encode())
            + _field_int(6, d.run_order),
        )
    subgraph = _field_bytes(1, subgraph_name.encode()) + _field_int(2, 0) + ops
    return _field_bytes(1, subgraph)


def proto(init: StatsCalculator, run: StatsCalculator, subgraph_name: str) -> bytes:
    """A serialized ``tflite.profiling.BenchmarkProfilingData`` (profiling_info.proto)."""
    out = b""
    if init.num_runs:
        out += _field_bytes(2, _model_profile(init, subgraph_name))
    if run.num_runs:
        out += _field_bytes(3, _model_profile(run, subgraph_name))
    return out


# -- the GPU delegate's per-kernel events ----------------------------------------------------------
#
# Newer GPU delegates (OpenCL backend, delegate flag ``kTfLiteDelegateFlagsPerOperatorProfiling``)
# are not timed as one partition node: after a profiled run the delegate hands the profiler one
# ``DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT`` per OpenCL dispatch (``AddTfLiteProfilerEvents``),
# whose tag is the GPU node's label and whose metadata is the dispatch's index. The summarizer
# types the row by the label and names it ``Delegate/<label>:<index>``. A label is the GPU
# operation type and the GPU graph's node id (``convolution_2d 0``); merged element-wise nodes
# are chained with `` -> `` (``convolution_2d 0 -> add 1``). Dispatch times are the GPU's own
# (OpenCL event timestamps): the delegate's CPU-side work is in no row.

GPU_OPERATION_NAMES = {  # TFLite builtin -> the GPU delegate's OperationType string
    "CONV_2D": "convolution_2d",
    "DEPTHWISE_CONV_2D": "depthwise_convolution",
    "TRANSPOSE_CONV": "convolution_transposed",
    "FULLY_CONNECTED": "fully_connected",
    "BATCH_MATMUL": "batched_matmul",
    "AVERAGE_POOL_2D": "pooling_2d",
    "MAX_POOL_2D": "pooling_2d",
    "CONCATENATION": "concat",
    "ADD": "add",
    "MUL": "mul",
    "SUB": "sub",
    "DIV": "div",
    "MEAN": "mean",
    "PAD": "pad",
    "RESHAPE": "reshape",
    "SOFTMAX": "softmax",
    "RELU": "relu",
    "RELU6": "relu",
    "LOGISTIC": "sigmoid",
    "HARD_SWISH": "hard_swish",
    "TANH": "tanh",
    "RESIZE_BILINEAR": "resize",
    "STRIDED_SLICE": "slice",
}


# Element-wise operations the delegate links into the operation before them (the GPU graph's
# node merging, ``delegates/gpu/common/gpu_model.cc``): one dispatch, labels chained with " -> ".
GPU_LINKABLE = frozenset({"ADD", "MUL", "SUB", "DIV", "RELU", "RELU6", "LOGISTIC", "HARD_SWISH", "TANH"})


def gpu_label(builtin: str, node_id: int) -> str:
    """The GPU delegate's label for one node: its operation type and node id."""
    return f"{GPU_OPERATION_NAMES.get(builtin, builtin.lower())} {node_id}"


def gpu_dispatches(ops: list[ModelOp], cost_us: list[float]) -> list[tuple[str, float]]:
    """One partition's dispatches as (label, modelled time µs): a linkable element-wise node whose
    first input is the previous node's only output, read by nothing else, joins that node's
    dispatch (``convolution_2d 0 -> add 1``); a DEQUANTIZE (our writer's, of constant fp16
    weights) is no node of the GPU graph."""
    out: list[tuple[str, float]] = []
    readers: dict[int, int] = {}
    for op in ops:
        for t in op.inputs:
            readers[t] = readers.get(t, 0) + 1
    prev: ModelOp | None = None
    node_id = -1
    for op, us in zip(ops, cost_us, strict=True):
        if op.name == "DEQUANTIZE":  # of constant fp16 weights: the delegate folds it into a tensor
            continue
        node_id += 1
        label = gpu_label(op.name, node_id)
        linked = (
            prev is not None
            and op.name in GPU_LINKABLE
            and op.inputs[:1] == prev.outputs[:1]
            and len(prev.outputs) == 1
            and readers.get(prev.outputs[0], 0) == 1
        )
        if linked and out:
            head, head_us = out[-1]
            out[-1] = (f"{head} -> {label}", head_us + us)
        else:
            out.append((label, us))
        prev = op
    return out


def gpu_dispatch_columns(
    types: list[str],
    names: list[str],
    times: np.ndarray,
    gpu_columns: dict[int, list[tuple[str, float]]],
    overhead_us: float,
) -> tuple[list[str], list[str], np.ndarray]:
    """Replace each GPU partition column ``k`` of ``times[run, event]`` by its dispatches.

    ``gpu_columns[k]`` lists the partition's nodes as (GPU label, modelled time µs); each
    dispatch gets its share of the partition's time less ``overhead_us`` (the CPU-side work no
    dispatch event holds), in whole µs, at least 1.
    """
    out_types: list[str] = []
    out_names: list[str] = []
    columns: list[np.ndarray] = []
    for k, (kind, name) in enumerate(zip(types, names, strict=True)):
        nodes = gpu_columns.get(k)
        if not nodes:
            out_types.append(kind)
            out_names.append(name)
            columns.append(times[:, k])
            continue
        weights = np.asarray([w for _, w in nodes], dtype=np.float64)
        for i, (label, w) in enumerate(nodes):
            share = times[:, k].astype(np.float64) * w / (float(weights.sum()) + overhead_us)
            out_types.append(label)
            out_names.append(f"Delegate/{label}:{i}")
            columns.append(np.maximum(1, np.rint(share)).astype(np.int64))
    matrix = np.stack(columns, axis=1) if columns else np.zeros((times.shape[0], 0), np.int64)
    return out_types, out_names, matrix
