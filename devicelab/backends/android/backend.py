"""The Android backend: phones on the lab machine's adb server, measured with TensorFlow Lite's
``benchmark_model``.

Configuration (environment): ``LATENCYLAB_ADB_SERVER`` (``host:port`` of the adb server,
default ``127.0.0.1:5037``) and ``LATENCYLAB_TFLITE_BENCHMARK_MODEL`` (the lab's
``benchmark_model`` binary for the phones' ABI; we cannot ship it). Without the binary, phones
are still discovered; their jobs fail saying that no binary is configured.

A job on a phone, in order (``docs/phones.md`` has the reasons):

1. the binary is pushed to ``/data/local/tmp/latencylab`` when its sha256 there differs, the
   model beside it under its own sha256 (an uploaded ``.tflite`` as uploaded; any other graph
   through our TFLite writer, fp16 weights for ``precision=fp16``);
2. cool-down: the battery's and the CPU zones' temperatures are read until the hottest is below
   ``cooldown_c`` (default 40 °C), for at most ``cooldown_max_s`` (default 120 s);
3. the state before (all thermal zones, governors and frequencies of the cores used, screen,
   charging) is recorded, the tool runs (pinned with ``taskset`` when cores are asked for) with
   exact warm-up and run counts and per-operator profiling into a CSV, and the state after is
   recorded;
4. the result: end-to-end statistics as the tool reports them (count, avg, std, min, max; no
   per-run samples exist), cold start (init, first inference), memory footprint, one row per
   operator (``op_mapping``), flags when the phone was hot or throttled;
5. with ``settings.cold_runs`` > 1, that many more cold starts, each its own ``benchmark_model``
   process (one warm-up run, one timed run, no profiling): its ``Init`` and ``First inference``.

Infrastructure failures (adb, unplugged, timeouts) raise ``DeviceLost``; a run the tool fails
raises ``BackendError`` with the tool's message (``tool_run.check_exit``).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from devicelab.backends.android import adb, image_eval, phone_state, tool_run
from devicelab.backends.android.adb import ensure_file
from devicelab.backends.android.benchmark_output import (
    BenchmarkOutputError,
    OperatorProfile,
    RunSummary,
    gpu_dispatch_nodes,
    parse_op_profile,
    parse_summary,
)
from devicelab.backends.android.op_mapping import ModelNode, nodes_from_export, nodes_from_upload, op_timings
from devicelab.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    ColdStart,
    DeviceInfo,
    DeviceLost,
    ModelFile,
    ProfileResult,
    ProgressFn,
)
from devicelab.backends.profile_settings import DELEGATES, MAX_COLD_RUNS, ProfileSettings
from devicelab.graph.ir import Graph
from devicelab.measure.breakdown import TimeBreakdown
from devicelab.measure.cold_starts import FRESH_PROCESS, ColdSample, ColdStarts
from devicelab.measure.environment import CooldownRecord, MachineLoadRecord, ProfileEnvironment
from devicelab.measure.harness import Harness
from devicelab.measure.stats import SampleStats, from_aggregate

log = logging.getLogger(__name__)

KIND = "android"
TOOL_ENV = "LATENCYLAB_TFLITE_BENCHMARK_MODEL"
RUNTIME = "TensorFlow Lite benchmark_model"
DEFAULT_COOLDOWN_C = 40.0
DEFAULT_COOLDOWN_MAX_S = 120.0
COOLDOWN_POLL_S = 2.0
# The run's time limit: generous per run, since a phone runs a big model in seconds.
RUN_TIMEOUT_BASE_S = 300.0
RUN_TIMEOUT_PER_RUN_S = 30.0


def configured_tool(environ: Mapping[str, str] | None = None) -> Path | None:
    """The ``benchmark_model`` binary the lab configured, or None."""
    raw = (os.environ if environ is None else environ).get(TOOL_ENV, "").strip()
    return Path(raw) if raw else None


def _tool_bytes() -> bytes:
    path = configured_tool()
    if path is None:
        raise BackendError(
            f"no benchmark_model configured: set {TOOL_ENV} on the worker to TensorFlow Lite's benchmark_model "
            "binary for the phones' ABI (see the README, 'Connect your phones')"
        )
    try:
        return path.read_bytes()
    except OSError as e:
        raise BackendError(f"{TOOL_ENV}={path}: cannot read the benchmark_model binary: {e.strerror}") from None


def identity_of(serial: str) -> str:
    """A phone's device identity: its adb serial."""
    return f"{KIND}:{serial}"


@functools.lru_cache(maxsize=8)
def _abi_of(path: Path, mtime_ns: int, size: int) -> str | None:
    """The ABI in a binary's ELF header, read once per version of the file (its path, mtime, size)."""
    try:
        with path.open("rb") as f:
            return tool_run.binary_abi(f.read(64))
    except OSError:
        return None


def configured_tool_abi() -> str | None:
    """The ABI the configured ``benchmark_model`` is built for, or None (none configured, not an
    ELF file of a known ABI)."""
    path = configured_tool()
    if path is None:
        return None
    try:
        st = path.stat()
    except OSError:
        return None
    return _abi_of(path, st.st_mtime_ns, st.st_size)


def abi_refusal(desc: phone_state.PhoneDescription) -> str:
    """Why this phone cannot run the configured binary (its ABI is not in the phone's
    ``ro.product.cpu.abilist``); empty when it can, or when either side is unknown."""
    return tool_run.abi_refusal(configured_tool_abi(), list(desc.hardware.get("abilist") or []))


def capabilities(desc: phone_state.PhoneDescription) -> Capabilities:
    """What a phone runs: ``.tflite`` models through benchmark_model, on any of its delegates,
    on any of its cores or named clusters, fp32 or fp16, with a thermal cool-down; no job at all
    when the configured binary is built for an ABI the phone does not run."""
    sdk = desc.hardware.get("sdk") or 0
    delegates = tuple(d for d in DELEGATES if d != "nnapi" or sdk >= 27)  # NNAPI 1.1 came with Android 8.1
    return Capabilities(
        precisions=("fp32", "fp16"),
        max_threads=max(1, len(desc.cores)),
        pins_cores=True,
        cores=tuple(desc.cores),
        runtimes=(RUNTIME,),
        formats=("tflite",),
        delegates=delegates,
        core_clusters={c["name"]: tuple(c["cores"]) for c in desc.clusters},
        cools_down=True,
        max_cold_runs=MAX_COLD_RUNS,
        refuses=abi_refusal(desc),
    )


def device_info(desc: phone_state.PhoneDescription) -> DeviceInfo:
    """The device a phone registers as."""
    tool = configured_tool()
    hardware = dict(desc.hardware)
    hardware["runtime"] = RUNTIME if tool is not None else f"{RUNTIME}: none configured ({TOOL_ENV} unset)"
    caps = capabilities(desc)
    if tool is not None:
        hardware["tool_abi"] = configured_tool_abi() or "unknown (not an ELF header we know)"
    if caps.refuses:
        hardware["runtime"] = f"{RUNTIME}: takes no jobs: {caps.refuses}"
    return DeviceInfo(KIND, identity_of(desc.serial), desc.name, hardware, caps)


def waiting_info(serial: str, state: str) -> DeviceInfo:
    """The row of a phone adb lists but that cannot be described yet (``unauthorized`` until its
    USB debugging prompt is accepted, ``offline``): its serial and state, taking no job, so that
    it is listed with its reason instead of missing; described and registered anew once ready."""
    reason = adb.state_reason(state)
    return DeviceInfo(
        KIND,
        identity_of(serial),
        f"{serial} ({state})",
        {"serial": serial, "adb_state": state, "runtime": f"{RUNTIME}: not ready: {reason}"},
        Capabilities(refuses=f"phone {serial}: {reason}"),
    )


def discover() -> list[DeviceInfo]:
    """The phones on the adb server that are ready (``device`` state), described."""
    client = adb.client()
    found = []
    try:
        listed = adb.attached(client)
    except DeviceLost as e:  # no adb server on this machine: no phones, and no traceback
        log.info("android backend: %s", e)
        return []
    for a in listed:
        if a.state != "device":
            continue
        try:
            found.append(device_info(phone_state.describe(adb.PhoneLink(client, a.serial))))
        except DeviceLost:  # unplugged while being described: the tracker sees it come back
            continue
    return found


def describe_serial(serial: str) -> DeviceInfo:
    """One phone by serial (the agent's tracker, for a phone plugged in while it runs)."""
    return device_info(phone_state.describe(adb.PhoneLink(adb.client(), serial)))


def _serial_of(device: DeviceInfo) -> str:
    return str(device.hardware.get("serial") or device.identity.split(":", 1)[-1])


def absent_reason(device: DeviceInfo) -> str | None:
    """Why a phone is not usable now, from its adb state (``absent``, ``offline``,
    ``unauthorized``), or None when adb lists it as ``device``."""
    serial = _serial_of(device)
    try:
        state = adb.PhoneLink(adb.client(timeout=10), serial).state()
    except DeviceLost as e:  # the adb server itself does not answer
        return str(e)
    except ValueError:  # LATENCYLAB_ADB_SERVER is not host:port: the run says so, naming it
        return None
    return None if state == "device" else f"phone {serial}: {adb.state_reason(state)}"


# ---------------------------------------------------------------------------------------------


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _model_path(data: bytes) -> str:
    """Where a model's bytes live on the phone: under their own sha256."""
    return f"{tool_run.REMOTE_DIR}/models/{_sha256(data)[:32]}.tflite"


def _model_bytes(
    graph: Graph, settings: ProfileSettings, model_file: ModelFile | None
) -> tuple[bytes, list[ModelNode], str]:
    """The .tflite to run, its nodes, and how it was made."""
    if model_file is not None and model_file.format == "tflite":
        return model_file.data, nodes_from_upload(model_file.data, graph), "tflite as uploaded"
    from devicelab.graph.tflite.writer import graph_to_tflite

    precision = "fp16" if settings.precision == "fp16" else "fp32"
    export = graph_to_tflite(graph, precision=precision)
    return export.data, nodes_from_export(export.ops, graph), f"tflite written by latencylab ({precision} weights)"


def _check(device: DeviceInfo, settings: ProfileSettings) -> tuple[str, tuple[int, ...]]:
    """The delegate to use and the cores to pin (sorted); ``ValueError`` for what a phone cannot do."""
    if device.kind != KIND:
        raise ValueError(f"the android backend cannot profile a {device.kind!r} device")
    if settings.backend != KIND:
        raise ValueError(f"settings ask for backend {settings.backend!r}, this is the android backend")
    if settings.precision not in ("fp32", "fp16"):
        raise ValueError(
            f"precision {settings.precision!r}: a phone runs fp32 or fp16; upload a quantized .tflite to run int8"
        )
    caps = device.capabilities
    if caps is not None:
        caps.check(settings)
    return settings.delegate or tool_run.DEFAULT_DELEGATE, tuple(sorted(set(settings.cores)))


def _cluster_name(device: DeviceInfo, cores: tuple[int, ...]) -> str | None:
    for c in device.hardware.get("cpu_clusters", []):
        if tuple(c.get("cores", ())) == cores:
            return str(c.get("name"))
    return None


class _Cooldown:
    """Wait until the phone is cool enough, reporting as it waits."""

    def __init__(self, threshold_c: float, max_s: float) -> None:
        self.threshold_c = threshold_c
        self.max_s = max_s

    def wait(
        self, link: adb.PhoneLink, cores: tuple[int, ...], h: Harness
    ) -> tuple[CooldownRecord, phone_state.Snapshot]:
        t0 = time.monotonic()
        snap = phone_state.snapshot(link, cores)
        first = snap.watched_c()
        while (hot := snap.watched_c()) is not None and hot > self.threshold_c:
            waited = time.monotonic() - t0
            if waited >= self.max_s:
                break
            h.report(0.06, f"cooling down: {hot:.1f} °C > {self.threshold_c:.0f} °C ({waited:.0f}/{self.max_s:.0f} s)")
            time.sleep(min(COOLDOWN_POLL_S, self.max_s - waited))
            snap = phone_state.snapshot(link, cores)
        end = snap.watched_c()
        record: CooldownRecord = {
            "threshold_c": self.threshold_c,
            "max_s": self.max_s,
            "waited_s": round(time.monotonic() - t0, 2),
            "start_c": first,
            "end_c": end,
            "reached": end is None or end <= self.threshold_c,
        }
        return record, snap


FREQUENCY_SAMPLE_S = 1.0  # how often the used cores' frequencies are read while the tool runs


class _FrequencySampler:
    """The used cores' current frequencies, read every ``FREQUENCY_SAMPLE_S`` while the tool runs
    (from the stream's ticks): a phone that throttles by lowering ``scaling_cur_freq`` under load,
    its cap untouched, shows it only then; idle before and after, every core may sit low."""

    def __init__(self, link: adb.PhoneLink, cores: tuple[int, ...]) -> None:
        self.link = link
        self.cores = cores
        self.samples: list[phone_state.FrequencySample] = []
        self.last = time.monotonic()  # the first sample a period in: the tool is loading its model

    def tick(self) -> None:
        if time.monotonic() - self.last < FREQUENCY_SAMPLE_S:
            return
        self.last = time.monotonic()
        self.samples.append(phone_state.frequency_sample(self.link, self.cores))


class _RunProgress:
    """Progress while the tool runs: by the phases its output shows, and creeping with time."""

    def __init__(self, h: Harness, sampler: _FrequencySampler | None = None) -> None:
        self.h = h
        self.t0 = time.monotonic()
        self.text = ""
        self.counts = 0
        self.sampler = sampler

    def output(self, text: str) -> None:
        self.text += text
        self.counts = self.text.count("count=")
        self.tick()

    def tick(self) -> None:
        if self.sampler is not None:
            self.sampler.tick()
        # the tool prints "count=" after warm-up and after the timed runs
        phase = {0: 0.15, 1: 0.4}.get(self.counts, 0.85)
        elapsed = time.monotonic() - self.t0
        creep = 0.2 * (1.0 - math.exp(-elapsed / 60.0))
        self.h.report(min(0.9, phase + creep), f"benchmark_model running ({elapsed:.0f} s)")


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000.0


def profile(
    device: DeviceInfo,
    graph: Graph,
    settings: ProfileSettings,
    progress: ProgressFn | None = None,
    model_file: ModelFile | None = None,
) -> ProfileResult:
    """Measure a model on a phone with benchmark_model (see the module for the steps)."""
    delegate, cores = _check(device, settings)
    serial = str(device.hardware.get("serial") or device.identity.split(":", 1)[-1])
    h = Harness(progress)
    tool = _tool_bytes()
    h.report(0.0, "preparing the model")
    data, nodes, model_format = _model_bytes(graph, settings, model_file)
    link = adb.PhoneLink(adb.client(), serial)
    link.check_ready()
    with _gone_when_unlisted(link):
        return _profile_on(link, device, graph, settings, h, tool, data, nodes, model_format, delegate, cores)


@contextmanager
def _gone_when_unlisted(link: adb.PhoneLink) -> Iterator[None]:
    """A ``DeviceLost`` of one exchange (a stream cut short) says ``gone`` when adb no longer lists
    the phone as ``device``: the worker then takes it offline at once, and the job's next attempt
    goes to an equivalent phone instead of failing at once on this one before the tracker's next
    look at the adb list (issue 34 item 4)."""
    try:
        yield
    except DeviceLost as e:
        if e.gone:
            raise
        try:
            state = link.state()
        except DeviceLost:
            state = "unknown"
        if state in ("device", "unknown"):
            raise
        raise DeviceLost(f"{e} (adb now lists it: {adb.state_reason(state)})", gone=True) from e


def _profile_on(
    link: adb.PhoneLink,
    device: DeviceInfo,
    graph: Graph,
    settings: ProfileSettings,
    h: Harness,
    tool: bytes,
    data: bytes,
    nodes: list[ModelNode],
    model_format: str,
    delegate: str,
    cores: tuple[int, ...],
) -> ProfileResult:
    """``profile``'s steps once the phone is known to be ready."""
    serial = link.serial
    h.report(0.02, "pushing benchmark_model and the model")
    link.run(f"mkdir -p {tool_run.REMOTE_DIR}/models")
    ensure_file(link, tool, tool_run.REMOTE_TOOL, 0o755)
    model_path = _model_path(data)
    ensure_file(link, data, model_path, 0o644)
    used = cores or tuple(int(c) for c in (device.capabilities.cores if device.capabilities else ()))
    cooldown = _Cooldown(
        settings.cooldown_c if settings.cooldown_c is not None else DEFAULT_COOLDOWN_C,
        settings.cooldown_max_s if settings.cooldown_max_s is not None else DEFAULT_COOLDOWN_MAX_S,
    )
    h.report(0.05, "reading temperatures")
    cool, before = cooldown.wait(link, used, h)
    load = phone_state.load_average(link)
    csv_path = f"{tool_run.REMOTE_DIR}/op_profile_{os.getpid()}_{int(time.time() * 1000)}.csv"
    cmd = tool_run.command_line(
        model_path,
        csv_path,
        delegate=delegate,
        threads=settings.threads,
        warmup_runs=settings.warmup_runs,
        runs=settings.runs,
        precision=settings.precision,
        cores=cores,
    )
    link.run(f"rm -f {csv_path}")
    h.report(0.1, "benchmark_model starting")
    sampler = _FrequencySampler(link, used)
    run_progress = _RunProgress(h, sampler)
    timeout = RUN_TIMEOUT_BASE_S + RUN_TIMEOUT_PER_RUN_S * (settings.runs + settings.warmup_runs)
    out = link.stream(cmd.command, run_progress.output, run_progress.tick, timeout)
    tool_run.check_exit(out, serial, graph.name)
    h.report(0.92, "reading the operator profile")
    csv_text = link.read_bytes(csv_path).decode("utf-8", "replace") if link.exists(csv_path) else ""
    link.run(f"rm -f {csv_path}")
    try:
        profiled = parse_summary(out.text)
        op_profile = parse_op_profile(csv_text if csv_text else out.text)
    except BenchmarkOutputError as e:
        raise BackendError(f"benchmark_model on phone {serial} printed output we cannot read: {e}") from None
    rows, notes = op_timings(graph, nodes, op_profile, _e2e(profiled, serial).n)
    summary = profiled
    if _times_a_profiled_pass(op_profile):
        h.report(0.93, "benchmark_model again without op profiling, for the end-to-end time")
        summary = _unprofiled_run(link, model_path, delegate, settings, cores, serial, graph.name)
    e2e = _e2e(summary, serial)
    no_warmup = settings.warmup_runs == 0 and not summary.first_inference_us
    cold_starts = _cold_starts(link, model_path, delegate, settings, cores, serial, graph.name, h)
    after = phone_state.snapshot(link, used)
    all_busy = bool(cores) and settings.threads >= len(cores)
    # Under the GPU or NNAPI delegate the CPU threads mostly wait for the accelerator, and their
    # cores may sit low by right: the samples are recorded, not judged.
    judged = delegate in ("cpu", "xnnpack")
    during = phone_state.throttled_during(sampler.samples, before.max_khz, all_busy) if judged else []
    flags = _flags(cool, before, after, used, during)
    if cores and settings.threads > len(cores):
        # accepted (the tool runs), but its threads take turns on fewer cores than they are
        flags.append(
            f"oversubscribed: {settings.threads} threads pinned to {len(cores)} core"
            f"{'s' if len(cores) > 1 else ''} ({', '.join(f'cpu{c}' for c in cores)}): they take turns, so the "
            f"time is not that of {settings.threads} threads in parallel"
        )
        log.warning("phone %s: %s", serial, flags[-1])
    memory = summary.memory
    env: ProfileEnvironment = {
        "runtime": RUNTIME,
        "tool_sha256": _sha256(tool),
        "tool_version": op_profile.version.value,
        "op_profile_mode": op_profile.mode.value,
        "model_format": model_format,
        "model_sha256": _sha256(data),
        "delegate": delegate,
        "threads": settings.threads,
        "cores": list(cores),
        "cluster": _cluster_name(device, cores) if cores else None,
        "taskset_mask": cmd.mask,
        "command": cmd.command,
        "serial": serial,
        "temperatures_before_c": before.temperatures_c,
        "temperatures_after_c": after.temperatures_c,
        "cooldown": cool,
        "governors": before.governors,
        "frequencies_khz_before": before.cur_khz,
        "frequencies_khz_after": after.cur_khz,
        "max_frequencies_khz": before.max_khz,
        "frequency_caps_khz_after": after.cap_khz,
        "frequencies_khz_during": phone_state.summarize_samples(sampler.samples),
        "cooling_devices_before": {k: list(v) for k, v in before.cooling.items()},
        "cooling_devices_after": {k: list(v) for k, v in after.cooling.items()},
        "thermal_status_before": before.thermal_status,
        "thermal_status_after": after.thermal_status,
        "machine_load": _phone_load(load, device, used),
        "screen_on": before.screen_on,
        "charging": before.charging,
        "battery_level": before.battery_level,
        "memory_mb": {
            "init": memory.init_mb if memory else None,
            "overall": memory.overall_mb if memory else None,
            "peak": memory.peak_mb if memory else None,
        },
        "init_ms": summary.init_ms if summary.init_ms is not None else summary.init_us / 1000.0,
        # with warmup_runs=0 the tool prints "First inference: 0" (its first warm-up run, which
        # never ran) and a warm-up mean of nothing: not measured, not 0 ms
        "first_inference_ms": None if no_warmup else summary.first_inference_us / 1000.0,
        "warmup_avg_ms": None if no_warmup else summary.warmup_avg_us / 1000.0,
        "e2e_source": "benchmark_model's count= line (aggregates, no per-run samples: the median where the "
        "tool prints one, never a p90)"
        + (
            ", of a second run without op profiling (with it, the GPU delegate's every invocation also "
            f"runs a profiled pass of its kernels: that run's mean was {_e2e(profiled, serial).mean:.3f} ms)"
            if summary is not profiled
            else ""
        ),
        "e2e_p5_ms": _ms(summary.inference.p5_us) if summary.inference else None,
        "e2e_p95_ms": _ms(summary.inference.p95_us) if summary.inference else None,
        "op_rows": notes["op_rows"],
        "op_rows_builtin": notes["op_rows_builtin"],
        "op_rows_delegate_per_op": notes["op_rows_delegate_per_op"],
        "op_rows_delegate_partition": notes["op_rows_delegate_partition"],
        "op_rows_unmatched": notes["op_rows_unmatched"],
        "op_rows_shared_by_several_operators": notes["op_rows_shared_by_several_operators"],
    }
    h.done()
    return ProfileResult(
        device=device,
        settings=settings,
        e2e=e2e,
        samples_ms=[],
        cold=_cold(summary, cold_starts, no_warmup),
        ops=rows,
        environment=env,
        peak_memory_mb=memory.peak_mb if memory and memory.peak_mb is not None else None,
        flags=flags,
        cold_starts=cold_starts,
    )


def _cold_starts(
    link: adb.PhoneLink,
    model_path: str,
    delegate: str,
    settings: ProfileSettings,
    cores: tuple[int, ...],
    serial: str,
    model: str,
    h: Harness,
) -> ColdStarts | None:
    """``settings.cold_runs`` cold starts, each a new ``benchmark_model`` process on the phone (a
    fresh interpreter, delegate and allocation): its ``Init`` and its first inference. None when
    one is asked for (the profile's own run is that one), unless the run had no warm-up: its
    "First inference: 0" times nothing, so one fresh process measures the cold start."""
    count = settings.cold_runs if settings.cold_runs > 1 else 1 if settings.warmup_runs == 0 else 0
    if count == 0:
        return None
    cmd = tool_run.command_line(
        model_path,
        "",
        delegate=delegate,
        threads=settings.threads,
        warmup_runs=1,
        runs=1,
        precision=settings.precision,
        cores=cores,
        op_profiling=False,
    )
    meter = h.meter(0.95, 0.99, count)
    samples = []
    for i in range(count):
        out = link.stream(cmd.command, lambda _text: None, lambda: None, RUN_TIMEOUT_BASE_S)
        tool_run.check_exit(out, serial, model)
        try:
            summary = parse_summary(out.text)
        except BenchmarkOutputError as e:
            raise BackendError(
                f"benchmark_model on phone {serial}, cold start {i + 1}: printed output we cannot read: {e}"
            ) from None
        samples.append(ColdSample(summary.init_us / 1000.0, summary.first_inference_us / 1000.0))
        meter.step(f"cold start {i + 1}/{count} (fresh benchmark_model process)")
    return ColdStarts(FRESH_PROCESS, samples)


def _cold(summary: RunSummary, cold_starts: ColdStarts | None, no_warmup: bool) -> ColdStart:
    """The run's own init and first inference; without a warm-up (nothing timed as the first
    inference), the fresh process's."""
    if no_warmup and cold_starts is not None:
        first = cold_starts.samples[0]
        return ColdStart(load_ms=first.load_ms, first_run_ms=first.first_run_ms)
    return ColdStart(load_ms=summary.init_us / 1000.0, first_run_ms=summary.first_inference_us / 1000.0)


def _times_a_profiled_pass(profile: OperatorProfile) -> bool:
    """Whether the op profile has the GPU delegate's per-dispatch rows: with op profiling on, that
    delegate runs a profiled pass of every kernel in each invocation before the regular one
    (``delegates/gpu/cl/api.cc``), so the same run's end-to-end time counts both."""
    return any(gpu_dispatch_nodes(row.node_type) is not None for row in profile.rows)


def _unprofiled_run(
    link: adb.PhoneLink,
    model_path: str,
    delegate: str,
    settings: ProfileSettings,
    cores: tuple[int, ...],
    serial: str,
    model: str,
) -> RunSummary:
    """The same runs again without op profiling: the end-to-end time of the model alone."""
    cmd = tool_run.command_line(
        model_path,
        "",
        delegate=delegate,
        threads=settings.threads,
        warmup_runs=settings.warmup_runs,
        runs=settings.runs,
        precision=settings.precision,
        cores=cores,
        op_profiling=False,
    )
    timeout = RUN_TIMEOUT_BASE_S + RUN_TIMEOUT_PER_RUN_S * (settings.runs + settings.warmup_runs)
    out = link.stream(cmd.command, lambda _text: None, lambda: None, timeout)
    tool_run.check_exit(out, serial, model)
    try:
        return parse_summary(out.text)
    except BenchmarkOutputError as e:
        raise BackendError(
            f"benchmark_model on phone {serial}, run without op profiling: printed output we cannot read: {e}"
        ) from None


def _phone_load(
    load: tuple[float, float, float] | None, device: DeviceInfo, cores: tuple[int, ...]
) -> MachineLoadRecord | None:
    """What the job page shows beside the CV: the phone's own load average when the run began."""
    if load is None:
        return None
    online = len(device.capabilities.cores) if device.capabilities and device.capabilities.cores else len(cores)
    return {
        "load_average": list(load),
        "cores_online": online,
        "cores_watched": list(cores),
        "summary": f"the phone's load average {load[0]:.2f} (1 min) on {online} cores, from /proc/loadavg",
    }


def _e2e(summary: RunSummary, serial: str) -> SampleStats:
    """The timed runs' statistics from the tool's ``count=`` line (ms): n, mean, std, min, max, and
    the median where the tool prints one (LiteRT); p90 is never printed."""
    stats = summary.inference
    if stats is None or stats.count < 1:
        raise BackendError(f"benchmark_model on phone {serial} reported no timed runs")
    if stats.all_same and stats.avg_us is None and stats.curr_us is not None:  # "curr=X(all same)"
        same = stats.curr_us / 1000.0
        return replace(from_aggregate(stats.count, same, 0.0, same, same), median=same)
    if stats.avg_us is None:
        raise BackendError(f"benchmark_model on phone {serial} printed a count= line without avg=")
    e2e = from_aggregate(stats.count, stats.avg_us / 1000.0, _ms(stats.std_us), _ms(stats.min_us), _ms(stats.max_us))
    return replace(e2e, median=stats.median_us / 1000.0) if stats.median_us is not None else e2e


def _flags(
    cool: CooldownRecord,
    before: phone_state.Snapshot,
    after: phone_state.Snapshot,
    cores: tuple[int, ...],
    during: list[str] | None = None,
) -> list[str]:
    """Why a measurement should not be trusted as is: measured hot, or on throttled cores."""
    flags = []
    limit = cool["threshold_c"]
    start, end = before.watched_c(), after.watched_c()
    if start is not None and start > limit:
        flags.append(f"hot: {start:.1f} °C at start > {limit:.0f} °C after waiting {cool['waited_s']:.0f} s")
    if end is not None and end > limit:
        flags.append(f"hot: {end:.1f} °C at the end > {limit:.0f} °C")
    capped = list(dict.fromkeys([*before.throttled(cores), *(during or []), *after.throttled(cores)]))
    if capped:
        flags.append("throttled: " + "; ".join(capped))
    return flags


PREPARATION_START = 0.95  # of a job's progress, when the phone times the photo's preparation
PHONE_PREPARATION_NOTE = (
    "the JPEG's decode + resize + crop + normalize were measured on the phone with TensorFlow Lite's ImageNet "
    "evaluation tool; the PNG's (the tool reads JPEG only) and post-processing on the worker's machine. Model "
    "load and inference are the phone's."
)


def phone_preparation(
    device: DeviceInfo,
    graph: Graph,
    settings: ProfileSettings,
    model_file: ModelFile | None,
    breakdown: TimeBreakdown,
) -> TimeBreakdown:
    """``breakdown`` with its JPEG pipeline's preparation measured on the phone. A tool that fails
    leaves the worker's measurement in place and says why; a lost phone raises ``DeviceLost``."""
    from devicelab.measure.photos import phone_photos

    _, cores = _check(device, settings)
    serial = str(device.hardware.get("serial") or device.identity.split(":", 1)[-1])
    assert breakdown.input is not None
    data, _, _ = _model_bytes(graph, settings, model_file)
    jpeg = next(p for p in phone_photos() if p.format == "jpeg")
    classes = math.prod(breakdown.input.output_shape[1:]) or 1
    link = adb.PhoneLink(adb.client(), serial)
    link.check_ready()
    try:
        stage, record = image_eval.measure_preparation(
            link,
            _model_path(data),
            jpeg,
            classes,
            min(max(breakdown.runs, 1), image_eval.MAX_IMAGES),
            settings.threads,
            cores,
        )
    except BackendError as e:
        log.warning("phone %s: photo preparation not measured on the phone: %s", serial, e)
        env = {**breakdown.environment, "phone_preparation_error": str(e)}
        note = f"{breakdown.note} The phone's ImageNet evaluation tool failed, so the worker's are shown: {e}"
        return replace(breakdown, environment=env, note=note)
    env = {**breakdown.environment, "phone_preparation": record}
    return replace(breakdown.with_device_preparation("jpeg", stage, PHONE_PREPARATION_NOTE), environment=env)


class AndroidBackend(Backend):
    """Phones on the adb server, through TensorFlow Lite's benchmark_model."""

    kind = KIND
    remote_device = True

    def discover(self) -> list[DeviceInfo]:
        """The ready phones on the adb server, described."""
        return discover()

    def absent(self, device: DeviceInfo) -> str | None:
        """Why the phone cannot be used now (its adb state is not ``device``), or None."""
        return absent_reason(device)

    def profile(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        progress: ProgressFn | None = None,
        model_file: ModelFile | None = None,
    ) -> ProfileResult:
        """Measure a model on a phone (see the module)."""
        return profile(device, graph, settings, progress, model_file)

    def profile_job(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        progress: ProgressFn | None = None,
        model_file: ModelFile | None = None,
    ) -> ProfileResult:
        """The profile and its time breakdown (``Backend.profile_job``); where the lab configured
        TensorFlow Lite's ImageNet evaluation tool, the JPEG's preparation is then measured on the
        phone (``image_eval``) in place of the worker's."""
        if image_eval.configured_tool() is None or progress is None or not settings.breakdown:
            result = super().profile_job(device, graph, settings, progress, model_file)
        else:
            report = progress
            result = super().profile_job(
                device, graph, settings, lambda f, m: report(PREPARATION_START * f, m), model_file
            )
            report(PREPARATION_START, "timing the photo's preparation on the phone")
        breakdown = result.breakdown
        if image_eval.configured_tool() is None or breakdown is None or not breakdown.applicable:
            return result
        result = replace(result, breakdown=phone_preparation(device, graph, settings, model_file, breakdown))
        if progress is not None:
            progress(1.0, "done")
        return result


BACKEND = AndroidBackend()

__all__ = [
    "BACKEND",
    "KIND",
    "TOOL_ENV",
    "AndroidBackend",
    "capabilities",
    "configured_tool",
    "describe_serial",
    "device_info",
    "discover",
    "ensure_file",
    "waiting_info",
    "identity_of",
    "profile",
]
