"""The declared shape of a profile's ``environment``: what a backend records beside its timings.

``ProfileResult.environment`` is stored as JSON (``JobResult.environment``) and read back by the
predictors, the job page and the API, so its keys are declared here once: every backend builds it
as a ``ProfileEnvironment`` and mypy checks each key it writes and each key a reader asks for.

Every key is optional (``total=False``): each backend writes its own subset (the CPU backend, the
OpenCL backend and a phone's), and rows stored by older workers hold what those wrote. The stored
JSON is exactly these dictionaries; nothing is renamed or wrapped. A test runs the CPU and OpenCL
backends and fails on any key they write that is not declared here
(``tests/devicelab/measure/test_environment.py``).
"""

from __future__ import annotations

from typing import Any, TypedDict, cast


class OtherProcessRecord(TypedDict):
    """A process that ran on the job's cores while the load was read (``machine_load.OtherProcess``)."""

    pid: int  # its process id
    name: str  # its name (the pid when it has none)
    cpu_percent: float  # its share of one core over the window


class MachineLoadRecord(TypedDict, total=False):
    """How busy the machine was when the timed runs began (``MachineLoad.as_dict``; a phone's own
    load average from ``/proc/loadavg`` holds the first three keys and ``summary``)."""

    load_average: list[float] | None  # 1, 5 and 15 minutes; None where the OS has none
    cores_online: int  # online logical cores
    cores_watched: list[int]  # the cores the job ran on (all online cores when not pinned)
    busy_percent: dict[str, float]  # per watched core (its id as a string), over the window
    steal_percent: float | None  # CPU steal of all cores over the window; None where the OS has no steal
    others: list[OtherProcessRecord]  # the busiest other processes on the watched cores
    others_not_listed: int  # further such processes, counted only
    window_s: float  # how long the cores were watched
    summary: str  # one line for the job page and a noise message


class NoiseAttempt(TypedDict):
    """One attempt of the noise policy (``Backend._profile_under_noise_policy``)."""

    cv: float  # the attempt's end-to-end coefficient of variation
    noisy: bool  # whether that CV was above the threshold
    central_ms: float  # its central end-to-end time (the median where there is one)
    machine_load: str | None  # the machine's load before it, in one line; None on a phone


class NoiseRecord(TypedDict):
    """What the noise policy did: its setting, the threshold and every attempt's spread."""

    policy: str  # settings.on_noise: keep, rerun or fail
    reruns_allowed: int  # attempts beyond the first the policy allowed
    threshold_cv: float  # the CV above which a result is noisy
    kept: int  # the index in ``attempts`` of the result kept
    attempts: list[NoiseAttempt]  # every attempt, in order


class MemoryRecord(TypedDict, total=False):
    """How the runtime's memory was read (CPU: the process's resident set; OpenCL: device buffers)."""

    rss_baseline_mb: float  # resident set before the session was created (``MemoryPeak``)
    rss_peak_mb: float  # its peak while the measured session loaded, ran once and warmed up
    above_baseline_mb: float  # the peak above the baseline: the session's footprint
    method: str  # how the peak was read: the kernel's high-water mark or sampling
    device_bytes: int  # OpenCL: bytes of device buffers, activations (with slack) and weights
    what: str  # what the figure covers, in words


class KernelConfigRecord(TypedDict):
    """The OpenCL kernels' tiling (``opencl.tiling.KernelConfig``)."""

    vector_width: int  # consecutive outputs a work-item computes along the innermost axis
    out_channels_per_item: int  # output channels a work-item computes (non-convolution kernels)
    conv_out_channels_per_item: int  # output channels a convolution's work-item computes


class CooldownRecord(TypedDict):
    """A phone's thermal cool-down before the run."""

    threshold_c: float  # the temperature waited for (°C)
    max_s: float  # the longest wait allowed (s)
    waited_s: float  # how long it waited (s)
    start_c: float | None  # the watched temperature when it began (°C; None: no zone read)
    end_c: float | None  # the watched temperature when the run began (°C)
    reached: bool  # whether the phone was at or below the threshold when the run began


class PhoneMemoryRecord(TypedDict):
    """Memory ``benchmark_model`` reports (MB; None where it printed no figure)."""

    init: float | None  # after initialization
    overall: float | None  # over the whole run
    peak: float | None  # the peak


class OpRowNotes(TypedDict):
    """How a phone's operator rows were matched to the graph (``android.op_mapping.op_timings``)."""

    op_rows: int  # rows the tool's operator profile holds
    op_rows_builtin: int  # rows of built-in (CPU) operators
    op_rows_delegate_per_op: int  # delegate rows naming one operator each
    op_rows_delegate_partition: int  # delegate rows timing a whole partition
    op_rows_unmatched: int  # rows no graph operator explains (kept as runtime rows)
    op_rows_shared_by_several_operators: int  # rows whose time several graph operators share


class HostLockRecord(TypedDict):
    """Whether the measurement held the host's processors alone (the lab machine's host lock)."""

    held: bool  # False: the lock is turned off, other devices of the host may have measured
    waited_s: float  # how long the job waited for another device's measurement to end
    note: str


class ProfileEnvironment(TypedDict, total=False):
    """What a profile records beside its timings: the runtime, the model, the machine, how it was measured."""

    # -- every backend
    runtime: str  # the runtime and its version ("onnxruntime 1.x", "pyopencl ...; OpenCL 3.0 PoCL ...", "tflite")
    runtime_version: str  # the runtime's own version string
    model_format: str  # what ran: the exported ONNX, an upload's format, or the OpenCL backend's own IR
    model_sha256: str | None  # SHA-256 of the model bytes that ran (None: no file ran)
    input_seed: int  # seed of the generated inputs
    weight_seed: int  # seed of the generated weights (absent when an upload's own weights ran)
    op_timing_source: str  # where the per-operator times come from
    threads: int  # threads the runtime was asked for (CPU, phone)
    cores: list[int]  # cores the run was pinned to ([]: not pinned)
    memory: MemoryRecord  # how the memory figure was read
    machine_load: MachineLoadRecord | None  # the load before the kept attempt (None: not read)
    noise: NoiseRecord  # the noise policy's attempts
    host_lock: HostLockRecord  # whether it held the host's processors alone (a lab machine's CPU devices)
    # -- the CPU backend (onnxruntime)
    providers: list[str]  # the session's execution providers
    inter_op_threads: int  # onnxruntime's inter-op threads
    execution_mode: str  # onnxruntime's execution mode
    graph_optimization_level: str  # onnxruntime's graph optimization level
    cpu_model: str  # the CPU's model name
    model_precision: str  # the graph's numeric precision (float32, int8, ...)
    affinity: list[int]  # the cores the measuring thread really ran on
    runtime_threads_affinity: list[str]  # the affinity lists of the runtime's pool threads
    kernel_nodes: int  # kernels in the optimized graph that was profiled
    kernel_owner: dict[str, str | None]  # kernel node -> the IR operator it computes (None: runtime)
    profiled_e2e_mean_ms: float  # mean end-to-end time of the profiled session's runs
    profiled_runs_dropped: int  # profiled runs dropped before the first block
    profiled_runs: int  # profiled runs kept
    blocks: list[int]  # timed runs per block when the sessions alternate ([]: one after the other)
    # -- the OpenCL backend
    platform: str  # the OpenCL platform's name
    device: str  # the OpenCL device's name
    driver_version: str  # the device's driver version
    precision: str  # the kernels' precision (fp32, fp16)
    threads_requested: int  # threads asked for (PoCL's pool on a CPU device)
    compute_units: int  # the device's compute units
    POCL_MAX_PTHREAD_COUNT: str | None  # PoCL's thread-pool size in force (None: the driver's default)
    threads_note: str  # why the threads in force differ from those asked for
    e2e_definition: str  # what one end-to-end sample times
    kernel_config: KernelConfigRecord  # the kernels' tiling
    build_options: dict[str, list[str]]  # "kernel/variant" -> the compiler options it was built with
    programs_built: int  # programs compiled for this run
    programs_cached: int  # programs taken from the cache
    build_ms: float  # time spent compiling programs
    buffer_bytes: int  # bytes of activation buffers (with slack)
    weight_bytes: int  # bytes of weight buffers
    kernels: int  # kernels launched per run
    plan: list[dict[str, Any]]  # each planned kernel (``PlannedKernel.as_dict``)
    device_span: dict[str, Any]  # first kernel start to last kernel end per run (``SampleStats.as_dict``)
    kernel_sum_mean_ms: float  # mean of the kernels' summed times per run
    # -- a phone (benchmark_model)
    tool_sha256: str  # SHA-256 of the benchmark_model binary
    tool_version: str  # the tool's generation, told by its table's columns
    op_profile_mode: str  # how the operator table was read: text or csv
    delegate: str  # the TFLite delegate (cpu, xnnpack, gpu, nnapi)
    cluster: str | None  # the named core cluster the cores form (None: none or mixed)
    taskset_mask: str | None  # the hex mask passed to the phone's taskset (None: not pinned)
    command: str  # the command run on the phone
    serial: str  # the phone's adb serial
    temperatures_before_c: dict[str, float]  # thermal zone -> °C before the run
    temperatures_after_c: dict[str, float]  # thermal zone -> °C after the run
    cooldown: CooldownRecord  # the cool-down wait before the run
    governors: dict[str, str]  # core -> cpufreq governor
    frequencies_khz_before: dict[str, int]  # core -> current frequency before the run
    frequencies_khz_after: dict[str, int]  # core -> current frequency after the run
    max_frequencies_khz: dict[str, int]  # core -> cpuinfo_max_freq
    frequency_caps_khz_after: dict[str, int]  # core -> scaling_max_freq after (lowered when throttled)
    # core -> samples, min_khz, max_khz of scaling_cur_freq read about once a second during the run
    frequencies_khz_during: dict[str, dict[str, int]]
    cooling_devices_before: dict[str, list[int]]  # cooling device type -> [cur_state, max_state]
    cooling_devices_after: dict[str, list[int]]  # the same after the run
    thermal_status_before: int | None  # Android's thermal status (0 NONE .. 6 SHUTDOWN; None: unknown)
    thermal_status_after: int | None  # the same after the run
    screen_on: bool | None  # whether the screen was on (None: unknown)
    charging: str  # ac, usb, wireless, none or unknown
    battery_level: int | None  # battery percent (None: unknown)
    memory_mb: PhoneMemoryRecord  # what the tool reports of memory
    init_ms: float  # the tool's initialization time
    first_inference_ms: float | None  # the tool's first inference (None: warmup_runs=0, not measured)
    warmup_avg_ms: float | None  # the tool's mean warm-up inference (None: no warm-up ran)
    e2e_source: str  # where the end-to-end figures come from
    e2e_p5_ms: float | None  # the tool's 5th percentile (None: not printed)
    e2e_p95_ms: float | None  # the tool's 95th percentile (None: not printed)
    op_rows: int  # rows of the tool's operator profile (``OpRowNotes``, as are the next five)
    op_rows_builtin: int  # rows of built-in (CPU) operators
    op_rows_delegate_per_op: int  # delegate rows naming one operator each
    op_rows_delegate_partition: int  # delegate rows timing a whole partition
    op_rows_unmatched: int  # rows no graph operator explains
    op_rows_shared_by_several_operators: int  # rows whose time several graph operators share


def stored_environment(value: object) -> ProfileEnvironment:
    """An environment read back from storage (``JobResult.environment``): a JSON object as it was
    stored, anything else (a missing or damaged value) empty.

    It is not checked key by key as a result crossing from a lab is (``devicelab.wire``): every
    key is optional, and a row written by an older worker may hold a key no backend writes today;
    such a row must stay readable, and readers treat each value as possibly absent."""
    return cast(ProfileEnvironment, dict(value)) if isinstance(value, dict) else ProfileEnvironment()


__all__ = [
    "CooldownRecord",
    "KernelConfigRecord",
    "MachineLoadRecord",
    "MemoryRecord",
    "NoiseAttempt",
    "NoiseRecord",
    "OpRowNotes",
    "OtherProcessRecord",
    "PhoneMemoryRecord",
    "ProfileEnvironment",
    "stored_environment",
]
