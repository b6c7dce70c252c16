"""benchmark_model's operator tables and summary lines, read from real samples and the CSV layout."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from devicelab.backends.android.benchmark_output import (
    CSV_HEADER_NO_START,
    CSV_HEADER_WITH_START,
    INIT_SECTION,
    RUN_ORDER_TITLE,
    RUN_SECTION,
    BenchmarkOutputError,
    OutputMode,
    ToolVersion,
    parse_op_profile,
    parse_run_stats,
    parse_summary,
)

SAMPLES = "tflite_benchmark_samples"


def _shared_data() -> Path:
    """``$LATENCYLAB_QED_DATA``, else the first ``shared/data`` beside the checkout or a parent."""
    env = os.environ.get("LATENCYLAB_QED_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[4]
    for folder in (*repo.parents, Path("/work")):
        if (folder / "shared" / "data" / SAMPLES).is_dir():
            return folder / "shared" / "data"
    return repo.parent / "shared" / "data"


def _sample(name: str) -> str:
    path = _shared_data() / SAMPLES / name
    if not path.is_file():
        pytest.skip(f"{path} missing (see ../shared/data/README.md)")
    return path.read_text()


# An initialization table as the tool prints it before the run table (one row, TF 2.x layout).
INIT_TABLE_TF = (
    f"{INIT_SECTION}\n{RUN_ORDER_TITLE}\n"
    "\t             [node type]\t          [start]\t  [first]\t [avg ms]\t     [%]\t  [cdf%]\t"
    "  [mem KB]\t[times called]\t[Name]\n"
    "\t         AllocateTensors\t            0.000\t    1.356\t    1.356\t100.000%\t100.000%\t"
    "     0.000\t        1\tAllocateTensors/0\n\n"
)
INIT_TABLE_LITERT = (
    f"INFO: {INIT_SECTION}\n{RUN_ORDER_TITLE}\n"
    "                     [node type]          [first]        [avg ms]            [%]          [cdf%]"
    "          [mem KB]        [times called]  [Name]\n"
    "         ModifyGraphWithDelegate           12.500          12.500       90.000%        90.000%"
    "          2048.000                1       ModifyGraphWithDelegate/0\n"
    "                 AllocateTensors            1.389           1.389       10.000%       100.000%"
    "             0.000                1       AllocateTensors/0\n\n"
)


def test_tf28_text_table_parses_run_rows_and_skips_init_table() -> None:
    profile = parse_op_profile(INIT_TABLE_TF + _sample("tflite_tf28_op_profiling.txt"))
    assert profile.version is ToolVersion.TFLITE_START_COLUMN
    assert profile.mode is OutputMode.TEXT
    assert profile.skipped_init_table
    # Only the Run Order table: not the init table, nor "Top by Computation Time" nor by node type.
    assert len(profile.rows) == 5
    assert all(row.node_type != "AllocateTensors" for row in profile.rows)
    first = profile.rows[0]
    assert (first.node_type, first.start_ms, first.first_ms, first.avg_ms) == ("CONV_2D", 0.066, 87.754, 60.957)
    assert (first.percent, first.cdf_percent, first.mem_kb, first.times_called) == (2.066, 2.066, 0.0, 1)
    assert first.name == "[MobilenetV1/MobilenetV1/Conv2d_0/Relu6]:0"
    last = profile.rows[-1]
    assert (last.node_type, last.start_ms, last.avg_ms, last.cdf_percent) == ("SOFTMAX", 2950.011, 0.233, 100.0)
    assert last.name == "[MobilenetV1/Predictions/Reshape_1]:30"
    assert [row.node_type for row in profile.rows] == [
        "CONV_2D",
        "DEPTHWISE_CONV_2D",
        "CONV_2D",
        "AVERAGE_POOL_2D",
        "SOFTMAX",
    ]


def test_tf28_sample_alone_has_no_init_table() -> None:
    profile = parse_op_profile(_sample("tflite_tf28_op_profiling.txt"))
    assert not profile.skipped_init_table
    assert len(profile.rows) == 5


def test_litert_xnnpack_table_keeps_node_types_with_spaces_and_commas() -> None:
    profile = parse_op_profile(INIT_TABLE_LITERT + _sample("litert_xnnpack_op_profiling.txt"))
    assert profile.version is ToolVersion.LITERT_NO_START
    assert profile.skipped_init_table
    assert len(profile.rows) == 4
    assert all(row.start_ms is None for row in profile.rows)
    assert "ModifyGraphWithDelegate" not in {row.node_type for row in profile.rows}
    dw = profile.rows[2]
    assert dw.node_type == "Convolution (NHWC, QC8) DWConv"
    assert (dw.first_ms, dw.avg_ms, dw.percent, dw.cdf_percent, dw.times_called) == (0.428, 0.051, 4.317, 8.304, 13)
    assert dw.name == "Delegate/Convolution (NHWC, QC8) DWConv:1"
    assert profile.rows[0].name == "[tfl.quantize]:0"
    assert (profile.rows[3].node_type, profile.rows[3].cdf_percent) == ("Add (ND, QS8)", 22.58)


def _csv_file(header: str, rows: list[str]) -> str:
    """A file in ProfileSummaryCSVFormatter's layout: init section, then the run section."""
    init_row = "AllocateTensors, 0, 1.356, 1.356, 100%, 100%, 0, 1, AllocateTensors/0"
    if header == CSV_HEADER_NO_START:
        init_row = "AllocateTensors, 1.356, 1.356, 100%, 100%, 0, 1, AllocateTensors/0"
    by_type = "node type, count, avg_ms, avg %, cdf %, mem KB, times called\n"
    return (
        f"{INIT_SECTION}\n{RUN_ORDER_TITLE}\n{header}\n{init_row}\n\n"
        f"{by_type}AllocateTensors, 1, 1.356, 100%, 100%, 0, 1\n\n\n"
        f"{RUN_SECTION}\n{RUN_ORDER_TITLE}\n{header}\n" + "\n".join(rows) + "\n\n"
        "============================== Top by Computation Time ==============================\n"
        f"{header}\n{rows[0]}\n\n"
        "Number of nodes executed: 3\n"
        "============================== Summary by node type ==============================\n"
        f"{by_type}CONV_2D, 2, 120.5, 80%, 80%, 0, 2\n\n\n"
    )


def test_csv_with_start_column_parses_run_section() -> None:
    text = _csv_file(
        CSV_HEADER_WITH_START,
        [
            "CONV_2D, 0.066, 87.754, 60.957, 2.06631%, 2.06631%, 0, 1, [MobilenetV1/Conv2d_0/Relu6]:0",
            "DEPTHWISE_CONV_2D, 61.033, 53.628, 49.87, 1.69072%, 3.75703%, 0, 1, [MobilenetV1/Conv2d_1/Relu6]:1",
            "SOFTMAX, 2950.01, 0.23, 0.233, 0.0078%, 100%, 0, 1, [MobilenetV1/Predictions/Reshape_1]:30",
        ],
    )
    profile = parse_op_profile(text)
    assert profile.mode is OutputMode.CSV
    assert profile.version is ToolVersion.TFLITE_START_COLUMN
    assert profile.skipped_init_table
    assert [row.node_type for row in profile.rows] == ["CONV_2D", "DEPTHWISE_CONV_2D", "SOFTMAX"]
    assert profile.rows[1].start_ms == 61.033
    assert profile.rows[1].cdf_percent == 3.75703
    assert profile.rows[2].name == "[MobilenetV1/Predictions/Reshape_1]:30"


def test_csv_without_start_column_keeps_commas_inside_node_types() -> None:
    text = _csv_file(
        CSV_HEADER_NO_START,
        [
            "QUANTIZE, 0.199, 0.203, 1.328%, 1.328%, 0, 1, [tfl.quantize]:0",
            "Convolution (NHWC, QC8) IGEMM, 0.398, 0.407, 2.658%, 3.986%, 0, 1, "
            "Delegate/Convolution (NHWC, QC8) IGEMM:0",
            "Convolution (NHWC, QC8) DWConv, 0.428, 0.051, 4.317%, 8.304%, 0, 13, "
            "Delegate/Convolution (NHWC, QC8) DWConv:1",
        ],
    )
    profile = parse_op_profile(text)
    assert profile.version is ToolVersion.LITERT_NO_START
    assert profile.mode is OutputMode.CSV
    assert len(profile.rows) == 3
    conv = profile.rows[1]
    assert (conv.node_type, conv.name) == ("Convolution (NHWC, QC8) IGEMM", "Delegate/Convolution (NHWC, QC8) IGEMM:0")
    assert (profile.rows[2].times_called, profile.rows[2].avg_ms) == (13, 0.051)


SUMMARY = """\
INFO: Initialized session in 17.187ms.
INFO: Running benchmark for at least 1 iterations and at least 0.5 seconds but terminate if exceeding 150 seconds.
INFO: count=1 curr=3512391

INFO: Running benchmark for at least 50 iterations and at least 1 seconds but terminate if exceeding 150 seconds.
INFO: count=50 first=2990275 curr=2913402 min=2727568 max=3189954 avg=2.95034e+06 std=109798

INFO: Inference timings in us: Init: 17187, First inference: 3512391, Warmup (avg): 3.51239e+06, Inference (avg): 2.95034e+06
INFO: Note: as the benchmark tool itself affects memory footprint, the following is only APPROXIMATE to the actual memory footprint of the model at runtime. Take the information at your discretion.
INFO: Memory footprint delta from the start of the tool (MB): init=4.21094 overall=46.0859
INFO: Overall peak memory footprint (MB) via periodic monitoring: 93.2383
"""


def test_summary_lines_parse() -> None:
    summary = parse_summary(SUMMARY)
    assert summary.init_ms == 17.187
    assert (summary.init_us, summary.first_inference_us) == (17187.0, 3512391.0)
    assert (summary.warmup_avg_us, summary.inference_avg_us) == (3.51239e06, 2.95034e06)
    assert summary.warmup is not None and summary.warmup.count == 1 and summary.warmup.curr_us == 3512391.0
    timed = summary.inference
    assert timed is not None
    assert (timed.count, timed.first_us, timed.curr_us, timed.min_us, timed.max_us) == (
        50,
        2990275.0,
        2913402.0,
        2727568.0,
        3189954.0,
    )
    assert (timed.avg_us, timed.std_us) == (2.95034e06, 109798.0)
    assert summary.memory is not None
    assert (summary.memory.init_mb, summary.memory.overall_mb, summary.memory.peak_mb) == (4.21094, 46.0859, 93.2383)


def test_summary_from_logcat_with_percentiles_and_no_peak_line() -> None:
    prefix = "07-08 15:34:26.201 I/tflite  ( 5395): "
    text = "\n".join(
        prefix + line
        for line in (
            "Initialized session in 458.883ms.",
            "count=3 curr=2732148(all same)",
            "count=10 first=2653894 curr=2709263 min=2640862 max=3025403 avg=2.71985e+06 std=105101 "
            "p5=2640862 median=2709263 p95=3025403",
            "Inference timings in us: Init: 458883, First inference: 2732148, Warmup (avg): 2.73215e+06, "
            "Inference (avg): 2.71985e+06",
            "Memory footprint delta from the start of the tool (MB): init=286.73 overall=337",
        )
    )
    summary = parse_summary(text)
    assert summary.init_ms == 458.883
    assert summary.warmup is not None and summary.warmup.all_same and summary.warmup.first_us is None
    assert summary.inference is not None and summary.inference.std_us == 105101.0
    assert summary.memory is not None and summary.memory.overall_mb == 337.0 and summary.memory.peak_mb is None


def test_run_stats_line_alone() -> None:
    stats = parse_run_stats("count=0")
    assert (stats.count, stats.curr_us) == (0, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Segmentation fault\n", "no 'Operator-wise Profiling Info for Regular Benchmark Runs:' section"),
        (INIT_TABLE_TF, "no 'Operator-wise Profiling Info for Regular Benchmark Runs:' section"),
        (f"{RUN_SECTION}\n", "has no 'Run Order' table"),
        (f"{RUN_SECTION}\n{RUN_ORDER_TITLE}\n", "ends before its header"),
        (f"{RUN_SECTION}\n{RUN_ORDER_TITLE}\nnode, type, when\n", "line 3: not an operator table header"),
        (f"{RUN_SECTION}\n{RUN_ORDER_TITLE}\n{CSV_HEADER_WITH_START}\n\n", "has no rows"),
        (
            f"{RUN_SECTION}\n{RUN_ORDER_TITLE}\n{CSV_HEADER_WITH_START}\nCONV_2D, 0.1, abc, 1, 1%, 1%, 0, 1, x:0\n",
            "line 4: not a 'Run Order' row",
        ),
    ],
)
def test_bad_op_profiles_are_refused_with_the_place(text: str, message: str) -> None:
    with pytest.raises(BenchmarkOutputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_op_profile(text)


def test_table_cut_inside_its_last_row_is_refused() -> None:
    text = _sample("tflite_tf28_op_profiling.txt")
    cut = text[: text.index("[MobilenetV1/MobilenetV1/Conv2d_1_pointwise")]
    with pytest.raises(BenchmarkOutputError, match="line 6: 'Run Order' table truncated inside its last row"):
        parse_op_profile(cut)
    cut_in_number = text[: text.index("53.628") + 3]
    with pytest.raises(BenchmarkOutputError, match="line 5: 'Run Order' table truncated inside its last row"):
        parse_op_profile(cut_in_number)


def test_errors_are_value_errors() -> None:
    assert issubclass(BenchmarkOutputError, ValueError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("INFO: Initialized session in 17.187ms.\nINFO: count=1 curr=3512391\n", "no 'Inference timings in us"),
        ("Inference timings in us: Init: 17187, First inference: garbage\n", "line 1: unreadable 'Inference timings"),
        ("count=50 first=abc\n", "line 1: not a benchmark_model 'count=' statistics line"),
        ("Memory footprint delta from the start of the tool (MB): init=4.2\n", "line 1: unreadable memory footprint"),
    ],
)
def test_bad_summaries_are_refused_with_the_line(text: str, message: str) -> None:
    with pytest.raises(BenchmarkOutputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_summary(text)


def test_litert_count_lines_carry_percentiles_even_when_every_run_took_the_same_time() -> None:
    same = parse_run_stats("INFO: count=20 curr=15(all same) p5=15 median=15 p95=15")
    assert (same.count, same.curr_us, same.all_same, same.median_us, same.avg_us) == (20, 15.0, True, 15.0, None)
    full = parse_run_stats("count=10 first=20 curr=12 min=11 max=20 avg=12.5 std=2 p5=11 median=12 p95=20")
    assert (full.median_us, full.p5_us, full.p95_us, full.all_same) == (12.0, 11.0, 20.0, False)


def test_csv_names_get_their_commas_back() -> None:
    text = "\n".join(
        [
            "Operator-wise Profiling Info for Regular Benchmark Runs:",
            "============================== Run Order ==============================",
            CSV_HEADER_NO_START,
            "Convolution (NHWC\t F32) IGEMM, 0.5, 0.4, 50%, 50%, 0, 1, Delegate/Convolution (NHWC\t F32) IGEMM:0",
            "",
        ]
    )
    row = parse_op_profile(text).rows[0]
    assert row.node_type == "Convolution (NHWC, F32) IGEMM"
    assert row.name == "Delegate/Convolution (NHWC, F32) IGEMM:0"
