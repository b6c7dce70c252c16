"""Reading what TensorFlow Lite's ``benchmark_model`` writes: operator tables and summary lines.

``parse_op_profile`` reads the run-phase operator table ("Operator-wise Profiling Info for
Regular Benchmark Runs"), never the initialization one printed before it, from either the text
tables the tool logs (``--enable_op_profiling=true``) or the file written with
``--op_profiling_output_mode=csv --op_profiling_output_file=...`` (TensorFlow Lite's
``ProfileSummaryCSVFormatter``: the same sections, rows as ``, ``-separated fields). Both
generations are read: TensorFlow Lite 2.x tables with a ``start`` column and LiteRT tables
without it (whose XNNPACK node types hold spaces and commas, so rows are matched on their
numeric columns, not split). ``parse_summary`` reads the timing and memory lines the tool prints.
Bad or truncated input raises ``BenchmarkOutputError`` naming the line or section.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

RUN_SECTION = "Operator-wise Profiling Info for Regular Benchmark Runs:"
INIT_SECTION = "Profiling Info for Benchmark Initialization:"
RUN_ORDER_TITLE = "============================== Run Order =============================="

# The CSV formatter's column headers (``StatsCalculator::HeaderString`` with ``format_as_csv``).
CSV_HEADER_WITH_START = "node type, start, first, avg_ms, %, cdf%, mem KB, times called, name"
CSV_HEADER_NO_START = "node type, first, avg_ms, %, cdf%, mem KB, times called, name"
# The text tables' bracketed column headers after ``[node type]`` and the optional ``[start]``.
_TEXT_COLUMNS = ["first", "avg ms", "%", "cdf%", "mem KB", "times called", "Name"]

# A log prefix before the tool's own text: ``INFO: `` (stderr), or an Android logcat one
# (``07-08 15:34:26.201 I/tflite  ( 5395): ``).
_PREFIX = re.compile(r"^(?:\d\d-\d\d \d\d:\d\d:\d\d\.\d+\s+[VDIWEF]/\S+\s*\(\s*\d+\):\s?|INFO: )")
_NUM = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf"


class BenchmarkOutputError(ValueError):
    """``benchmark_model`` output that cannot be read; the message names the line or section."""


class ToolVersion(enum.StrEnum):
    """Which generation of the tool wrote a table, told by its columns."""

    TFLITE_START_COLUMN = "tflite-2.x-start-column"  # TensorFlow Lite up to 2.1x: has ``start``
    LITERT_NO_START = "litert-no-start-column"  # LiteRT / newer TFLite: no ``start`` column


class OutputMode(enum.StrEnum):
    """How the operator table was written: logged text tables or the CSV file."""

    TEXT = "text"
    CSV = "csv"


@dataclass(frozen=True)
class OperatorRow:
    """One node of the run-phase table, in run order; times in milliseconds."""

    node_type: str  # CONV_2D, or a delegate kernel such as "Convolution (NHWC, QC8) IGEMM"
    start_ms: float | None  # average start offset in the run; None where the tool omits it
    first_ms: float
    avg_ms: float
    percent: float
    cdf_percent: float
    mem_kb: float
    times_called: int
    name: str  # "[MobilenetV1/.../Relu6]:0" or "Delegate/Add (ND, QS8):9"


@dataclass(frozen=True)
class OperatorProfile:
    """The run-phase operator table of one benchmark, with how and by which tool it was written."""

    rows: tuple[OperatorRow, ...]
    version: ToolVersion
    mode: OutputMode
    skipped_init_table: bool  # an initialization table came first and was left out


@dataclass(frozen=True)
class RunStats:
    """A ``count=.. first=.. curr=.. min=.. max=.. avg=.. std=..`` line, in microseconds."""

    count: int
    curr_us: float | None  # None only for count=0
    first_us: float | None = None  # None when the tool printed "(all same)" or count=0
    min_us: float | None = None
    max_us: float | None = None
    avg_us: float | None = None
    std_us: float | None = None
    median_us: float | None = None  # LiteRT prints p5, median and p95 after std; older tools do not
    p5_us: float | None = None
    p95_us: float | None = None
    all_same: bool = False


@dataclass(frozen=True)
class MemoryFootprint:
    """The memory lines, in MB: delta after init, overall delta, and the sampled peak if printed."""

    init_mb: float
    overall_mb: float
    peak_mb: float | None = None


@dataclass(frozen=True)
class RunSummary:
    """The summary of one ``benchmark_model`` run."""

    init_ms: float | None  # "Initialized session in X ms."
    init_us: float  # "Inference timings in us: Init: ..."
    first_inference_us: float
    warmup_avg_us: float
    inference_avg_us: float
    warmup: RunStats | None  # the warm-up runs' count= line
    inference: RunStats | None  # the timed runs' count= line
    memory: MemoryFootprint | None


# A row of the GPU delegate's per-dispatch events (LiteRT 2.x, OpenCL): the GPU node's label,
# its operation type and node id, merged element-wise nodes chained with " -> "
# ("convolution_2d 0 -> add 1"); the row is named "Delegate/<label>:<dispatch index>".
GPU_DISPATCH_LABEL = re.compile(
    r"^[a-z][a-z0-9_>\-]*(?: [a-z0-9_>\-]+)*? \d+(?: -> [a-z][a-z0-9_>\-]*(?: [a-z0-9_>\-]+)*? \d+)*$"
)


def gpu_dispatch_nodes(node_type: str) -> list[tuple[str, int]] | None:
    """The (operation type, GPU node id) pairs of a GPU delegate dispatch row's label, or None when
    the node type is not such a label (``convolution_2d 0 -> add 1`` -> ``[("convolution_2d", 0),
    ("add", 1)]``)."""
    if GPU_DISPATCH_LABEL.match(node_type) is None:
        return None
    out = []
    for part in node_type.split(" -> "):
        kind, _, node = part.rpartition(" ")
        out.append((kind, int(node)))
    return out


def _strip(line: str) -> str:
    """The line without a log prefix or trailing line ending."""
    return _PREFIX.sub("", line.rstrip("\r\n"), count=1)


def _row_pattern(with_start: bool, csv: bool) -> re.Pattern[str]:
    """A row: node type (lazy, may hold spaces and commas), the numeric columns, the name."""
    sep = r",[ \t]*" if csv else r"[ \t]+"
    nums = [rf"(?P<{key}>{_NUM})" for key in ("first", "avg")]
    if with_start:
        nums.insert(0, rf"(?P<start>{_NUM})")
    nums += [rf"(?P<pct>{_NUM})%", rf"(?P<cdf>{_NUM})%", rf"(?P<mem>{_NUM})", r"(?P<times>\d+)"]
    lead = r"[ \t]*" if not csv else ""
    return re.compile(rf"^{lead}(?P<type>.+?){sep}" + sep.join(nums) + rf"{sep}(?P<name>.*\S)[ \t]*$")


def _header_layout(header: str, line_no: int) -> tuple[bool, bool]:
    """(with_start, csv) told by a table's column-header line; refuses anything else."""
    flat = header.strip()
    if flat == CSV_HEADER_WITH_START:
        return True, True
    if flat == CSV_HEADER_NO_START:
        return False, True
    columns = re.findall(r"\[([^\]]+)\]", flat)
    if columns == ["node type", "start", *_TEXT_COLUMNS]:
        return True, False
    if columns == ["node type", *_TEXT_COLUMNS]:
        return False, False
    raise BenchmarkOutputError(f"line {line_no}: not an operator table header: {header.strip()!r}")


def parse_op_profile(text: str) -> OperatorProfile:
    """Read the run-phase "Run Order" operator table from ``benchmark_model`` text or CSV output."""
    lines = [_strip(line) for line in text.splitlines()]
    run_at = next((i for i, line in enumerate(lines) if line.strip() == RUN_SECTION), None)
    if run_at is None:
        raise BenchmarkOutputError(
            f"no {RUN_SECTION!r} section: not benchmark_model op-profiling output, or truncated before it"
        )
    skipped_init = any(line.strip() == INIT_SECTION for line in lines[:run_at])
    title_at = next(
        (i for i in range(run_at + 1, len(lines)) if lines[i].strip() == RUN_ORDER_TITLE),
        None,
    )
    if title_at is None:
        raise BenchmarkOutputError(f"line {run_at + 1}: the run section has no 'Run Order' table (output truncated?)")
    if title_at + 1 >= len(lines):
        raise BenchmarkOutputError(f"line {title_at + 1}: 'Run Order' table ends before its header")
    with_start, csv = _header_layout(lines[title_at + 1], title_at + 2)
    pattern = _row_pattern(with_start, csv)
    # Every line the tool writes ends with a newline: text that stops without one was cut off.
    cut_short = bool(text) and not text.endswith("\n")
    rows: list[OperatorRow] = []
    ended = False
    for i in range(title_at + 2, len(lines)):
        line = lines[i]
        if not line.strip():
            ended = True
            break
        if line.startswith("=" * 10):  # the next table's title without the blank line before it
            ended = True
            break
        match = pattern.match(line)
        if match is None and i == len(lines) - 1 and cut_short:
            raise BenchmarkOutputError(f"line {i + 1}: 'Run Order' table truncated inside its last row")
        if match is None:
            raise BenchmarkOutputError(f"line {i + 1}: not a 'Run Order' row: {line.strip()!r}")
        start = match.group("start") if with_start else None
        # The CSV formatter turns commas inside a name into tabs ("Delegate/Convolution (NHWC\t F32)
        # IGEMM:0"): give them back, so that a node reads the same in both output modes.
        node_type, name = match.group("type").strip(), match.group("name")
        if csv:
            node_type, name = node_type.replace("\t", ","), name.replace("\t", ",")
        rows.append(
            OperatorRow(
                node_type=node_type,
                start_ms=float(start) if start is not None else None,
                first_ms=float(match.group("first")),
                avg_ms=float(match.group("avg")),
                percent=float(match.group("pct")),
                cdf_percent=float(match.group("cdf")),
                mem_kb=float(match.group("mem")),
                times_called=int(match.group("times")),
                name=name,
            )
        )
    if not ended and cut_short:  # the last row matched, but its numbers may be incomplete
        raise BenchmarkOutputError(f"line {len(lines)}: 'Run Order' table truncated inside its last row")
    if not rows:
        raise BenchmarkOutputError(f"line {title_at + 1}: 'Run Order' table of the run section has no rows")
    return OperatorProfile(
        rows=tuple(rows),
        version=ToolVersion.TFLITE_START_COLUMN if with_start else ToolVersion.LITERT_NO_START,
        mode=OutputMode.CSV if csv else OutputMode.TEXT,
        skipped_init_table=skipped_init,
    )


# ``count=N first=.. curr=.. min=.. max=.. avg=.. std=..``, LiteRT adding ``p5= median= p95=``; when
# every run took the same time: ``count=N curr=X(all same)``, the percentiles still after it.
_COUNT_LINE = re.compile(
    rf"^count=(?P<count>\d+)(?P<rest>(?:\s*\w+=(?:{_NUM})(?:\(all same\))?)*)\s*(?P<same>\(all same\))?\s*$"
)
_INIT_LINE = re.compile(rf"^Initialized session in (?P<ms>{_NUM}) ?ms\.?\s*$")
_TIMINGS_LINE = re.compile(
    rf"^Inference timings in us: Init: (?P<init>{_NUM}), First inference: (?P<first>{_NUM}), "
    rf"Warmup \(avg\): (?P<warmup>{_NUM}), Inference \(avg\): (?P<inference>{_NUM})\s*$"
)
_MEMORY_LINE = re.compile(
    rf"^Memory footprint delta from the start of the tool \(MB\): init=(?P<init>{_NUM}) overall=(?P<overall>{_NUM})\s*$"
)
_PEAK_LINE = re.compile(rf"^Overall peak memory footprint \(MB\) via periodic monitoring: (?P<peak>{_NUM})\s*$")


def parse_run_stats(line: str) -> RunStats:
    """Read one ``count=.. first=.. curr=.. min=.. max=.. avg=.. std=..`` line (log prefix allowed)."""
    flat = _strip(line).strip()
    match = _COUNT_LINE.match(flat)
    if match is None:
        raise BenchmarkOutputError(f"not a benchmark_model 'count=' statistics line: {flat!r}")
    rest = match.group("rest")
    values = {key: float(value) for key, value in re.findall(rf"(\w+)=({_NUM})", rest)}
    count = int(match.group("count"))
    if count > 0 and "curr" not in values:
        raise BenchmarkOutputError(f"'count=' line without curr=: {flat!r}")
    return RunStats(
        count=count,
        curr_us=values.get("curr"),
        first_us=values.get("first"),
        min_us=values.get("min"),
        max_us=values.get("max"),
        avg_us=values.get("avg"),
        std_us=values.get("std"),
        median_us=values.get("median"),
        p5_us=values.get("p5"),
        p95_us=values.get("p95"),
        all_same=match.group("same") is not None or "(all same)" in rest,
    )


def parse_summary(text: str) -> RunSummary:
    """Read the init time, the warm-up and timed ``count=`` lines, the "Inference timings in us"
    line and the memory lines that ``benchmark_model`` prints after its runs."""
    init_ms: float | None = None
    stats: list[RunStats] = []
    timings: re.Match[str] | None = None
    memory: re.Match[str] | None = None
    peak: float | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _strip(raw).strip()
        if line.startswith("Initialized session in"):
            match = _INIT_LINE.match(line)
            if match is None:
                raise BenchmarkOutputError(f"line {number}: unreadable init line: {line!r}")
            init_ms = float(match.group("ms"))
        elif line.startswith("count="):
            try:
                stats.append(parse_run_stats(line))
            except BenchmarkOutputError as error:
                raise BenchmarkOutputError(f"line {number}: {error}") from None
        elif line.startswith("Inference timings in us:"):
            timings = _TIMINGS_LINE.match(line)
            if timings is None:
                raise BenchmarkOutputError(f"line {number}: unreadable 'Inference timings in us' line: {line!r}")
        elif line.startswith("Memory footprint delta"):
            memory = _MEMORY_LINE.match(line)
            if memory is None:
                raise BenchmarkOutputError(f"line {number}: unreadable memory footprint line: {line!r}")
        elif line.startswith("Overall peak memory footprint"):
            match = _PEAK_LINE.match(line)
            if match is None:
                raise BenchmarkOutputError(f"line {number}: unreadable peak memory line: {line!r}")
            peak = float(match.group("peak"))
    if timings is None:
        raise BenchmarkOutputError(
            "no 'Inference timings in us: Init: .., First inference: .., Warmup (avg): .., "
            "Inference (avg): ..' line: the run failed or the output was truncated"
        )
    return RunSummary(
        init_ms=init_ms,
        init_us=float(timings.group("init")),
        first_inference_us=float(timings.group("first")),
        warmup_avg_us=float(timings.group("warmup")),
        inference_avg_us=float(timings.group("inference")),
        warmup=stats[0] if len(stats) >= 2 else None,
        inference=stats[-1] if stats else None,
        memory=(
            MemoryFootprint(float(memory.group("init")), float(memory.group("overall")), peak)
            if memory is not None
            else None
        ),
    )
