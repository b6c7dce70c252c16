"""``benchmark_model``'s command-line flags: the table, parsing, logging, usage, as the tool does.

Parsing follows ``tflite::Flags::Parse``: every flag is ``--name=value`` (a bare ``--name`` is not
one); each flag takes the first argument that spells it; values are read like
``std::istringstream`` reads them (``--num_threads=4x`` is 4); booleans are ``true``, ``false``,
``1`` or ``0``; what no flag took is reported as "Unconsumed cmdline flags". ``LogParams`` lines
(``Num threads: [4]``) appear for flags given on the command line (or always, for ``Graph``), in
the tool's order: the benchmark's own flags, the TFLite model's, then each delegate provider's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ALL = ("litert", "tf2.8")
LITERT = ("litert",)


@dataclass(frozen=True)
class Flag:
    """One flag: its parameter, type, default, help text, and its LogParams description."""

    name: str
    type: str  # "int32", "float", "bool" or "string"
    default: object
    help: str
    log: str | None = None  # LogParams description; None: not logged
    always: bool = False  # logged even when not given
    generations: tuple[str, ...] = ALL


def _f(name: str, type_: str, default: object, help_: str, log: str | None = None, **kw: object) -> Flag:
    return Flag(name, type_, default, help_, log, **kw)  # type: ignore[arg-type]


BENCHMARK_FLAGS = [
    _f("num_runs", "int32", 50, "expected number of runs, see also min_secs, max_secs", "Min num runs"),
    _f(
        "min_secs",
        "float",
        1.0,
        "minimum number of seconds to rerun for, potentially making the actual number of runs to be greater "
        "than num_runs",
        "Min runs duration (seconds)",
    ),
    _f(
        "max_secs",
        "float",
        150.0,
        "maximum number of seconds to rerun for, potentially making the actual number of runs to be less than "
        "num_runs. Note if --max-secs is exceeded in the middle of a run, the benchmark will continue to the end "
        "of the run but will not start the next run.",
        "Max runs duration (seconds)",
    ),
    _f("run_delay", "float", -1.0, "delay between runs in seconds", "Inter-run delay (seconds)"),
    _f(
        "run_frequency",
        "float",
        -1.0,
        "Execute at a fixed frequency, instead of a fixed delay.Note if the targeted rate per second cannot be "
        "reached, the benchmark would start the next run immediately, trying its best to catch up. If set, this "
        "will override run_delay.",
        "Number of prorated runs per second",
    ),
    _f("num_threads", "int32", -1, "number of threads", "Num threads"),
    _f(
        "use_caching",
        "bool",
        False,
        "Enable caching of prepacked weights matrices in matrix multiplication routines. Currently implies the "
        "use of the Ruy library.",
        "Use caching",
    ),
    _f("benchmark_name", "string", "", "benchmark name", "Benchmark name"),
    _f("output_prefix", "string", "", "benchmark output prefix", "Output prefix"),
    _f(
        "warmup_runs",
        "int32",
        1,
        "minimum number of runs performed on initialization, to allow performance characteristics to settle, "
        "see also warmup_min_secs",
        "Min warmup runs",
    ),
    _f(
        "warmup_min_secs",
        "float",
        0.5,
        "minimum number of seconds to rerun for, potentially making the actual number of warm-up runs to be "
        "greater than warmup_runs",
        "Min warmup runs duration (seconds)",
    ),
    _f(
        "verbose",
        "bool",
        False,
        "Whether to log parameters whose values are not set. By default, only log those parameters that are set "
        "by parsing their values from the commandline flags.",
    ),
    _f(
        "dry_run",
        "bool",
        False,
        "Whether to run the tool just with simply loading the model, allocating tensors etc. but without "
        "actually invoking any op kernels.",
        "Run w/o invoking kernels",
    ),
    _f(
        "report_peak_memory_footprint",
        "bool",
        False,
        "Report the peak memory footprint by periodically checking the memory footprint. Internally, a separate "
        "thread will be spawned for this periodic check. Therefore, the performance benchmark result could be "
        "affected.",
        "Report the peak memory footprint",
    ),
    _f(
        "memory_footprint_check_interval_ms",
        "int32",
        50,
        "The interval in millisecond between two consecutive memory footprint checks. This is only used when "
        "--report_peak_memory_footprint is set to true.",
        "Memory footprint check interval (ms)",
    ),
    _f(
        "gpu_invoke_loop_times",
        "int32",
        1,
        "Number of GPU delegate invoke loop iterations. If > 0 then reported latency is divided by this number. "
        "Used only when TFLITE_GPU_ENABLE_INVOKE_LOOP is defined.",
        generations=LITERT,
    ),
]

MODEL_FLAGS = [
    _f("graph", "string", "", "graph file name", "Graph", always=True),
    _f(
        "signature_to_run_for",
        "string",
        "",
        "If the model contains multiple signatures, use this flag to specify the signature to benchmark.",
        "Signature to run",
        always=True,
        generations=LITERT,
    ),
    _f(
        "list_signatures",
        "bool",
        False,
        "Displays all signatures present in the model and then terminates the program.",
        "List signatures from the provided model",
        generations=LITERT,
    ),
    _f("input_layer", "string", "", "input layer names", "Input layers"),
    _f("input_layer_shape", "string", "", "input layer shape", "Input shapes"),
    _f("input_layer_value_range", "string", "", "A map-like string representing value range", "Input value ranges"),
    _f("input_layer_value_files", "string", "", "A map-like string representing value file", "Input value files"),
    _f("allow_fp16", "bool", False, "allow fp16", "Allow fp16"),
    _f("require_full_delegation", "bool", False, "require delegate to run the entire graph", "Require full delegation"),
    _f("enable_op_profiling", "bool", False, "enable op profiling", "Enable op profiling"),
    _f(
        "op_profiling_output_mode",
        "string",
        "stdout",
        "Output mode for op profiling results. Supported values are: 'stdout', 'csv' and 'proto'.",
        "Op profiling output mode.",
        generations=LITERT,
    ),
    _f(
        "op_profiling_output_file",
        "string",
        "",
        "Output file for op profiling results.",
        "Op profiling output file.",
        generations=LITERT,
    ),
    _f(
        "max_profiling_buffer_entries",
        "int32",
        1024,
        "max initial profiling buffer entries",
        "Max initial profiling buffer entries",
    ),
    _f(
        "allow_dynamic_profiling_buffer_increase",
        "bool",
        False,
        "allow dynamic increase on profiling buffer entries",
        "Allow dynamic increase on profiling buffer entries",
    ),
    _f(
        "profiling_output_csv_file",
        "string",
        "",
        "[DEPRECATED: Use op_profiling_output_file and op_profiling_output_mode instead] File path to export "
        "profile data as CSV, if not set prints to stdout.",
        "CSV File to export profiling data to",
    ),
    _f(
        "print_preinvoke_state",
        "bool",
        False,
        "print out the interpreter internals just before calling Invoke.",
        "Print pre-invoke interpreter state",
    ),
    _f(
        "print_postinvoke_state",
        "bool",
        False,
        "print out the interpreter internals just before benchmark completes.",
        "Print post-invoke interpreter state",
    ),
    _f(
        "release_dynamic_tensors",
        "bool",
        False,
        "Ensure dynamic tensor's memory is released when they are not used.",
        "Release dynamic tensor memory",
    ),
    _f(
        "optimize_memory_for_large_tensors",
        "int32",
        0,
        "Optimize memory usage for large tensors with sacrificing latency.",
        "Optimize memory usage for large tensors",
    ),
    _f(
        "disable_delegate_clustering",
        "bool",
        False,
        "Disable delegate clustering.",
        "Disable delegate clustering",
        generations=LITERT,
    ),
    _f(
        "output_filepath",
        "string",
        "",
        "File path to export outputs layer as binary data.",
        "File path to export outputs layer to",
        generations=LITERT,
    ),
    _f(
        "result_file_path",
        "string",
        "",
        "Path to save the benchmark result in binary proto format.",
        "File path to save the benchmark result in binary proto format",
        generations=LITERT,
    ),
]

# Delegate providers, in the order they register (and log): default, external, GPU, Hexagon,
# NNAPI, XNNPACK.
PROVIDER_FLAGS = [
    _f("help", "bool", False, "Print out all supported flags if true.", "print out all supported flags"),
    _f("num_threads", "int32", -1, "number of threads used for inference on CPU.", "#threads used for CPU inference"),
    _f(
        "max_delegated_partitions",
        "int32",
        0,
        "Max number of partitions to be delegated.",
        "Max number of delegated partitions",
    ),
    _f(
        "min_nodes_per_partition",
        "int32",
        0,
        "The minimal number of TFLite graph nodes of a partition that has to be reached for it to be delegated.",
        "Min nodes per partition",
    ),
    _f(
        "delegate_serialize_dir",
        "string",
        "",
        "Directory to be used by delegates for serializing any model data.",
        "Directory for delegate serialization",
    ),
    _f(
        "delegate_serialize_token",
        "string",
        "",
        "Model-specific token acting as a namespace for delegate serialization.",
        "Model-specific token/key for delegate serialization.",
    ),
    _f(
        "external_delegate_path",
        "string",
        "",
        "The library path for the underlying external.",
        "External delegate path",
    ),
    _f(
        "external_delegate_options",
        "string",
        "",
        "A list of comma-separated options to be passed to the external delegate.",
        "External delegate options",
    ),
    _f("use_gpu", "bool", False, "use gpu", "Use gpu"),
    _f(
        "gpu_precision_loss_allowed",
        "bool",
        True,
        "Allow to process computation in lower precision than FP32 in GPU. By default, it's enabled.",
        "Allow lower precision in gpu",
    ),
    _f(
        "gpu_experimental_enable_quant",
        "bool",
        True,
        "Whether to enable the GPU delegate to run quantized models or not. By default, it's enabled.",
        "Enable running quant models in gpu",
    ),
    _f(
        "gpu_inference_for_sustained_speed",
        "bool",
        False,
        "Whether to prefer maximizing the throughput.",
        "Prefer maximizing the throughput in gpu",
    ),
    _f(
        "gpu_backend",
        "string",
        "",
        "Force the GPU delegate to use a particular backend for execution, and fail if "
        "unsuccessful. Should be one of: cl, gl",
        "GPU backend",
    ),
    _f("use_hexagon", "bool", False, "Use Hexagon delegate", "Use Hexagon"),
    _f(
        "hexagon_lib_path",
        "string",
        "/data/local/tmp",
        "The library path for the underlying Hexagon libraries.",
        "Hexagon lib path",
    ),
    _f("hexagon_profiling", "bool", False, "Enables Hexagon profiling", "Hexagon profiling"),
    _f("use_nnapi", "bool", False, "use nnapi delegate api", "Use NNAPI"),
    _f(
        "nnapi_execution_preference",
        "string",
        "",
        "execution preference for nnapi delegate.",
        "NNAPI execution preference",
    ),
    _f(
        "nnapi_execution_priority",
        "string",
        "",
        "The model execution priority in nnapi.",
        "Model execution priority in nnapi",
    ),
    _f(
        "nnapi_accelerator_name",
        "string",
        "",
        "the name of the nnapi accelerator to use (requires Android Q+)",
        "NNAPI accelerator name",
    ),
    _f("disable_nnapi_cpu", "bool", True, "Disable the NNAPI CPU device", "Disable NNAPI cpu"),
    _f("nnapi_allow_fp16", "bool", False, "Allow fp32 computation to be run in fp16", "Allow fp16 in NNAPI"),
    _f(
        "nnapi_allow_dynamic_dimensions",
        "bool",
        False,
        "Whether to allow dynamic dimension sizes without re-compilation.",
        "Allow dynamic dimensions in NNAPI",
    ),
    _f("nnapi_use_burst_mode", "bool", False, "use NNAPI Burst mode if supported.", "Use burst mode in NNAPI"),
    _f(
        "use_xnnpack",
        "bool",
        False,
        "explicitly apply the XNNPACK delegate. Note the XNNPACK delegate could be "
        "implicitly applied by the TF Lite runtime regardless the value of this parameter. To disable this implicit "
        "application, set the value to false explicitly.",
        "Use xnnpack",
    ),
    _f("xnnpack_force_fp16", "bool", False, "enforce float16 inference.", "xnnpack_force_fp16"),
    _f(
        "xnnpack_weight_cache_file_path",
        "string",
        "",
        "enable file-backed weight caching.",
        "xnnpack_weight_cache_file_path",
        generations=LITERT,
    ),
]
NNAPI_DETAILS = {
    "nnapi_execution_preference",
    "nnapi_execution_priority",
    "nnapi_accelerator_name",
    "disable_nnapi_cpu",
    "nnapi_allow_fp16",
    "nnapi_allow_dynamic_dimensions",
    "nnapi_use_burst_mode",
}


def flags_for(generation: str) -> list[Flag]:
    """The flags of one generation of the tool, in ``GetFlags`` order."""
    return [f for f in BENCHMARK_FLAGS + MODEL_FLAGS + PROVIDER_FLAGS if generation in f.generations]


def _leading_number(text: str, kind: str) -> object | None:
    pattern = (
        r"\s*[-+]?\d+" if kind == "int32" else r"\s*[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
    )
    match = re.match(pattern, text, re.IGNORECASE)
    if match is None:
        # An empty value leaves the stream at eof with a zero read: accepted, like the tool does.
        return 0 if not text.strip() else None
    value = match.group().strip()
    if kind == "int32":
        number = int(value)
        return max(-(2**31), min(2**31 - 1, number))
    return float(value)


def parse_value(flag: Flag, text: str) -> tuple[bool, object]:
    """(ok, value) the way ``Flag::Parse`` reads a value of this flag's type."""
    if flag.type == "bool":
        if text not in ("true", "false", "0", "1"):
            return False, None
        return True, text in ("true", "1")
    if flag.type == "string":
        return True, text
    value = _leading_number(text, flag.type)
    return (value is not None), value


@dataclass
class Params:
    """Parameter values, which were given on the command line, and where (delegate ranking)."""

    values: dict[str, object] = field(default_factory=dict)
    given: dict[str, int] = field(default_factory=dict)  # name -> argv position

    def __getitem__(self, name: str) -> object:
        return self.values[name]

    def as_int(self, name: str) -> int:
        value = self.values[name]
        assert isinstance(value, int)
        return value

    def as_float(self, name: str) -> float:
        value = self.values[name]
        assert isinstance(value, (int, float))
        return float(value)

    def as_bool(self, name: str) -> bool:
        return bool(self.values[name])

    def as_str(self, name: str) -> str:
        return str(self.values[name])


@dataclass
class ParseResult:
    """What parsing the command line gave."""

    params: Params
    errors: list[str]  # "Failed to parse flag ..." lines
    unconsumed: list[str]
    ok: bool


def parse(argv: list[str], flags: list[Flag]) -> ParseResult:
    """``Flags::Parse`` over ``argv`` (``argv[0]`` is the program)."""
    params = Params({f.name: f.default for f in flags})
    consumed = [False] * len(argv)
    processed: dict[str, int] = {}
    errors: list[str] = []
    ok = True
    for flag in flags:
        if flag.name in processed:
            position = processed[flag.name]
            if position >= 0:
                good, value = parse_value(flag, argv[position].split("=", 1)[1])
                if good:
                    params.values[flag.name] = value
            continue
        found = -1
        for i in range(1, len(argv)):
            if consumed[i] or not argv[i].startswith(f"--{flag.name}="):
                continue
            good, value = parse_value(flag, argv[i][len(flag.name) + 3 :])
            if not good:
                errors.append(f"Failed to parse flag '{flag.name}' against argv '{argv[i]}'")
                ok = False
            else:
                params.values[flag.name] = value
                params.given[flag.name] = i
            consumed[i] = True
            found = i
            break
        processed[flag.name] = found
    unconsumed = [a for i, a in enumerate(argv) if i > 0 and not consumed[i]]
    if unconsumed[:1] == ["--help"]:
        ok = False
    return ParseResult(params, errors, unconsumed, ok)


def display(value: object) -> str:
    """A value as the tool's ``<<`` prints it in LogParams (booleans as 1/0, floats as %g)."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def usage(program: str, flags: list[Flag]) -> str:
    """``Flags::Usage``: one tab-separated line per flag with its default, type and help."""
    names = []
    for f in flags:
        default = ("true" if f.default else "false") if f.type == "bool" else display(f.default)
        names.append(f"--{f.name}={default}")
    width = max(len(n) for n in names)
    lines = [f"usage: {program} <flags>", "Flags:"]
    lines += [f"\t{n.ljust(width)}\t{f.type}\toptional\t{f.help}" for n, f in zip(names, flags, strict=True)]
    return "\n".join(lines) + "\n"


def log_lines(params: Params, flags: list[Flag], nnapi_devices: list[str]) -> list[str]:
    """The LogParams lines, in order (without the log prefix)."""
    verbose = params.as_bool("verbose")
    lines = [f"Log parameter values verbosely: [{display(verbose)}]"]
    for flag in flags:
        if flag.log is None:
            continue
        if flag.name in NNAPI_DETAILS and not params.as_bool("use_nnapi"):
            continue
        if flag.name == "disable_nnapi_cpu" and nnapi_devices:
            lines.append(f"NNAPI accelerators available: [{','.join(nnapi_devices)}]")
        if verbose or flag.always or flag.name in params.given:
            lines.append(f"{flag.log}: [{display(params[flag.name])}]")
    return lines
